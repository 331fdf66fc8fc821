"""tp.nn.functional: the activations and small layers that ops.yaml serves directly or
that are a few ops composed (no op of their own), with `torch.nn.functional`'s signatures.

Compositions here are differentiated by autograd through the ops they call, so their
gradients are those of the formula written in each docstring.
"""
from __future__ import annotations

from tensorplay._creation import empty_like, zeros_like
from tensorplay._generated import functional as _ops
from tensorplay.errors import ArgumentError

__all__ = ["relu", "relu_", "tanh", "sigmoid", "logsigmoid", "softshrink", "hardshrink",
           "tanhshrink", "rrelu", "rrelu_", "gumbel_softmax", "linear", "bilinear", "normalize"]

linear = _ops.linear
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
    """x where |x| > lambd, else 0."""
    _check_lambd("hardshrink", lambd)
    return _ops.where((input > lambd).logical_or(input < -lambd), input, 0.0)


def tanhshrink(input):
    """x - tanh(x)."""
    return input - _ops.tanh(input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky ReLU with a random slope ~ U(lower, upper) per negative element in training,
    and the mean slope (lower + upper) / 2 in eval."""
    if not training:
        slope = (lower + upper) / 2
        return _ops.leaky_relu_(input, slope) if inplace else _ops.leaky_relu(input, slope)
    slopes = _ops.uniform_(empty_like(input), lower, upper)
    out = _ops.where(input >= 0, input, input * slopes)
    return input.copy_(out) if inplace else out


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) with Gumbel(0, 1) noise g = -log(Exp(1)); hard=True
    returns the one-hot of the argmax whose gradient is the soft sample's
    (straight-through estimator)."""
    gumbels = -_ops.exponential_(empty_like(logits)).log()
    soft = _ops.softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    index = soft.argmax(dim, keepdim=True)
    one_hot = _ops.scatter(zeros_like(soft), dim, index, 1.0)
    return one_hot - soft.detach() + soft


def bilinear(input1, input2, weight, bias=None):
    """y[..., k] = input1 @ weight[k] @ input2 (+ bias[k]); weight (out, in1, in2)."""
    out = _ops.einsum("...i,kij,...j->...k", [input1, weight, input2])
    return out if bias is None else out + bias


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p along dim, eps)."""
    if out is not None:
        raise ArgumentError("normalize(): argument 'out' is not supported (got a tensor); "
                            "assign the result instead", op="normalize", arg="out")
    norm = _ops.norm(input, p, [dim], True).clamp_min(eps)
    return input / norm.expand_as(input)
