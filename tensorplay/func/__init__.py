"""Function transforms (torch.func style): `vmap` and its batching machinery.

    vmap.py                  the transform, and the batching kernel at the Vmap keys
    batched.py               BatchedTensor: a batch seen as one example
    batching_rules.py        the rule registry (RULES), the pointwise and dim families
    batching_rules_shape.py  views and shape ops
    batching_rules_nn.py     matmul family, conv and pooling, norms, losses, einsum
    batching_rules_index.py  indexing, gather/scatter, embedding
    batching_rules_random.py random ops, by vmap's `randomness` flag
    fallback.py              the per-example loop for ops without a rule
    batched_grad.py          tp.autograd.grad of batched tensors (per-example gradients)
    pytree.py                nested tuples/lists/dicts of inputs and outputs
"""
from tensorplay.func.vmap import vmap
from tensorplay.func.fallback import fallback_ops
from tensorplay.func.batched import BatchedTensor, VmapError

__all__ = ["vmap", "fallback_ops", "BatchedTensor", "VmapError"]
