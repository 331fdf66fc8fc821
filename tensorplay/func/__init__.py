"""tensorplay.func: function transforms, as torch.func.

Where to start reading:

    transforms.py       grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian
    grad_levels.py      how nested transforms keep their inputs apart on one autograd graph
    trees.py            nests of tuples, lists and dicts, flattened and rebuilt
    functional_call.py  run a Module with other parameters and buffers

    vmap.py             vmap, and the batching kernel at the Vmap dispatch keys
    batched.py          BatchedTensor: a batch seen as one example
    batching_rules/     the rule registry (RULES, filled from ops.yaml's `vmap:`), the
                        rule families many ops share (__init__.py: pointwise, dim, fold),
                        and one module per op family (pooling.py... as in
                        tensorplay/codegen/families.py); random.py obeys `randomness`
    fallback.py         the per-example loop for ops without a rule
    batched_grad.py     tp.autograd.grad of batched tensors (per-example gradients)
"""
from tensorplay.func.transforms import (  # noqa: F401
    grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian,
)
from tensorplay.func.functional_call import functional_call  # noqa: F401
from tensorplay.func.vmap import vmap  # noqa: F401
from tensorplay.func.fallback import fallback_ops  # noqa: F401
from tensorplay.func.batched import BatchedTensor, VmapError  # noqa: F401
import sys as _sys

from tensorplay.func import batched_grad as _batched_grad
from tensorplay.autograd import engine as _engine
from tensorplay.autograd import gradcheck as _gradcheck_function  # noqa: F401 (loads it)

# tp.autograd.grad of batched tensors takes the per-example path of batched_grad.py; the
# engine sits below vmap and does not import it, so vmap's package hands it over here,
# and hands gradcheck vmap itself (check_batched_grad runs backward under it).
_engine.batched_grad = _batched_grad.batched_grad
# (the module, from sys.modules: tensorplay.autograd's `gradcheck` is the function)
_sys.modules["tensorplay.autograd.gradcheck"].vmap = vmap

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
           "functional_call", "vmap", "fallback_ops", "BatchedTensor", "VmapError"]
