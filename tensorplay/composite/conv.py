"""conv_tbc: a 1-D convolution over time-major input, written as the one convolution op."""
from __future__ import annotations

from tensorplay._generated import functional as F
from tensorplay.errors import ShapeError, fmt_shape


def conv_tbc(self, weight, bias, pad=0):
    """out[t, b, o] = bias[o] + sum over k, c of self[t + k - pad, b, c] * weight[k, c, o],
    for self (time, batch, in_channels) and weight (kernel_width, in_channels,
    out_channels): convolution on (batch, in_channels, time) and the weight laid out as
    (out_channels, in_channels, kernel_width). A negative pad crops the time dim."""
    op = "conv_tbc"

    def fail(arg, what, t):
        raise ShapeError(f"{op}(): {what}, but got argument '{arg}' of shape "
                         f"{fmt_shape(tuple(t.shape))}", op=op, arg=arg)

    if self.dim() != 3:
        fail("self", "input must have 3 dims: time, batch, in_channel", self)
    if weight.dim() != 3:
        fail("weight", "weight must have 3 dims: kernel_width, in_channels, out_channels",
             weight)
    if bias.dim() != 1:
        fail("bias", "bias must be 1-D", bias)
    if self.shape[2] != weight.shape[1]:
        fail("weight", f"dim 1 of the weight (in_channels) must equal the input's dim 2 "
                       f"({self.shape[2]})", weight)
    if bias.shape[0] != weight.shape[2]:
        fail("bias", f"bias size must equal dim 2 of the weight (out_channels, "
                     f"{weight.shape[2]})", bias)
    x = self.permute(1, 2, 0)
    if pad < 0:
        x, pad = x[:, :, -pad:x.shape[2] + pad], 0
    out = F.convolution(x, weight.permute(2, 1, 0), bias, [1], [pad], [1], False, [0], 1)
    # (time, batch, out_channels) in row-major memory, as PyTorch's kernel writes it
    return out.permute(2, 0, 1).contiguous()
