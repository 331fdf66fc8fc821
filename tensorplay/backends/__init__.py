"""`tp.backends`: the switches a PyTorch script flips at its top, at torch.backends' paths.

    tp.backends.cuda.matmul.allow_tf32 = True     # float32 matmuls on the GPU in TF32
    tp.backends.cudnn.benchmark = True            # kept; TensorPlay has no cuDNN
    tp.backends.mps.is_available()                # False: no Apple GPU backend here

Every flag PyTorch has here exists, keeps the value it is given, and has PyTorch's
default. `is_available()` tells the truth about TensorPlay: its GPU backend is Triton,
so cuDNN, MKL-DNN (oneDNN) and MPS are never available, and einsum has no path
optimiser (opt_einsum). A flag takes effect where TensorPlay has what it governs
(`cuda.matmul.allow_tf32`: the Triton matmul's input precision); elsewhere it is held,
as PyTorch holds cudnn.benchmark on a machine without cuDNN.

    cudnn.py       enabled, benchmark, deterministic, allow_tf32 ... (held)
    cuda.py        matmul.allow_tf32 (takes effect), the reduced-precision and SDPA flags
    mps.py         Apple's GPU: never available
    mkldnn.py      oneDNN: never available, flags held
    mkl.py         whether NumPy's BLAS is Intel MKL
    openmp.py      OpenMP: not used by the NumPy kernels
    opt_einsum.py  einsum's path optimiser: not available (left to right, as PyTorch
                   without the opt-einsum package)
    cpu.py         the SIMD level NumPy's kernels dispatch to; allow_winograd (TensorPlay's
                   own switch, off: Winograd's 3x3 convolution, faster, rounding per tile)
    mha.py         MultiheadAttention's fast path switch (held)
"""
from tensorplay.backends import (  # noqa: F401
    cpu, cuda, cudnn, mha, mkl, mkldnn, mps, openmp, opt_einsum,
)

__all__ = ["cpu", "cuda", "cudnn", "mha", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
