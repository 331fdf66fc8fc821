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
    # As PyTorch's kernel: the bias, then one kernel tap at a time, each adding
    # self[rows] @ weight[k] into the output rows it reaches. The padding is never
    # multiplied (a zero-padded convolution would make 0 * inf = NaN next to an inf).
    ilen, batch = self.shape[0], self.shape[1]
    olen = ilen + 2 * pad - weight.shape[0] + 1
    if olen < 0:
        raise ShapeError(f"{op}(): the output would have {olen} time steps (input length "
                         f"{ilen} + 2 * pad {pad} - kernel width {weight.shape[0]} + 1)",
                         op=op, arg="self")
    # (the output has the input's dtype, as PyTorch's: a bias of another is cast)
    out = bias.to(self.dtype).reshape(1, 1, -1).expand(olen, batch, bias.shape[0])
    for k in range(weight.shape[0]):
        i_shift, o_shift = max(0, k - pad), max(0, pad - k)
        t = min(ilen + pad - k, olen) - o_shift
        if t > 0:
            term = F.matmul(self.narrow(0, i_shift, t), weight[k])
            out = out + F.constant_pad_nd(term, [0, 0, 0, 0, o_shift, olen - o_shift - t])
    # (time, batch, out_channels) in row-major memory, as PyTorch's kernel writes it
    return out.contiguous()
