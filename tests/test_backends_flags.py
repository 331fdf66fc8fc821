"""tp.backends: PyTorch's switches at torch.backends' paths, with its defaults; they keep
the values set, `flags()` restores them, `is_available()` tells the truth about
TensorPlay, and `cuda.matmul.allow_tf32` reaches the Triton matmul."""
import numpy as np
import pytest
import torch

import tensorplay as tp

# (path under backends, attribute): flags whose default must be PyTorch's.
DEFAULTS = [("cudnn", "enabled"), ("cudnn", "benchmark"), ("cudnn", "deterministic"),
            ("cudnn", "allow_tf32"), ("cudnn", "benchmark_limit"), ("mkldnn", "enabled"),
            ("cuda.matmul", "allow_tf32"),
            ("cuda.matmul", "allow_fp16_reduced_precision_reduction"),
            ("cuda.matmul", "allow_bf16_reduced_precision_reduction")]


def _at(root, path):
    for part in path.split("."):
        root = getattr(root, part)
    return root


@pytest.mark.parametrize("path,name", DEFAULTS)
def test_flag_defaults_are_torchs(path, name):
    assert getattr(_at(tp.backends, path), name) == getattr(_at(torch.backends, path), name)


def test_sdpa_switches_default_like_torch():
    for name in ("flash_sdp_enabled", "mem_efficient_sdp_enabled", "math_sdp_enabled",
                 "cudnn_sdp_enabled"):
        assert getattr(tp.backends.cuda, name)() == getattr(torch.backends.cuda, name)()


@pytest.mark.parametrize("path,name", [d for d in DEFAULTS if d[1] != "benchmark_limit"])
def test_flags_keep_the_value_set(path, name):
    module = _at(tp.backends, path)
    old = getattr(module, name)
    try:
        setattr(module, name, not old)
        assert getattr(module, name) is (not old)
    finally:
        setattr(module, name, old)
    assert getattr(module, name) == old


def test_flags_context_and_set_flags_restore():
    cudnn = tp.backends.cudnn
    with cudnn.flags(enabled=False, benchmark=True, deterministic=True):
        assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (False, True, True)
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (True, False, False)
    old = cudnn.set_flags(True, True)
    try:
        assert old[:2] == (True, False) and cudnn.benchmark is True
    finally:
        cudnn.set_flags(*old)
    assert cudnn.benchmark is False
    enable = tp.backends.cuda.enable_flash_sdp
    enable(False)
    try:
        assert tp.backends.cuda.flash_sdp_enabled() is False
        with pytest.warns(FutureWarning, match="sdp_kernel"):
            with tp.backends.cuda.sdp_kernel(enable_math=False):
                assert tp.backends.cuda.math_sdp_enabled() is False
        assert tp.backends.cuda.math_sdp_enabled() is True
    finally:
        enable(True)


def test_is_available_tells_the_truth():
    b = tp.backends
    assert b.cudnn.is_available() is False and b.cudnn.version() is None
    assert b.mps.is_available() is False and b.mps.is_built() is False
    assert b.mkldnn.is_available() is False
    assert b.openmp.is_available() is False
    assert b.opt_einsum.is_available() is False and b.opt_einsum.enabled is False
    from tensorplay import _cuda_state
    assert b.cuda.is_built() is _cuda_state.triton_available()
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    assert b.mkl.is_available() is ("mkl" in blas.lower())
    assert b.cpu.get_cpu_capability() in ("AVX512", "AVX2", "SVE", "DEFAULT")


def test_opt_einsum_is_not_available_and_refuses_to_be_enabled_as_torch_without_it():
    """PyTorch without the opt-einsum package: `enabled = True` is kept (einsum still goes
    left to right), set_flags / flags(enabled=True) raise its ValueError."""
    with pytest.raises(ValueError, match="opt_einsum is not available"):
        tp.backends.opt_einsum.set_flags(True)
    with pytest.raises(ValueError, match="strategy"):
        with tp.backends.opt_einsum.flags(strategy="greedy"):
            pass
    assert tp.backends.opt_einsum.enabled is False
    tp.backends.opt_einsum.enabled = True
    try:
        assert tp.backends.opt_einsum.enabled is True
        a, b, c = (tp.randn(3, 4), tp.randn(4, 5), tp.randn(5, 2))
        np.testing.assert_allclose(np.asarray(tp.einsum("ij,jk,kl->il", a, b, c)),
                                   np.asarray((a @ b) @ c), rtol=1e-5, atol=1e-6)
    finally:
        tp.backends.opt_einsum.enabled = False
    if not torch.backends.opt_einsum.is_available():
        with pytest.raises(ValueError) as theirs:
            torch.backends.opt_einsum.set_flags(True)
        with pytest.raises(ValueError) as ours:
            tp.backends.opt_einsum.set_flags(True)
        assert str(ours.value) == str(theirs.value)


def test_unknown_matmul_flag_is_an_error():
    with pytest.raises(AttributeError, match="Unknown attribute"):
        tp.backends.cuda.matmul.allow_tf33 = True


def test_matmul_allow_tf32_reaches_the_triton_matmul():
    pytest.importorskip("triton")
    from triton_kernels import linalg
    from tensorplay import _dtype as dt
    assert linalg._dot_options(dt.float32)["PRECISION"] == "ieee"
    tp.backends.cuda.matmul.allow_tf32 = True
    try:
        assert tp.backends.cuda.matmul.fp32_precision == "tf32"
        assert linalg._dot_options(dt.float32)["PRECISION"] == "tf32"
        assert linalg._dot_options(dt.float64)["PRECISION"] == "ieee"
    finally:
        tp.backends.cuda.matmul.allow_tf32 = False
    assert linalg._dot_options(dt.float32)["PRECISION"] == "ieee"
