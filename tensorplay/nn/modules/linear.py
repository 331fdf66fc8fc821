"""Identity, Linear and Bilinear: the affine layers."""
from __future__ import annotations

import math

import tensorplay as tp
from tensorplay.nn import init
from tensorplay.nn.modules.module import Module
from tensorplay.nn.parameter import Parameter

__all__ = ["Identity", "Linear", "Bilinear"]


class Identity(Module):
    """Returns its input; takes (and ignores) any constructor arguments, as PyTorch's."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x @ weight.T + bias, with weight of shape (out_features, in_features).

    Default init (PyTorch's): weight and bias ~ U(-1/sqrt(in_features), 1/sqrt(in_features)),
    which is kaiming_uniform_ with a = sqrt(5)."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(tp.empty(out_features, in_features, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(tp.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return tp.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """y[..., k] = x1 @ weight[k] @ x2 + bias[k]; weight (out, in1, in2)."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(tp.empty(out_features, in1_features, in2_features,
                                         device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(tp.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        # einsum over the batch dims: "...i,kij,...j->...k"
        out = tp.einsum("...i,kij,...j->...k", input1, self.weight, input2)
        return out if self.bias is None else out + self.bias

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear under another name: PyTorch gives MultiheadAttention's `out_proj` this
    class so that its dynamic quantization skips it. There is no quantization here; the
    class exists so that the attention's repr, its pickles and the scripts that name it
    (`isinstance(m, nn.modules.linear.NonDynamicallyQuantizableLinear)`) match PyTorch."""
