"""The one seam through which code below the Tensor layer makes tensors.

`Tensor` (`_tensor.py`) and the creation functions (`_creation.py`) sit above the
dispatcher, the generated operators, `TensorImpl`, the autograd package and the `cuda`
device state: they import those at module level. Yet the modules down there must
make tensors too (the autograd engine seeds a gradient with `ones_like`, a saved
variable unpacks into a Tensor, the Meta backend allocates its outputs), and a
module-level import of `_tensor` or `_creation` from them would close an import
cycle. They reach up through this module instead, which imports the Tensor layer
once, on first use:

    from tensorplay import _tensor_factory as factory   # at module level: imports nothing
    ...
    factory.wrap(impl)             # a Tensor around a TensorImpl
    factory.zeros_like(grad)       # tp.zeros_like; every name in CREATION below

The first attribute read runs `__getattr__` (a module-level `__getattr__`, PEP 562),
which imports `_tensor` and `_creation` and copies the names below into this module;
from then on they are ordinary module attributes and cost nothing extra. (So import
the module, never a name from it: `from tensorplay._tensor_factory import wrap` at
module level would load the Tensor layer right there.)

`tests/test_layering.py` keeps the imports honest: module-level imports form no
cycle, and the few upward function-local imports left (this module's among them)
are listed there with their reasons.
"""
from __future__ import annotations

TENSOR = ("Tensor", "wrap")
CREATION = ("empty", "empty_strided", "from_numpy", "full", "ones", "ones_like",
            "scalar_tensor", "tensor", "wrapped_scalar", "zeros", "zeros_like")


def __getattr__(name):
    if name not in TENSOR and name not in CREATION:
        raise AttributeError(f"module 'tensorplay._tensor_factory' has no attribute "
                             f"'{name}' (it offers {', '.join(TENSOR + CREATION)})")
    from tensorplay import _creation, _tensor     # the upward import, once
    for n in TENSOR:
        globals()[n] = getattr(_tensor, n)
    for n in CREATION:
        globals()[n] = getattr(_creation, n)
    return globals()[name]
