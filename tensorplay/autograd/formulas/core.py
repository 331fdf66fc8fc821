"""Helpers that derivatives.yaml formulas call by name.

Each is written with TensorPlay ops only, so a backward pass built from them can
itself be differentiated (`create_graph=True` gives higher-order gradients).
"""
from __future__ import annotations

from tensorplay import _creation
from tensorplay import _dtype as dt
from tensorplay._frontdoor import wrap_dim, wrap_number
from tensorplay._generated import functional as F
from tensorplay._tensor import Tensor
from tensorplay.autograd.grad_validation import sum_to as reduce_to_sizes
from tensorplay.errors import DerivativeNotImplementedError


def sum_to(grad, sizes):
    """Reduce a broadcast gradient back to `sizes` (grad_validation.sum_to, which the
    engine also uses to fix a gradient a node returned broadcast).

        sum_to(g of shape [4, 2, 3], (2, 1)) -> g.sum([0, 2], keepdim) -> shape [2, 1]
    """
    if type(grad) is Tensor and grad._impl.sizes == sizes:
        # The usual case, a gradient of the input's shape: `grad.shape` of a plain Tensor
        # is its impl's sizes, and both are tuples (the node keeps the input's
        # `_impl.sizes`), so this is the test without two tuples and a Size.
        return grad
    return reduce_to_sizes(grad, sizes)


def maybe_multiply(grad, alpha):
    return grad if alpha == 1 else grad * alpha


def zeros_like(t):
    return _creation.zeros_like(t)


def zeros_of_info(info):
    """zeros_like(x) from x's saved (sizes, dtype, device): the codegen saves that triple
    for a formula `zeros_like(x)` instead of x (PyTorch's TypeAndSize::zeros)."""
    sizes, dtype, device = info
    return _creation.zeros(sizes, dtype=dtype, device=device)


def not_implemented(name):
    raise DerivativeNotImplementedError(f"the derivative of {name} is not implemented")


def pow_backward_self(grad, self, exponent):
    """d/dself self**e = e * self**(e-1), and 0 where e == 0 (avoids 0 * inf at self == 0)."""
    # NOTE: not `exponent - 1`: for `x ** 0.6` the exponent is a wrapped Python number, and
    # wrapped number minus Python number promotes like two Python numbers, to the default
    # dtype, so a float64 x would get a float32-rounded gradient. A clone is an ordinary
    # 0-d tensor and keeps its dtype. A bool exponent (`x ** True`) counts as 1 or 0, as
    # PyTorch's Scalar arithmetic does (bool - 1 is refused for tensors).
    if exponent.dtype is dt.bool:
        exponent = exponent.to(self.dtype)
    if exponent._impl.wrapped_number:
        # A Python-number exponent: self ** (e - 1) with e - 1 a Python number too, so the
        # kernel takes PyTorch's special exponents (-0.5 is rsqrt: NaN at -inf) as
        # PyTorch's pow_backward does. (e - 1 is exact in a Python float.)
        e = exponent.item()
        if e == 0:
            return _creation.zeros_like(grad)
        return grad * (e * self.pow(e - 1)).conj()
    # (conj: d/dz z**e = e z**(e-1) is holomorphic, so the gradient is grad times its
    # conjugate; a real tensor is its own conjugate, returned as it is)
    return F.where(exponent == 0, 0.0,
                   grad * (exponent * self.pow(exponent.clone() - 1)).conj())


def pow_scalar_backward(grad, self, exponent):
    """pow.Tensor_Scalar: the exponent wrapped as the Tensor overload's forward wraps it."""
    return pow_backward_self(grad, self, wrap_number(exponent, self))


def pow_backward_exponent(grad, self, exponent, result):
    """d/de self**e = self**e * log(self), taken as 0 where self == 0 and e >= 0 (for a
    complex e: e real and >= 0). With a complex result a real self's log is taken as a
    complex number (log(-2) = log(2) + i pi), as PyTorch promotes self first."""
    if exponent.dtype.is_complex:
        real_nonnegative = F.logical_and(F.imag(exponent) == 0, F.real(exponent) >= 0)
        cond = F.logical_and(self == 0, real_nonnegative)
    else:
        cond = (self == 0) * (exponent >= 0)
    if result.dtype.is_complex and not self.dtype.is_complex:
        self = self.to(result.dtype)
    return grad * F.where(cond, 0.0, (result * F.log(F.where(cond, 1.0, self))).conj())


def xlogy_self_backward(grad, self, other):
    """d/dself xlogy(self, other) = log(other), with 0 where self == 0 and other <= 0.
    PyTorch's formula, xlogy(grad, other) masked: a zero grad gives 0 even where log(other)
    is NaN (other < 0 or -inf, say a NaN result masked by a later clamp), where
    grad * log(other) would give 0 * NaN = NaN; and the log runs in the promoted dtype
    (a float16 other with a float32 grad takes its log in float32)."""
    cond = (self == 0) * (other <= 0)
    return F.where(cond, 0.0, F.xlogy(grad, other))


