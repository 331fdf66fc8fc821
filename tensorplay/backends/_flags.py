"""`set_flags` / `flags` for a backend module whose flags are module attributes, as
torch.backends.cudnn.set_flags(_enabled=..., ...) and `with cudnn.flags(enabled=...)`."""
from __future__ import annotations

import contextlib


def flag_setters(module, names):
    """(set_flags, flags) for `module`'s attributes `names`, in PyTorch's argument order.

    set_flags(*values) sets each value that is not None and returns the old values, in
    order; flags(**values) is a context manager that sets them and restores them after."""
    def set_flags(*values, **by_name):
        values = dict(zip(names, values))
        values.update({k.lstrip("_"): v for k, v in by_name.items()})
        old = tuple(getattr(module, name) for name in names)
        for name, value in values.items():
            if name not in names:
                raise TypeError(f"set_flags() got an unexpected keyword argument '_{name}'")
            if value is not None:
                setattr(module, name, value)
        return old

    @contextlib.contextmanager
    def flags(**values):
        old = set_flags(**values)
        try:
            yield
        finally:
            set_flags(*old)

    return set_flags, flags
