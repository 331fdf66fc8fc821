"""Activation layers: each is its functional form (tp.nn.functional) with the arguments
kept as attributes; `inplace=True` overwrites the input where PyTorch allows it.
PReLU is the one with a parameter (the learned negative slope)."""
from __future__ import annotations

import tensorplay as tp
from tensorplay.errors import ShapeError, fmt_shape
from tensorplay.nn import functional as F
from tensorplay.nn.modules.module import Module
from tensorplay.nn.parameter import Parameter

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "RReLU", "ELU", "SELU", "CELU", "GELU", "SiLU",
           "Mish", "Softplus", "Softsign", "Softshrink", "Hardshrink", "Tanhshrink", "Hardtanh",
           "Hardsigmoid", "Hardswish", "Tanh", "Sigmoid", "LogSigmoid", "Threshold", "GLU",
           "PReLU", "Softmax", "LogSoftmax", "Softmin", "Softmax2d"]


def _inplace_suffix(inplace, first):
    """PyTorch's repr: 'inplace=True' only when set (after a comma unless `first`)."""
    if not inplace:
        return ""
    return "inplace=True" if first else ", inplace=True"


class _Inplace(Module):
    """An activation whose only argument is `inplace`."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self):
        return _inplace_suffix(self.inplace, first=True)


class ReLU(_Inplace):
    def forward(self, input):
        return F.relu(input, self.inplace)


class SELU(_Inplace):
    def forward(self, input):
        return F.selu(input, self.inplace)


class SiLU(_Inplace):
    def forward(self, input):
        return F.silu(input, self.inplace)


class Mish(_Inplace):
    def forward(self, input):
        return F.mish(input, self.inplace)


class Hardsigmoid(_Inplace):
    def forward(self, input):
        return F.hardsigmoid(input, self.inplace)

    def extra_repr(self):
        return ""


class Hardswish(_Inplace):
    def forward(self, input):
        return F.hardswish(input, self.inplace)

    def extra_repr(self):
        return ""


class Hardtanh(Module):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None,
                 max_value=None):
        super().__init__()
        # min_value / max_value: PyTorch's deprecated spellings.
        self.min_val = min_val if min_value is None else min_value
        self.max_val = max_val if max_value is None else max_value
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise ValueError(f"Hardtanh(): argument 'max_val' ({self.max_val}) must be greater "
                             f"than argument 'min_val' ({self.min_val})")

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return (f"min_val={self.min_val}, max_val={self.max_val}"
                f"{_inplace_suffix(self.inplace, first=False)}")


class ReLU6(Hardtanh):
    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace_suffix(self.inplace, first=True)


class LeakyReLU(Module):
    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}{_inplace_suffix(self.inplace, False)}"


class RReLU(Module):
    """Random negative slope ~ U(lower, upper) in training, (lower + upper) / 2 in eval."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return (f"lower={self.lower}, upper={self.upper}"
                f"{_inplace_suffix(self.inplace, False)}")


class ELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}{_inplace_suffix(self.inplace, False)}"


class CELU(ELU):
    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class GELU(Module):
    """approximate='none' (exact, with erf) or 'tanh'."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Softshrink(Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.softshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Hardshrink(Softshrink):
    def forward(self, input):
        return F.hardshrink(input, self.lambd)


class Threshold(Module):
    """value where input <= threshold, else input."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return (f"threshold={self.threshold}, value={self.value}"
                f"{_inplace_suffix(self.inplace, False)}")


class _Plain(Module):
    """An activation without arguments."""
    _fn = None

    def forward(self, input):
        return type(self)._fn(input)


class Softsign(_Plain):
    _fn = staticmethod(F.softsign)


class Tanhshrink(_Plain):
    _fn = staticmethod(F.tanhshrink)


class Tanh(_Plain):
    _fn = staticmethod(F.tanh)


class Sigmoid(_Plain):
    _fn = staticmethod(F.sigmoid)


class LogSigmoid(_Plain):
    _fn = staticmethod(F.logsigmoid)


class GLU(Module):
    """a * sigmoid(b), where a and b are the halves of the input along `dim`."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class PReLU(Module):
    """max(0, x) + weight * min(0, x), with a learned slope: one shared (num_parameters=1)
    or one per channel (dim 1 of the input); init `init` (0.25)."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(tp.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        with tp.no_grad():
            self.weight.fill_(self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class _SoftmaxBase(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "dim"):   # modules pickled before `dim` existed
            self.dim = None

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    def forward(self, input):
        return F.softmax(input, self.dim, _stacklevel=5)


class LogSoftmax(_SoftmaxBase):
    def forward(self, input):
        return F.log_softmax(input, self.dim, _stacklevel=5)


class Softmin(_SoftmaxBase):
    def forward(self, input):
        return F.softmin(input, self.dim, _stacklevel=5)


class Softmax2d(Module):
    """Softmax over the channels at each spatial position of (N, C, H, W) or (C, H, W)."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ShapeError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D "
                             f"instead (shape {fmt_shape(tuple(input.shape))})",
                             op="Softmax2d", arg="input")
        return F.softmax(input, -3, _stacklevel=5)


# PyTorch defines MultiheadAttention in torch/nn/modules/activation.py, and scripts
# import it from there; it lives in attention.py here, with its helpers.
from tensorplay.nn.modules.attention import MultiheadAttention  # noqa: E402,F401
