"""dropout's backward: the gradient through the kept elements, scaled.

Written with TensorPlay ops only, so they can be differentiated again.
"""
from __future__ import annotations


# ---- dropout and embedding ----------------------------------------------------------
def dropout_backward(grad, mask, p, train):
    """grad * mask / (1 - p) where training (0 for p == 1); grad itself otherwise."""
    if train is False:
        return grad
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    return grad * mask * scale
