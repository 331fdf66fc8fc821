"""`tp.backends.cpu`: the CPU's SIMD level, as PyTorch reports the one its kernels
dispatch to. Here the kernels are NumPy's, so this is the best level NumPy found.

One switch of TensorPlay's own (PyTorch has none like it):

    tp.backends.cpu.allow_winograd = True

lets 3x3 convolutions (stride 1, padding 1) of 32 or more input channels run by
Winograd's F(2x2, 3x3) (cpu_kernels/_conv_winograd.py) where it measured faster
(cpu_kernels/conv.py, WINOGRAD): 16/36 of the products, 1.26x faster forward for 64
channels on 14x14 (within 10% of the default at 32 channels, whose products run on
OpenBLAS's small-matrix kernels where it has them: cpu_kernels/_blas.py). It is off by
default because its float32 rounding is relative to each 4x4 input tile's largest value,
not each 3x3 window's: an input far larger than its neighbours (1e4x and more) costs
the neighbours' outputs digits that PyTorch's direct sum keeps (measured 20x the direct
sum's error at 1e4, 500x at 1e6). On ordinary activations its error is the direct sum's
or smaller. Like torch.backends.cudnn.allow_tf32 on a GPU, it trades accuracy for speed.
"""
import sys
import types

from tensorplay.kernel_support import cpu_switches


def get_cpu_capability():
    """'AVX512', 'AVX2', or 'DEFAULT' on x86 (PyTorch's names); on Arm 'SVE' or 'DEFAULT'."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:          # NumPy 1.x
        from numpy.core._multiarray_umath import __cpu_features__ as features
    if all(features.get(f) for f in ("AVX512F", "AVX512BW", "AVX512VL", "AVX512DQ")):
        return "AVX512"
    if features.get("AVX2"):
        return "AVX2"
    if features.get("SVE"):
        return "SVE"
    return "DEFAULT"


class _Module(types.ModuleType):
    """This module, with `allow_winograd` read and written where the kernels read it
    (tensorplay/kernel_support/cpu_switches.py)."""

    @property
    def allow_winograd(self):
        return cpu_switches.allow_winograd

    @allow_winograd.setter
    def allow_winograd(self, value):
        cpu_switches.allow_winograd = bool(value)


sys.modules[__name__].__class__ = _Module
