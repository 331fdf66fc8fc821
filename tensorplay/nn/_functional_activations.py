"""`tp.nn.functional` activations: PyTorch's signatures (`input`, `inplace=False`) over the
ops of ops.yaml (`F.elu(x, alpha, inplace=True)` is `tp.elu_(x, alpha)`)."""
from __future__ import annotations

from tensorplay._generated import functional as _ops

__all__ = ["relu6", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "selu_", "celu",
           "celu_", "gelu", "silu", "mish", "softplus", "softsign", "hardtanh", "hardtanh_",
           "hardsigmoid", "hardswish", "glu", "threshold", "threshold_", "prelu"]


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
