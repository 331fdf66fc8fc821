"""Backward helpers for the shape ops that copy (cat, roll, repeat,
repeat_interleave), written with TensorPlay ops so they can be differentiated again."""
from __future__ import annotations

from tensorplay import _creation
from tensorplay._frontdoor import wrap_dim
from tensorplay._generated import functional as F
from tensorplay.autograd.formulas.complex import handle_r_to_c


def cat_backward(grad, dim, sizes, dtypes):
    """Each input's slice of the gradient (a 1-D empty input, which cat skips, gets an
    empty gradient), in the input's own dtype (cat promotes; a real input beside a complex
    one gets the real part: handle_r_to_c). Only the inputs' sizes and dtypes are saved,
    not the inputs: an in-place change of one after the cat is fine."""
    d = wrap_dim("cat", "dim", dim, grad.dim())
    grads, start = [], 0
    for size, dtype in zip(sizes, dtypes):
        if tuple(size) == (0,) and grad.dim() != 1:
            grads.append(_creation.zeros(0, dtype=dtype, device=grad.device))
            continue
        n = size[d]
        grads.append(handle_r_to_c(dtype, grad.narrow(d, start, n)).to(dtype))
        start += n
    return grads


def roll_backward(grad, shifts, dims):
    return grad.roll([-s for s in shifts], dims)


def repeat_backward(grad, repeats, sizes):
    """Sum the copies: view the gradient as [r0, s0, r1, s1, ...] and sum the r dims."""
    padded = (1,) * (len(repeats) - len(sizes)) + tuple(sizes)
    interleaved = []
    for r, s in zip(repeats, padded):
        interleaved += [r, s]
    g = grad.reshape(interleaved)
    if interleaved:
        g = F.sum(g, list(range(0, len(interleaved), 2)))
    return g.reshape(sizes)


def repeat_interleave_int_backward(grad, sizes, repeats, dim):
    """Each element was copied `repeats` times in a row: [.., n * r, ..] -> [.., n, r, ..]."""
    if dim is None or len(sizes) == 0:
        return F.sum(grad.reshape([-1, repeats]), [1]).reshape(tuple(sizes))
    d = wrap_dim("repeat_interleave", "dim", dim, len(sizes))
    shape = list(sizes)
    g = grad.reshape(shape[:d] + [shape[d], repeats] + shape[d + 1:])
    return F.sum(g, [d + 1])
