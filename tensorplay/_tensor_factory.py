"""The one seam through which code below the Tensor layer makes tensors.

`Tensor` (`_tensor.py`) and the creation functions (`_creation.py`) sit above the
dispatcher, the generated operators, `TensorImpl`, the autograd package and the `cuda`
device state: they import those at module level. Yet the modules down there must
make tensors too (the autograd engine seeds a gradient with `ones_like`, a saved
variable unpacks into a Tensor, the Meta backend allocates its outputs), and an
import of `_tensor` or `_creation` from them, even inside a function, would make the
two layers depend on each other. So the dependency is turned around: this module
imports nothing, and the Tensor layer *gives* it the names below when it loads, with
one call at the end of `_creation.py`:

    factory.install(Tensor=Tensor, wrap=wrap, zeros=zeros, ...)     # in _creation.py

Code below the Tensor layer imports the module and reads the names at call time:

    from tensorplay import _tensor_factory as factory   # at module level
    ...
    factory.wrap(impl)             # a Tensor around a TensorImpl
    factory.zeros_like(grad)       # tp.zeros_like; every name in CREATION below

Import the module, never a name from it (`from tensorplay._tensor_factory import
wrap` would read the name before the Tensor layer has installed it). Once installed,
they are ordinary module attributes: reading one costs what any module attribute costs.

`tests/test_layering.py` keeps the layers honest: no function-local import of `_tensor`
or `_creation` from below them, and no large circle of modules importing each other.
"""
from __future__ import annotations

TENSOR = ("Tensor", "wrap")
CREATION = ("arange", "empty", "empty_strided", "from_numpy", "full", "ones", "ones_like",
            "scalar_tensor", "tensor", "wrapped_scalar", "zeros", "zeros_like")


def install(**names):
    """Called once by the Tensor layer (`_creation.py`, as it loads): the Tensor class,
    `wrap`, and the creation functions of CREATION, by name."""
    expected = set(TENSOR + CREATION)
    if set(names) != expected:
        missing = sorted(expected - set(names))
        unknown = sorted(set(names) - expected)
        raise TypeError(f"install(): expected exactly {sorted(expected)}; missing {missing}, "
                        f"unknown {unknown}")
    globals().update(names)


def __getattr__(name):
    # Only reached for a name not installed (yet): say which, and who installs it.
    if name in TENSOR or name in CREATION:
        raise AttributeError(f"tensorplay._tensor_factory.{name} is not installed yet: the "
                             f"Tensor layer installs it when tensorplay._creation is "
                             f"imported (the first tp.* name read loads it)")
    raise AttributeError(f"module 'tensorplay._tensor_factory' has no attribute '{name}' "
                         f"(it offers {', '.join(TENSOR + CREATION)})")
