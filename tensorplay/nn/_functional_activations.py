"""`tp.nn.functional` activations: PyTorch's signatures (`input`, `inplace=False`) over the
ops of ops.yaml (`F.elu(x, alpha, inplace=True)` is `tp.elu_(x, alpha)`)."""
from __future__ import annotations

from tensorplay._creation import empty, ones_like
from tensorplay._dtype import float64
from tensorplay._generated import functional as _ops
from tensorplay.errors import ArgumentError

__all__ = ["relu6", "leaky_relu", "elu", "selu", "celu", "gelu", "silu", "mish", "softplus",
           "softsign", "hardtanh", "hardsigmoid", "hardswish", "glu", "threshold", "prelu",
           "leaky_relu_", "elu_", "selu_", "celu_", "hardtanh_", "threshold_", "relu_", "relu",
           "tanh", "sigmoid", "logsigmoid", "softshrink", "hardshrink", "tanhshrink", "rrelu",
           "rrelu_"]


def relu6(input, inplace=False):
    """min(max(input, 0), 6)."""
    return _ops.hardtanh_(input, 0, 6) if inplace else _ops.relu6(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    fn = _ops.leaky_relu_ if inplace else _ops.leaky_relu
    return fn(input, negative_slope)


def elu(input, alpha=1.0, inplace=False):
    return _ops.elu_(input, alpha) if inplace else _ops.elu(input, alpha)


def selu(input, inplace=False):
    return _ops.selu_(input) if inplace else _ops.selu(input)


def celu(input, alpha=1.0, inplace=False):
    return _ops.celu_(input, alpha) if inplace else _ops.celu(input, alpha)


def gelu(input, approximate="none"):
    return _ops.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    return _ops.silu_(input) if inplace else _ops.silu(input)


def mish(input, inplace=False):
    return _ops.mish_(input) if inplace else _ops.mish(input)


def softplus(input, beta=1.0, threshold=20.0):
    return _ops.softplus(input, beta, threshold)


def softsign(input):
    return _ops.softsign(input)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    fn = _ops.hardtanh_ if inplace else _ops.hardtanh
    return fn(input, min_val, max_val)


def hardsigmoid(input, inplace=False):
    return _ops.hardsigmoid_(input) if inplace else _ops.hardsigmoid(input)


def hardswish(input, inplace=False):
    return _ops.hardswish_(input) if inplace else _ops.hardswish(input)


def glu(input, dim=-1):
    return _ops.glu(input, dim)


def threshold(input, threshold, value, inplace=False):
    fn = _ops.threshold_ if inplace else _ops.threshold
    return fn(input, threshold, value)


def prelu(input, weight):
    return _ops.prelu(input, weight)


leaky_relu_ = _ops.leaky_relu_
elu_ = _ops.elu_
selu_ = _ops.selu_
celu_ = _ops.celu_
hardtanh_ = _ops.hardtanh_
threshold_ = _ops.threshold_


relu_ = _ops.relu_


def relu(input, inplace=False):
    """max(input, 0)."""
    return _ops.relu_(input) if inplace else _ops.relu(input)


def tanh(input):
    return _ops.tanh(input)


def sigmoid(input):
    return _ops.sigmoid(input)


def logsigmoid(input):
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)): exp never overflows and no
    digits are lost for large |x| (softplus's threshold would drop them).

    NOTE: |x| is written where(x < 0, -x, x) so that at x == 0 the gradient is
    sigmoid(0) = 0.5, as PyTorch's, rather than 0 (abs has gradient 0 there)."""
    magnitude = _ops.where(input < 0, -input, input)
    return _ops.where(input < 0, input, 0.0) - (-magnitude).exp().log1p()


def _check_lambd(op, lambd):
    if lambd < 0:
        raise ArgumentError(f"{op}(): argument 'lambd' must be >= 0, but got {lambd}",
                            op=op, arg="lambd")


def softshrink(input, lambd=0.5):
    """x - lambd where x > lambd, x + lambd where x < -lambd, 0 between."""
    _check_lambd("softshrink", lambd)
    inner = _ops.where(input < -lambd, input + lambd, 0.0)
    return _ops.where(input > lambd, input - lambd, inner)


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0 (the op, Tensor.hardshrink's too)."""
    return _ops.hardshrink(input, lambd)


def tanhshrink(input):
    """x - tanh(x)."""
    return input - _ops.tanh(input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False, *,
          generator=None):
    """Leaky ReLU with a random slope ~ U(lower, upper) per negative element in training,
    and the mean slope (lower + upper) / 2 in eval. (`generator`: torch.rrelu's.)"""
    if not training:
        slope = (lower + upper) / 2
        return _ops.leaky_relu_(input, slope) if inplace else _ops.leaky_relu(input, slope)
    # PyTorch draws one slope per element <= 0, in order, in double precision
    # (rrelu_with_noise); drawn the same way, the same seed gives the same slopes.
    negative = input <= 0
    draws = _ops.uniform_(empty(int(negative.sum()), dtype=float64, device=input.device),
                          lower, upper, generator=generator)
    slopes = ones_like(input).masked_scatter(negative, draws.to(input.dtype))
    out = input * slopes
    return input.copy_(out) if inplace else out


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)
