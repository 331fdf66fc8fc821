"""tensorplay.func: function transforms, as torch.func.

Where to start reading:

    transforms.py       grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian
    levels.py           how nested transforms keep their inputs apart on one autograd graph
    trees.py            nests of tuples, lists and dicts, flattened and rebuilt
    functional_call.py  run a Module with other parameters and buffers
"""
from tensorplay.func.transforms import (  # noqa: F401
    grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian,
)
from tensorplay.func.functional_call import functional_call  # noqa: F401

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
           "functional_call"]

# ---- vmap (branch `vmap`: tensorplay/func/vmap.py): its imports and __all__ names go here ----
