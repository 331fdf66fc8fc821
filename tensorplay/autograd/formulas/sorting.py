"""Backward helpers of cummax/cummin and of the selections (kthvalue, median, mode...).

Written with TensorPlay ops only, so they can be differentiated again.
"""
from __future__ import annotations

from tensorplay._generated import functional as F


def cummaxmin_backward(grad, self, indices, dim):
    """Each output's gradient goes to the element it copied (repeats accumulate)."""
    if self.dim() == 0:
        return grad
    return F._scatter_add_along(grad, dim, indices, self.shape)


def select_many_backward(grad, sizes, dim, indices):
    """sort/topk: route the gradient of each output back to the position it came from."""
    if len(sizes) == 0:
        return grad.reshape(())
    return F._scatter_add_along(grad, dim, indices, tuple(sizes))


# ---- tangents (forward mode) -----------------------------------------------------------
def gather_with_keepdimed_indices(self_t, dim, indices, keepdim):
    """A selection's tangent: the tangents of the selected elements (read at the
    indices the op returned; without keepdim they lack the reduced dim)."""
    if self_t.dim() == 0:
        return self_t.clone()
    if not keepdim:
        indices = indices.unsqueeze(dim)
    out = F.gather(self_t, dim, indices)
    return out if keepdim else out.squeeze(dim)
