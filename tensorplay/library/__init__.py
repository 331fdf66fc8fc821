"""`tp.library`: registering kernels, and defining new ops without forking the framework.

Two halves, as PyTorch's torch.library:

- `Library(key, name)` blocks and the `@kernel` decorator (registration.py): how the
  backends register the kernels ops.yaml names. The backends import this package, so it
  stays light: the half below loads on first use (`__getattr__`).
- custom ops (custom_ops.py): `custom_op("mylib::f(Tensor x, float eps) -> Tensor",
  derivatives={"x": "..."})` or the decorator form `@custom_op("mylib::f",
  mutates_args=())` defines an op with the dispatcher at run time, as ops.yaml does at
  build time: callable as `tp.ops.mylib.f`, with kernels per device (`register_kernel`),
  a fake (meta) kernel, a batching rule, autocast, and a backward node compiled from
  derivative formulas by the code generator's own formula compiler (derivatives.py).
  `triton_op` / `wrap_triton` (triton.py) launch a Triton kernel inside one;
  `opcheck` (checking.py) tests one.
"""
from __future__ import annotations

import importlib

from tensorplay.library.registration import Library, ShapeRule, kernel

__all__ = ["Library", "kernel", "ShapeRule", "custom_op", "CustomOpDef", "define", "impl",
           "triton_op", "wrap_triton", "opcheck", "OpCheckError", "infer_schema",
           "register_fake", "register_kernel", "register_autograd", "register_vmap",
           "register_autocast"]

# name -> the submodule that defines it, imported on first use (it needs autograd and
# the code generator, which sit above the backends that import this package)
_LAZY = {
    "custom_op": "custom_ops", "CustomOpDef": "custom_ops", "register_fake": "custom_ops",
    "register_kernel": "custom_ops", "register_autograd": "custom_ops",
    "register_vmap": "custom_ops", "register_autocast": "custom_ops",
    "define": "custom_ops", "impl": "custom_ops",
    "infer_schema": "schema",
    "triton_op": "triton", "wrap_triton": "triton",
    "opcheck": "checking", "OpCheckError": "checking",
}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tensorplay.library' has no attribute '{name}'")
    return getattr(importlib.import_module(f"tensorplay.library.{module}"), name)


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
