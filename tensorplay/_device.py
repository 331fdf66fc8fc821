"""Devices: where a tensor's bytes live, and therefore which backend key serves it."""
from __future__ import annotations

from tensorplay.dispatch.keys import DispatchKey

_KEYS = {"cpu": DispatchKey.CPU, "cuda": DispatchKey.CUDA, "meta": DispatchKey.Meta}


class device:
    """`tp.device("cpu")`, `tp.device("cuda:0")`, `tp.device("meta")` (shapes only, no data)."""

    __slots__ = ("type", "index", "key")

    def __new__(cls, spec, index=None):
        if isinstance(spec, device):
            return spec
        if not isinstance(spec, str):
            raise TypeError(f"device(): expected a string like 'cpu' or 'cuda:0', got "
                            f"{type(spec).__name__}")
        kind, _, idx = spec.partition(":")
        if kind not in _KEYS:
            raise RuntimeError(f"device(): unknown device type '{kind}'; expected one of "
                               + ", ".join(_KEYS))
        if idx:
            if not idx.isdigit():
                raise RuntimeError(f"device(): invalid device index in '{spec}'")
            index = int(idx)
        if kind == "cuda" and index is None:
            index = 0
        return _intern(kind, index)

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and other.type == self.type and other.index == self.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (str(self),))

    def __enter__(self):
        """`with tp.device("meta"): model = Net()`: inside the block, factory functions given
        no `device=` allocate here (PyTorch's form; it builds on meta a model whose
        constructor takes no `device=`)."""
        _outer_defaults.append(_default_device)
        set_default_device(self)
        return self

    def __exit__(self, *exc_info):
        set_default_device(_outer_defaults.pop())
        return False


_INTERNED = {}


def _intern(kind, index):
    """Devices are interned so the hot path can compare them with `is`."""
    d = _INTERNED.get((kind, index))
    if d is None:
        d = object.__new__(device)
        d.type = kind
        d.index = index
        d.key = _KEYS[kind]
        _INTERNED[(kind, index)] = d
    return d


CPU = device("cpu")


def as_device(spec):
    """Accept None (CPU), a string, or a device."""
    if spec is None:
        return CPU
    if type(spec) is device:
        return spec
    return device(spec)


# ---- the device factory functions use when given none -----------------------------------
_default_device = CPU
_outer_defaults = []     # the defaults that enclosing `with tp.device(...)` blocks replaced


def set_default_device(device):
    """The device `tp.zeros(3)`, `tp.tensor(...)`, `tp.randn(...)` and the other factory
    functions allocate on when their `device=` is None (None sets the CPU again)."""
    global _default_device
    _default_device = CPU if device is None else as_device(device)


def get_default_device():
    return _default_device


def factory_device(spec):
    """A factory function's `device=` argument: None means the default device."""
    return _default_device if spec is None else as_device(spec)
