"""`tp.nn.init`: PyTorch's weight-initialisation rules.

Every function fills its tensor in place under `no_grad` (a Parameter is a leaf that
requires grad, and filling it must not be recorded) and returns it. The random ones take
`generator=`, which the random ops (`uniform_`, `normal_`, `randperm`) pass through.

The scale of most rules comes from the tensor's fans (see `_calculate_fan_in_and_fan_out`):

    Linear weight (out, in)              fan_in = in,       fan_out = out
    Conv weight (out, in / groups, *k)   fan_in = in * prod(k), fan_out = out * prod(k)

and a gain that compensates the nonlinearity that follows (`calculate_gain`).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

import tensorplay as tp
from tensorplay.errors import ShapeError, fmt_shape

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_",
           "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_"]

# Layers with no nonlinearity of their own: gain 1.
_LINEAR_FNS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
               "conv_transpose2d", "conv_transpose3d")


def calculate_gain(nonlinearity, param=None):
    """The factor by which to scale a std so that activations keep their variance.

        linear, conv*, sigmoid   1
        tanh                     5 / 3
        relu                     sqrt(2)
        leaky_relu               sqrt(2 / (1 + negative_slope ** 2)); slope = param or 0.01
        selu                     3 / 4   (PyTorch's choice, for self-normalising networks)
    """
    if nonlinearity in _LINEAR_FNS or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"calculate_gain(): argument 'param' (negative_slope) must be a "
                             f"number, but got {param!r}")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain(): unsupported nonlinearity {nonlinearity!r}; expected "
                     f"one of {', '.join(_LINEAR_FNS)}, sigmoid, tanh, relu, leaky_relu, selu")


def _calculate_fan_in_and_fan_out(tensor):
    """(fan_in, fan_out): dim 1 and dim 0 times the receptive field (the product of the
    dims after the first two, 1 for a matrix)."""
    if tensor.dim() < 2:
        raise ShapeError(f"_calculate_fan_in_and_fan_out(): fan in and fan out can not be "
                         f"computed for a tensor with fewer than 2 dimensions, but got shape "
                         f"{fmt_shape(tuple(tensor.shape))}", op="_calculate_fan_in_and_fan_out",
                         arg="tensor")
    receptive_field = math.prod(tuple(tensor.shape[2:]))
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _calculate_correct_fan(fn, tensor, mode):
    mode = mode.lower() if isinstance(mode, str) else mode
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"{fn}(): argument 'mode' must be 'fan_in' or 'fan_out', but got "
                         f"{mode!r}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _is_empty(fn, tensor):
    """PyTorch warns (and does nothing) when asked to initialise a tensor with no elements."""
    if tensor.numel() == 0:
        warnings.warn(f"{fn}(): initializing a zero-element tensor is a no-op", stacklevel=3)
        return True
    return False


# ---- plain fills ---------------------------------------------------------------------

def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with draws from U(a, b)."""
    with tp.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with draws from N(mean, std ** 2)."""
    with tp.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def constant_(tensor, val):
    with tp.no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    with tp.no_grad():
        return tensor.fill_(1.0)


def zeros_(tensor):
    with tp.no_grad():
        return tensor.zero_()


def eye_(tensor):
    """The identity in a 2-D tensor (ones on the main diagonal of a non-square one too)."""
    if tensor.dim() != 2:
        raise ShapeError(f"eye_(): only tensors with 2 dimensions are supported, but got shape "
                         f"{fmt_shape(tuple(tensor.shape))}", op="eye_", arg="tensor")
    with tp.no_grad():
        eye = tp.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype, device=tensor.device)
        return tensor.copy_(eye)


def dirac_(tensor, groups=1):
    """A conv weight (out, in, *k) that passes its input through: in each of `groups` groups,
    output channel d reads input channel d at the kernel's centre."""
    if tensor.dim() not in (3, 4, 5):
        raise ShapeError(f"dirac_(): only tensors with 3, 4, or 5 dimensions are supported, "
                         f"but got shape {fmt_shape(tuple(tensor.shape))}", op="dirac_",
                         arg="tensor")
    out_channels = tensor.shape[0]
    if out_channels % groups != 0:
        raise ValueError(f"dirac_(): dim 0 of the tensor ({out_channels}) must be divisible by "
                         f"argument 'groups' ({groups})")
    per_group = out_channels // groups
    centre = tuple(k // 2 for k in tuple(tensor.shape[2:]))
    with tp.no_grad():
        tensor.zero_()
        for g in range(groups):
            for d in range(min(per_group, tensor.shape[1])):
                tensor[(g * per_group + d, d) + centre] = 1
    return tensor


# ---- scaled by the fans --------------------------------------------------------------

def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    bound = math.sqrt(3.0) * std   # a uniform on [-b, b] has std b / sqrt(3)
    return uniform_(tensor, -bound, bound, generator=generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """N(0, std ** 2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator=generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-b, b) with b = gain * sqrt(3 / fan) (He et al., 2015); `a` is leaky_relu's slope.

    NOTE: the layers' default init is kaiming_uniform_(w, a=sqrt(5)): gain sqrt(1/3), so
    b = 1 / sqrt(fan_in), the bound of PyTorch's older (Lua Torch) default."""
    if _is_empty("kaiming_uniform_", tensor):
        return tensor
    fan = _calculate_correct_fan("kaiming_uniform_", tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator=generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std ** 2) with std = gain / sqrt(fan)."""
    if _is_empty("kaiming_normal_", tensor):
        return tensor
    fan = _calculate_correct_fan("kaiming_normal_", tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator=generator)


# ---- truncated normal ----------------------------------------------------------------

def _erfinv_(y):
    """erfinv in place, from tensor ops (there is no erfinv op): Giles' single-precision
    polynomial ("Approximating the erfinv function", 2010), then two Newton steps on
    erf(x) = y, which bring it to the dtype's precision. |y| = 1 gives +-inf."""
    finite = tp.abs(y) < 1
    inf = tp.full_like(y, math.inf)
    edge = tp.where(y > 0, inf, -inf)  # erfinv(+-1) = +-inf
    y_in = tp.where(finite, y, 0.0)  # keeps inf - inf (and its warnings) out of the steps
    w = -tp.log((1 - y_in) * (1 + y_in))
    central = w - 2.5          # |y| <= 0.9933 (w < 5)
    p = tp.full_like(y, 2.81022636e-08)
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
              -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
        p = c + p * central
    tail = tp.sqrt(w) - 3      # the tails
    q = tp.full_like(y, -0.000200214257)
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
              -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
        q = c + q * tail
    x = tp.where(w < 5, p, q) * y_in
    for _ in range(2):
        # Newton: d/dx erf(x) = 2 / sqrt(pi) * exp(-x^2)
        x = x - (tp.erf(x) - y_in) / (2 / math.sqrt(math.pi) * tp.exp(-x * x))
    return y.copy_(tp.where(finite, x, edge))


def _norm_cdf(x):
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std ** 2) restricted to [a, b] (the absolute bounds, as PyTorch's).

    By inverse transform, as PyTorch: a uniform draw between the normal CDF at a and at b,
    mapped back through the inverse CDF (mean + std * sqrt(2) * erfinv(2u - 1))."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("trunc_normal_(): mean is more than 2 std from [a, b]; the distribution "
                      "of values may be incorrect", stacklevel=2)
    with tp.no_grad():
        low = _norm_cdf((a - mean) / std)
        high = _norm_cdf((b - mean) / std)
        tensor.uniform_(2 * low - 1, 2 * high - 1, generator=generator)
        _erfinv_(tensor)
        tensor.mul_(std * math.sqrt(2.0))
        tensor.add_(mean)
        tensor.clamp_(min=a, max=b)
    return tensor


# ---- structured ----------------------------------------------------------------------

def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix (Saxe et al., 2013), the trailing dims flattened: rows are
    orthonormal when rows <= cols, columns otherwise; then scaled by gain.

    The Q of a normal matrix's QR, with each column's sign flipped to make R's diagonal
    positive: that makes the factorisation unique, so Q is uniform (Haar) over the
    orthogonal matrices. NOTE: the QR runs in NumPy on the host (LAPACK's geqrf, the
    routine PyTorch's CPU QR calls); there is no QR op.
    """
    if tensor.dim() < 2:
        raise ShapeError(f"orthogonal_(): only tensors with 2 or more dimensions are "
                         f"supported, but got shape {fmt_shape(tuple(tensor.shape))}",
                         op="orthogonal_", arg="tensor")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with tp.no_grad():
        draws = tp.empty(rows, cols, dtype=tp.float64).normal_(0, 1, generator=generator)
        flat = np.asarray(draws)
        if rows < cols:
            flat = flat.T
        q, r = np.linalg.qr(flat)
        q = q * np.sign(np.diag(r))   # scales column j by the sign of R[j, j]
        if rows < cols:
            q = q.T
        q = tp.tensor(np.ascontiguousarray(q), dtype=tensor.dtype, device=tensor.device)
        tensor.copy_(q.reshape(tuple(tensor.shape)))
        tensor.mul_(gain)
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """A 2-D tensor from N(0, std ** 2) with ceil(sparsity * rows) zeros in each column,
    at random rows (Martens, 2010)."""
    if tensor.dim() != 2:
        raise ShapeError(f"sparse_(): only tensors with 2 dimensions are supported, but got "
                         f"shape {fmt_shape(tuple(tensor.shape))}", op="sparse_", arg="tensor")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with tp.no_grad():
        tensor.normal_(0, std, generator=generator)
        for col in range(cols):
            zero_rows = tp.randperm(rows, generator=generator)[:num_zeros]
            tensor[zero_rows.to(tensor.device), col] = 0
    return tensor
