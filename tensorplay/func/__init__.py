"""tensorplay.func: function transforms, as torch.func.

Where to start reading:

    transforms.py       grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian
    grad_levels.py      how nested transforms keep their inputs apart on one autograd graph
    trees.py            nests of tuples, lists and dicts, flattened and rebuilt
    functional_call.py  run a Module with other parameters and buffers; stack_module_state
    batch_norm_replacement.py  replace_all_batch_norm_modules_ (BatchNorm without running stats)

    vmap.py             vmap, and the batching kernel at the Vmap dispatch keys
    batched.py          BatchedTensor: a batch seen as one example
    batching_rules/     the rule registry (RULES, filled from ops.yaml's `vmap:`), the
                        rule families many ops share (__init__.py: pointwise, dim, fold),
                        and one module per op family (pooling.py... as in
                        tensorplay/codegen/families.py); random.py obeys `randomness`
    fallback.py         the per-example loop for ops without a rule
    batched_grad.py     tp.autograd.grad of batched tensors (per-example gradients)
    autograd_function.py  a custom autograd.Function under vmap (generate_vmap_rule, vmap)
"""
from tensorplay.func.transforms import (  # noqa: F401
    grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, linearize,
)
from tensorplay.func.functional_call import functional_call, stack_module_state  # noqa: F401
from tensorplay.func.batch_norm_replacement import replace_all_batch_norm_modules_  # noqa: F401
from tensorplay.func.vmap import vmap  # noqa: F401
from tensorplay.func.fallback import fallback_ops  # noqa: F401
from tensorplay.func.batched import BatchedTensor, VmapError  # noqa: F401
import sys as _sys

from tensorplay.func import batched_grad as _batched_grad
from tensorplay.func import autograd_function as _function_under_vmap
from tensorplay.autograd import engine as _engine
from tensorplay.autograd import function as _function
from tensorplay.autograd import gradcheck as _gradcheck_function  # noqa: F401 (loads it)

# tp.autograd.grad of batched tensors takes the per-example path of batched_grad.py; the
# engine sits below vmap and does not import it, so vmap's package hands it over here,
# and hands gradcheck vmap itself (check_batched_grad runs backward under it).
_engine.batched_grad = _batched_grad.batched_grad
# ... and hands forward mode the BatchedTensor module (a dual tensor under vmap keeps its
# tangent on the physical tensor), and autograd.functional the forward-mode Jacobians.
from tensorplay.autograd import forward_ad as _forward_ad, functional as _functional  # noqa: E402
from tensorplay.func import batched as _batched, transforms as _transforms  # noqa: E402
_forward_ad.batched = _batched
_functional.func_transforms = _transforms
_engine.grads_batched = _batched_grad.grads_batched
# A custom autograd.Function called with batched tensors runs on the physical ones.
_function.vmap_apply = _function_under_vmap.apply_under_vmap
# (the module, from sys.modules: tensorplay.autograd's `gradcheck` is the function)
_sys.modules["tensorplay.autograd.gradcheck"].vmap = vmap

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize",
           "functional_call", "stack_module_state", "replace_all_batch_norm_modules_",
           "vmap", "fallback_ops", "BatchedTensor", "VmapError"]