def _unsqueeze_reduced(grad, ndim, dims, keepdim):
    if dims is None or len(dims) == 0:
        dims = range(ndim)
    if keepdim:
        return grad
    for d in sorted(wrap_dim("sum", "dim", d, ndim) for d in dims):
        grad = grad.unsqueeze(d)
    return grad


def sum_backward(grad, sizes, dims, keepdim):
    if len(sizes) == 0:   # a 0-dim input: dim 0/-1 "reduces" nothing
        return grad.reshape(sizes)
    return _unsqueeze_reduced(grad, len(sizes), dims, keepdim).expand(sizes)


def mean_backward(grad, sizes, dims, keepdim):
    n = 1
    ndim = len(sizes)
    reduced = range(ndim) if dims is None or len(dims) == 0 else \
        {wrap_dim("mean", "dim", d, ndim) for d in dims}
    for d in reduced:
        n *= sizes[d] if sizes else 1
    return sum_backward(grad, sizes, dims, keepdim) / n


def evenly_distribute_backward(grad, self, value):
    """max()/min() without dim: the gradient is shared by every element equal to the result
    (a NaN result: by the NaN elements, as in PyTorch). The others get 0 even for a NaN
    or infinite grad on the CPU, where PyTorch writes the share into zeros (index_put);
    its cuda form is mask * share, 0 * NaN = NaN everywhere, and so is ours there."""
    mask = (self == value).logical_or(self.isnan().logical_and(value.isnan()))
    share = grad / mask.sum()
    if self.is_cuda:
        return mask * share
    return F.where(mask, share, 0)


def value_selecting_reduction_backward(grad, dim, indices, sizes, keepdim):
    """max.dim/min.dim: route each gradient to the index that was selected, using a
    one-hot mask built by comparing positions along `dim` with `indices`."""
    ndim = len(sizes)
    if ndim == 0:
        return grad
    d = wrap_dim("max", "dim", dim, ndim)
    if not keepdim:
        grad = grad.unsqueeze(d)
        indices = indices.unsqueeze(d)
    shape = [1] * ndim
    shape[d] = sizes[d]
    positions = _creation.arange(sizes[d], device=grad.device).view(shape)
    return F.where(positions == indices, grad, 0.0)


def permute_backward(grad, dims):
    ndim = len(dims)
    inverse = [0] * ndim
    for i, d in enumerate(dims):
        inverse[wrap_dim("permute", "dims", d, ndim)] = i
    return grad.permute(inverse)


# NOTE: select and step-1 slices pad the gradient with zeros instead of writing it into a
# zero tensor: out of place, so the formulas also run when `grad` is a batch of
# cotangents under vmap (jacrev, hessian), where writing a batch into one tensor fails.
def select_backward(grad, sizes, dim, index):
    d = wrap_dim("select", "dim", dim, len(sizes))
    index = index + sizes[d] if index < 0 else index
    return _pad_dim(grad.unsqueeze(d), sizes, d, index, sizes[d] - index - 1)


def unbind_backward(grads, sizes, strides, dim):
    """The gradient of unbind: its outputs' gradients stacked back along `dim`, one op.
    (Recorded as selects, each would pad its gradient to the full size and the engine
    would add them up: a full-size copy and an addition per output.) An output that got
    no gradient (None: the entry does not materialize them) contributes zeros.

    The stack is laid out in self's memory order (its dims by decreasing stride) and
    permuted back: unbind's input is often a permuted view (attention's q, k, v of one
    packed projection), and a gradient in that view's layout lets the backward of the
    view before it stay a view instead of a copy."""
    d = wrap_dim("unbind", "dim", dim, len(sizes))
    some = next(g for g in grads if g is not None)
    parts = [_creation.zeros_like(some) if g is None else g for g in grads]
    order = sorted(range(len(sizes)), key=lambda i: -strides[i])     # stable for ties
    if order == list(range(len(sizes))):
        return F.stack(parts, d)
    # each part's dims (self's without d) in memory order, stacked where d falls in it
    part_order = [i if i < d else i - 1 for i in order if i != d]
    stacked = F.stack([p.permute(part_order) for p in parts], order.index(d))
    return stacked.permute([order.index(i) for i in range(len(sizes))])


def slice_backward(grad, sizes, dim, start, end, step):
    d = wrap_dim("slice", "dim", dim, len(sizes))
    if step != 1:
        out = _creation.zeros(sizes, dtype=grad.dtype, device=grad.device)
        out.slice(dim, start, end, step).copy_(grad)
        return out
    size = sizes[d]
    lo = _clamp_index(0 if start is None else start, size)
    hi = max(lo, _clamp_index(size if end is None else end, size))
    return _pad_dim(grad, sizes, d, lo, size - hi)


def _clamp_index(i, size):
    """A slice bound as Python's slicing reads it: negative from the end, clamped."""
    if i < 0:
        i += size
    return min(max(i, 0), size)


def _pad_dim(grad, sizes, d, before, after):
    """`grad` with `before` zeros ahead of it and `after` behind it along dim d."""
    if before == 0 and after == 0:
        return grad
    pad = [0, 0] * (len(sizes) - 1 - d) + [before, after]
    return F.constant_pad_nd(grad, pad, 0)
