"""`tp.backends.cuda`: the GPU matmul precision and scaled-dot-product-attention switches.

`matmul.allow_tf32` takes effect: the Triton matmul (mm, bmm, linear, ...) of float32
tensors on the `cuda` device rounds its inputs to TF32 when it is True, and runs in full
float32 precision when it is False (PyTorch's default). The reduced-precision-reduction
flags are held: TensorPlay always accumulates half-precision products in float32, which
is what PyTorch does with them False. The SDPA switches are held too: TensorPlay has one
attention (the math composition), and no flash / memory-efficient / cuDNN kernels.
"""
from __future__ import annotations

import contextlib

from tensorplay import _cuda_state


def is_built():
    """Whether TensorPlay has its GPU backend: the Triton kernels (the `triton` package
    imports). Like PyTorch's, True does not mean a GPU is present: see tp.cuda.is_available."""
    return _cuda_state.triton_available()


class _Matmul:
    """`tp.backends.cuda.matmul`: its attributes are the flags (torch's cuBLASModule)."""

    _held = ("allow_fp16_reduced_precision_reduction",
             "allow_bf16_reduced_precision_reduction", "allow_fp16_accumulation")

    def __init__(self):
        object.__setattr__(self, "_values", {
            "allow_fp16_reduced_precision_reduction": True,
            "allow_bf16_reduced_precision_reduction": True,
            "allow_fp16_accumulation": False,
        })

    @property
    def allow_tf32(self):
        return _cuda_state.matmul_allow_tf32

    @property
    def fp32_precision(self):
        """PyTorch's newer spelling of allow_tf32: 'tf32' or 'ieee'."""
        return "tf32" if _cuda_state.matmul_allow_tf32 else "ieee"

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            _cuda_state.matmul_allow_tf32 = bool(value)
        elif name == "fp32_precision":
            if value not in ("tf32", "ieee", "none"):
                raise ValueError(f"fp32_precision must be 'tf32', 'ieee' or 'none', got "
                                 f"{value!r}")
            _cuda_state.matmul_allow_tf32 = value == "tf32"
        elif name in self._held:
            self._values[name] = value
        else:
            raise AttributeError(f"Unknown attribute {name}")


matmul = _Matmul()


# ---- scaled dot product attention ------------------------------------------------------
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True,
        "fp16_bf16_reduction_math": False}


def flash_sdp_enabled():
    return _sdp["flash"]


def enable_flash_sdp(enabled: bool):
    _sdp["flash"] = bool(enabled)


def mem_efficient_sdp_enabled():
    return _sdp["mem_efficient"]


def enable_mem_efficient_sdp(enabled: bool):
    _sdp["mem_efficient"] = bool(enabled)


def math_sdp_enabled():
    return _sdp["math"]


def enable_math_sdp(enabled: bool):
    _sdp["math"] = bool(enabled)


def cudnn_sdp_enabled():
    return _sdp["cudnn"]


def enable_cudnn_sdp(enabled: bool):
    _sdp["cudnn"] = bool(enabled)


def fp16_bf16_reduction_math_sdp_allowed():
    return _sdp["fp16_bf16_reduction_math"]


def allow_fp16_bf16_reduction_math_sdp(enabled: bool):
    _sdp["fp16_bf16_reduction_math"] = bool(enabled)


def is_flash_attention_available():
    """False: no fused flash-attention kernel here (attention is the math composition)."""
    return False


def can_use_flash_attention(params=None, debug=False):
    return False


def can_use_efficient_attention(params=None, debug=False):
    return False


def can_use_cudnn_attention(params=None, debug=False):
    return False


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True,
               enable_cudnn=True):
    """Set the four SDPA switches for a region, restoring them after (PyTorch's deprecated
    context manager; torch.nn.attention.sdpa_kernel is its successor)."""
    import warnings
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this "
                  "context manager will be removed. Please see "
                  "`torch.nn.attention.sdpa_kernel()` for the new context manager, with "
                  "updated signature.", FutureWarning, stacklevel=3)
    saved = dict(_sdp)
    _sdp.update(flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient,
                cudnn=enable_cudnn)
    try:
        yield
    finally:
        _sdp.update(saved)


# ---- library preferences (held: the Triton kernels and NumPy's LAPACK do the work) ---
_preferred = {"linalg": "default", "blas": "cublas"}


def preferred_linalg_library(backend=None):
    """PyTorch picks cuSOLVER or MAGMA here; TensorPlay's GPU linear algebra is its own,
    so the choice is held and returned."""
    if backend is not None:
        _preferred["linalg"] = str(backend).lower()
    return _preferred["linalg"]


def preferred_blas_library(backend=None):
    if backend is not None:
        _preferred["blas"] = str(backend).lower()
    return _preferred["blas"]
