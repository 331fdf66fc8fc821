"""Function transforms (torch.func style): `vmap` and its batching machinery.

    vmap.py                  the transform and the batching kernel at the Vmap keys
    batched.py               BatchedTensor: a batch seen as one example
    batching_rules*.py       how each op runs on a batch (one registry, RULES)
    fallback.py              the per-example loop for ops without a rule
    batched_grad.py          tp.autograd.grad on batched tensors (per-example gradients)
"""
from tensorplay.func.vmap import vmap
from tensorplay.func.fallback import fallback_ops
from tensorplay.func.batched import BatchedTensor, VmapError

__all__ = ["vmap", "fallback_ops", "BatchedTensor", "VmapError"]
