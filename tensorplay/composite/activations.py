"""Activations that PyTorch defines by other ops. With no derivatives.yaml entry, their
gradients come from the ops they call (composite-implicit autograd)."""
from __future__ import annotations

from tensorplay._frontdoor import wrap_dim
from tensorplay._generated import functional as F
from tensorplay.errors import DimError, DTypeError, ShapeError, fmt_shape
from tensorplay.meta import activations as rules
from tensorplay.meta.pointwise import unary_floating

# selu's constants (Klambauer et al., 2017): the fixed point of mean 0, variance 1.
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def relu6(self):
    return F.hardtanh(self, 0, 6)


def selu(self):
    unary_floating("selu", (self,))   # errors name the op called, not the one it uses
    return F.elu(self, SELU_ALPHA, SELU_SCALE)


def selu_(self):
    unary_floating("selu_", (self,))
    return F.elu_(self, SELU_ALPHA, SELU_SCALE)


def celu(self, alpha):
    """elu with input_scale = 1 / alpha: continuously differentiable at 0 for every alpha."""
    unary_floating("celu", (self,))
    return F.elu(self, alpha, 1, 1 / alpha)


def celu_(self, alpha):
    unary_floating("celu_", (self,))
    return F.elu_(self, alpha, 1, 1 / alpha)


def hardshrink(self, lambd):
    """0 where -lambd <= x <= lambd, else x (NaN stays NaN: it is in no interval)."""
    unary_floating("hardshrink", (self,))
    inside = (self >= -lambd).logical_and(self <= lambd)
    return F.where(inside.logical_not(), self, 0.0)


def softsign(self):
    return self / (F.abs(self) + 1)


def glu(self, dim):
    """The first half of self along dim, gated by the sigmoid of the second half."""
    sizes = self._impl.sizes
    if not sizes:
        raise DimError("glu(): argument 'self' is 0-dim; glu halves a dimension and needs at "
                       "least one", op="glu", arg="self")
    d = wrap_dim("glu", "dim", dim, len(sizes))
    if sizes[d] % 2:
        raise ShapeError(f"glu(): halving dimension must be even, but dimension {d} (argument "
                         f"'dim' is {dim}) of 'self' (shape {fmt_shape(sizes)}) is size "
                         f"{sizes[d]}",
                         op="glu", arg="dim")
    half = sizes[d] // 2
    return F.narrow(self, d, 0, half) * F.sigmoid(F.narrow(self, d, half, half))


def prelu(self, weight):
    """self where self > 0, weight * self elsewhere; weight has one value per channel
    (dim 1 of self, or its only dim) or a single value shared by all."""
    sizes = self._impl.sizes
    n = weight._impl.numel()
    if weight._impl.dtype is not self._impl.dtype:
        raise DTypeError(f"prelu(): argument 'weight' must have the dtype of 'self' "
                         f"({self._impl.dtype.name}), but got {weight._impl.dtype.name}",
                         op="prelu", arg="weight")
    if len(weight._impl.sizes) > 1:
        raise ShapeError(f"prelu(): argument 'weight' must be 0-D or 1-D, but got shape "
                         f"{fmt_shape(weight._impl.sizes)}", op="prelu", arg="weight")
    channels = sizes[1] if len(sizes) >= 2 else 1   # below 2-D there is one channel
    if n != 1 and n != channels:
        raise ShapeError(f"prelu(): argument 'weight' has {n} values, but 'self' (shape "
                         f"{fmt_shape(sizes)}) has {channels} channels; expected 1 or "
                         f"{channels}", op="prelu", arg="weight")
    if n == 1:
        w = weight.reshape([])
    else:
        shape = [1] * len(sizes)
        shape[1] = n
        w = weight.reshape(shape)
    positive = self > 0
    # NOTE: the weight multiplies only the non-positive values, so that an infinite weight
    # gives the positive values a gradient of 1 (PyTorch's), not inf * 0 = NaN.
    return F.where(positive, self, w * F.where(positive, 0, self))


def threshold_backward(grad_output, self, threshold):
    """grad_output where self > threshold (or is NaN), else 0, for a backend without a
    kernel of its own (the CPU kernel is cpu_kernels/activations.py)."""
    spec = rules.threshold_backward("threshold_backward", (grad_output, self, threshold))
    return F.where(self <= threshold, 0, grad_output.to(spec.dtype))
