"""tp.fft, tp.stft and tp.istft against PyTorch: values and gradients of every function
for real and complex inputs in both precisions, the n / s / dim / norm arguments, out=,
the errors; float64 gradcheck; cuda (the Stockham kernel for power-of-two lengths, the
host fallback for the others) against the CPU under the Triton interpreter.

Gradients are compared through a real loss that is linear in the output,
sum(view_as_real(out) * W) for a complex output (sum(out * W) for a real one), W fixed
random weights: the gradient of such a loss is the adjoint transform applied to W, so
every entry of the adjoint is checked, in PyTorch's convention (the conjugate Wirtinger
derivative for a complex input).
"""
from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DimError, DTypeError, ShapeError

REAL = (tp.float32, tp.float64)
COMPLEX = (tp.complex64, tp.complex128)
NORMS = (None, "backward", "ortho", "forward")
TOL = {tp.float32: 2e-5, tp.float64: 1e-12, tp.complex64: 2e-5, tp.complex128: 1e-12}


def _array(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if dtype.is_complex:
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype.np)


def _pair(shape, dtype, device="cpu", requires_grad=False, seed=0):
    """The same values as a TensorPlay tensor (on `device`) and a PyTorch one (CPU)."""
    a = _array(shape, dtype, seed)
    x = tp.tensor(a, device=device, requires_grad=requires_grad)
    xt = torch.tensor(a, requires_grad=requires_grad)
    return x, xt


def _numpy(t):
    if isinstance(t, np.ndarray):
        return t
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().numpy()
    return t.detach().cpu().numpy()


def _close(got, want, dtype):
    g, w = _numpy(got), _numpy(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    assert str(g.dtype) == str(w.dtype), (g.dtype, w.dtype)
    scale = max(1.0, float(np.abs(w).max())) if w.size else 1.0
    np.testing.assert_allclose(g, w, rtol=0, atol=TOL[dtype] * scale * 10)


def _weights(out, seed=1):
    shape = tuple(out.shape) + ((2,) if out.dtype.is_complex else ())
    return np.random.default_rng(seed).standard_normal(shape)


def _linear_loss(out, w, lib):
    """sum(view_as_real(out) * w): real, linear in out."""
    real = lib.view_as_real(out.resolve_conj()) if out.is_complex() else out
    return (real * lib.tensor(w, dtype=real.dtype, device=real.device)).sum()


def check(fn_tp, fn_torch, x, xt, dtype, grad=True):
    """Values, then (when x requires grad) the gradient of the linear loss."""
    out, want = fn_tp(x), fn_torch(xt)
    _close(out, want, dtype)
    if grad and x.requires_grad:
        w = _weights(want)
        _linear_loss(out, w, tp).backward()
        _linear_loss(want, w, torch).backward()
        _close(x.grad, xt.grad, dtype)


# ---- one-dimensional transforms -------------------------------------------------------------
ONE_DIM = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
TAKES_COMPLEX = {"fft", "ifft", "irfft", "hfft"}
TAKES_REAL = {"fft", "ifft", "rfft", "irfft", "hfft", "ihfft"}


@pytest.mark.parametrize("name", ONE_DIM)
@pytest.mark.parametrize("dtype", REAL + COMPLEX, ids=lambda d: d.name)
@pytest.mark.parametrize("norm", NORMS)
def test_one_dim_values_and_grads(name, dtype, norm):
    if dtype.is_complex and name not in TAKES_COMPLEX:
        pytest.skip("a real-input transform")
    fn, fn_t = getattr(tp.fft, name), getattr(torch.fft, name)
    for shape, kw in [((8,), {}), ((3, 7), {}), ((4, 6), {"dim": 0}), ((2, 5, 3), {"dim": 1}),
                      ((3, 6), {"n": 4}), ((3, 6), {"n": 11}), ((5,), {"n": 1, "dim": -1})]:
        if name in ("irfft", "hfft") and shape[kw.get("dim", -1)] == 1 and "n" not in kw:
            continue            # 2 * (1 - 1) = 0 points
        x, xt = _pair(shape, dtype, requires_grad=True)
        check(lambda t: fn(t, norm=norm, **kw), lambda t: fn_t(t, norm=norm, **kw), x, xt,
              dtype)


@pytest.mark.parametrize("name", ("fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
                                  "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"))
@pytest.mark.parametrize("dtype", (tp.float64, tp.complex64, tp.complex128),
                         ids=lambda d: d.name)
def test_multi_dim_values_and_grads(name, dtype):
    real_only = name.startswith(("rfft", "ihfft"))
    if dtype.is_complex and real_only:
        pytest.skip("a real-input transform")
    fn, fn_t = getattr(tp.fft, name), getattr(torch.fft, name)
    cases = [((4, 6), {}), ((2, 4, 6), {}), ((3, 4, 5), {"dim": (0, 2)}),
             ((3, 4, 5), {"s": (3, 8)}), ((3, 4, 5), {"s": (2, -1), "dim": (2, 0)}),
             ((2, 3, 4), {"norm": "ortho"}), ((2, 3, 4), {"norm": "forward", "dim": (-1,)})]
    if name.endswith("n"):
        cases += [((2, 3, 4), {"s": (5,)}), ((3, 4), {"dim": (1, 0), "norm": "ortho"})]
    for shape, kw in cases:
        x, xt = _pair(shape, dtype, requires_grad=True)
        check(lambda t: fn(t, **kw), lambda t: fn_t(t, **kw), x, xt, dtype)


def test_integer_input_promotes_to_the_default_dtype():
    x = tp.arange(6)
    _close(tp.fft.fft(x), torch.fft.fft(torch.arange(6)), tp.complex64)
    _close(tp.fft.rfft(x), torch.fft.rfft(torch.arange(6)), tp.complex64)
    _close(tp.fft.irfft(x), torch.fft.irfft(torch.arange(6)), tp.float32)


def test_strided_and_transposed_inputs():
    a = _array((6, 8), tp.complex128)
    x, xt = tp.tensor(a).mT, torch.tensor(a).mT
    _close(tp.fft.fft(x, dim=0), torch.fft.fft(xt, dim=0), tp.complex128)
    _close(tp.fft.fftn(x[::2]), torch.fft.fftn(xt[::2]), tp.complex128)
    r = _array((5, 9), tp.float32)
    _close(tp.fft.rfft(tp.tensor(r)[:, ::2]), torch.fft.rfft(torch.tensor(r)[:, ::2]),
           tp.float32)


def test_round_trips():
    x = tp.tensor(_array((4, 10), tp.float64))
    for norm in NORMS:
        np.testing.assert_allclose(_numpy(tp.fft.irfft(tp.fft.rfft(x, norm=norm), n=10,
                                                       norm=norm)), _numpy(x), atol=1e-12)
        np.testing.assert_allclose(_numpy(tp.fft.ifft(tp.fft.fft(x, norm=norm), norm=norm)),
                                   _numpy(x), atol=1e-12)
        np.testing.assert_allclose(_numpy(tp.fft.ihfft(tp.fft.hfft(tp.fft.ihfft(x, norm=norm),
                                                                   n=10, norm=norm),
                                                       norm=norm)),
                                   _numpy(tp.fft.ihfft(x, norm=norm)), atol=1e-12)


def test_out_argument():
    x, xt = _pair((3, 8), tp.float32)
    out = tp.empty(0, dtype=tp.complex64)
    r = tp.fft.rfft(x, out=out)
    assert r is out
    _close(out, torch.fft.rfft(xt), tp.complex64)
    out = tp.empty((3, 8), dtype=tp.float32)
    tp.fft.irfft(tp.fft.rfft(x), n=8, out=out)
    _close(out, torch.fft.irfft(torch.fft.rfft(xt), n=8), tp.float32)


# ---- float64 gradcheck, through real views --------------------------------------------------
def _real_view(fn, complex_input):
    """fn as a function of real tensors to real tensors, as gradcheck takes them."""
    def call(x):
        y = fn(tp.view_as_complex(x) if complex_input else x)
        return tp.view_as_real(y) if y.dtype.is_complex else y
    return call


@pytest.mark.parametrize("name,complex_input,kw", [
    ("fft", True, {}), ("fft", False, {"n": 5}), ("ifft", True, {"norm": "ortho"}),
    ("rfft", False, {}), ("rfft", False, {"n": 7, "norm": "forward"}),
    ("irfft", True, {}), ("irfft", True, {"n": 7}), ("hfft", True, {"norm": "ortho"}),
    ("ihfft", False, {}), ("fft2", True, {}), ("rfftn", False, {}), ("irfftn", True, {}),
    ("hfftn", True, {"s": (3, 4)}), ("ihfft2", False, {}),
])
def test_gradcheck_float64(name, complex_input, kw):
    fn = getattr(tp.fft, name)
    shape = (3, 5, 2) if complex_input else (3, 5)
    x = tp.tensor(np.random.default_rng(3).standard_normal(shape), requires_grad=True)
    assert tp.autograd.gradcheck(_real_view(lambda t: fn(t, **kw), complex_input), (x,))
    assert tp.autograd.gradgradcheck(_real_view(lambda t: fn(t, **kw), complex_input), (x,))


# ---- fftshift, fftfreq ------------------------------------------------------------------------
def test_shifts():
    for shape, kw in [((7,), {}), ((4, 5), {}), ((4, 5), {"dim": 1}), ((3, 4, 5), {"dim": (0, 2)}),
                      ((6,), {"dim": -1})]:
        x, xt = _pair(shape, tp.complex64, requires_grad=True)
        check(lambda t: tp.fft.fftshift(t, **kw), lambda t: torch.fft.fftshift(t, **kw), x, xt,
              tp.complex64)
        x, xt = _pair(shape, tp.float64, requires_grad=True)
        check(lambda t: tp.fft.ifftshift(t, **kw), lambda t: torch.fft.ifftshift(t, **kw), x,
              xt, tp.float64)


def test_frequencies():
    for n, d in [(1, 1.0), (5, 1.0), (8, 0.1), (0, 1.0)]:
        _close(tp.fft.fftfreq(n, d), torch.fft.fftfreq(n, d), tp.float32)
        _close(tp.fft.rfftfreq(n, d), torch.fft.rfftfreq(n, d), tp.float32)
    _close(tp.fft.fftfreq(6, dtype=tp.float64), torch.fft.fftfreq(6, dtype=torch.float64),
           tp.float64)
    np.testing.assert_allclose(_numpy(tp.fft.rfftfreq(6, 2.0, dtype=tp.complex64)),
                               np.fft.rfftfreq(6, 2.0), atol=1e-7)  # (PyTorch's arange refuses)
    assert tp.fft.fftfreq(4, requires_grad=True).requires_grad
    with pytest.raises(DTypeError, match=r"fft_fftfreq\(\): requires a floating point or "
                                         r"complex dtype, but got int64"):
        tp.fft.fftfreq(5, dtype=tp.int64)


def test_namespace_serves_every_torch_fft_function():
    import inspect
    names = {n for n in dir(torch.fft) if not n.startswith("_")
             and callable(getattr(torch.fft, n)) and not inspect.isclass(getattr(torch.fft, n))}
    assert names <= set(dir(tp.fft)), names - set(dir(tp.fft))


# ---- errors --------------------------------------------------------------------------------
def test_errors():
    x = tp.randn(4, 6)
    c = tp.fft.fft(x)
    with pytest.raises(ArgumentError, match=r'fft_fft\(\): Invalid normalization mode: "bad" '
                                            r"\(argument 'norm'"):
        tp.fft.fft(x, norm="bad")
    with pytest.raises(DimError, match=r"fft_fft\(\): Dimension out of range \(expected to be "
                                       r"in range of \[-2, 1\], but got 3\) \(argument 'dim'\)"):
        tp.fft.fft(x, dim=3)
    with pytest.raises(DimError, match=r"fft_fft\(\): Dimension specified as -1 but tensor has "
                                       r"no dimensions"):
        tp.fft.fft(tp.tensor(1.0))
    with pytest.raises(ShapeError, match=r"fft_fft\(\): Invalid number of data points \(0\) "
                                         r"specified \(argument 'n'\)"):
        tp.fft.fft(x, n=0)
    with pytest.raises(ShapeError, match=r"fft_irfft\(\): Invalid number of data points \(0\)"):
        tp.fft.irfft(c, n=0)
    with pytest.raises(DTypeError, match=r"fft_rfft\(\): expects a real input tensor, but got "
                                         r"complex64 \(argument 'input'\)"):
        tp.fft.rfft(c)
    with pytest.raises(DTypeError, match=r"fft_ihfft\(\): expects a real input tensor"):
        tp.fft.ihfft(c)
    with pytest.raises(DimError, match=r"fft_fftn\(\): FFT dims must be unique"):
        tp.fft.fftn(x, dim=(0, 0))
    with pytest.raises(ShapeError, match=r"fft_fftn\(\): When given, dim and shape arguments "
                                         r"must have the same length"):
        tp.fft.fftn(x, s=(2,), dim=(0, 1))
    with pytest.raises(ShapeError, match=r"fft_fftn\(\): Got shape with 3 values but input "
                                         r"tensor only has 2 dimensions"):
        tp.fft.fftn(x, s=(2, 2, 2))
    with pytest.raises(ShapeError, match=r"fft_rfftn\(\): must transform at least one axis"):
        tp.fft.rfftn(x, dim=())
    with pytest.raises(ShapeError, match=r"fft_irfftn\(\): must transform at least one axis"):
        tp.fft.irfftn(c, dim=())
    with pytest.raises(DTypeError, match=r"fft_fft\(\): Unsupported dtype float16"):
        tp.fft.fft(tp.randn(4).half())
    with pytest.raises(DimError, match=r"fft_fftshift\(\): Dimension out of range"):
        tp.fft.fftshift(x, dim=5)
    with pytest.raises(ShapeError, match=r"_fft_c2r\(\): expected the input's size along dim 1 "
                                         r"to be last_dim_size // 2 \+ 1 = 4"):
        tp._fft_c2r(c, [1], 0, 7)
    with pytest.raises(DTypeError, match=r"_fft_c2c\(\): expects a complex input tensor, but "
                                         r"got float32"):
        tp._fft_c2c(x, [1], 0, True)


def test_out_of_the_wrong_kind_is_refused():
    x = tp.randn(4, 6)
    with pytest.raises(Exception, match="fft_rfft"):
        tp.fft.rfft(x, out=tp.empty(4, 4))
    with pytest.raises(Exception, match="fft_irfft"):
        tp.fft.irfft(tp.fft.rfft(x), out=tp.empty(4, 10, dtype=tp.complex64).to(tp.int64))


# ---- stft / istft -----------------------------------------------------------------------------
STFT_CASES = [
    ((100,), 16, {"hop_length": 4, "window": "hann"}),
    ((2, 64), 16, {"window": "hann", "center": False}),
    ((64,), 16, {"window": "hamming", "win_length": 10, "pad_mode": "constant"}),
    ((50,), 8, {"window": "hann", "normalized": True, "onesided": False}),
    ((3, 40), 8, {"window": "ones", "hop_length": 3, "pad_mode": "replicate"}),
    ((60,), 16, {"window": "hann", "win_length": 7, "center": False, "align_to_window": True}),
    ((60,), 16, {"window": "hann", "win_length": 8, "center": False, "align_to_window": False}),
]


def _window(kind, n, dtype, lib, device=None):
    if kind == "ones":
        return lib.ones(n, dtype=dtype) if device is None else lib.ones(n, dtype=dtype,
                                                                         device=device)
    fn = getattr(lib, f"{kind}_window")
    return fn(n, dtype=dtype) if device is None else fn(n, dtype=dtype, device=device)


def _stft_kwargs(n_fft, kw, lib, dtype, device=None):
    kw = dict(kw)
    win = kw.pop("window")
    kw["window"] = _window(win, kw.get("win_length", n_fft), dtype, lib, device)
    return kw


@pytest.mark.parametrize("dtype", (tp.float32, tp.float64, tp.complex128),
                         ids=lambda d: d.name)
@pytest.mark.parametrize("case", range(len(STFT_CASES)))
def test_stft_values_and_grads(dtype, case):
    shape, n_fft, kw = STFT_CASES[case]
    real = dtype.to_real() if dtype.is_complex else dtype
    tdtype = getattr(torch, real.name)
    if dtype.is_complex:
        kw = dict(kw, onesided=False)
        if kw.get("pad_mode") == "replicate":
            kw.pop("pad_mode")
    x, xt = _pair(shape, dtype, requires_grad=True)
    kw_tp = _stft_kwargs(n_fft, kw, tp, real)
    kw_t = _stft_kwargs(n_fft, kw, torch, tdtype)
    check(lambda t: tp.stft(t, n_fft, return_complex=True, **kw_tp),
          lambda t: torch.stft(t, n_fft, return_complex=True, **kw_t), x, xt, dtype)
    # the method form
    _close(x.stft(n_fft, return_complex=True, **kw_tp),
           xt.stft(n_fft, return_complex=True, **kw_t), dtype)


def test_stft_window_gradient_and_real_output():
    x, xt = _pair((40,), tp.float64)
    w = tp.tensor(np.hanning(8), requires_grad=True)
    wt = torch.tensor(np.hanning(8), requires_grad=True)
    check(lambda t: tp.stft(x, 8, window=t, return_complex=True),
          lambda t: torch.stft(xt, 8, window=t, return_complex=True), w, wt, tp.float64)
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        r = tp.stft(x, 8, window=w.detach(), return_complex=False)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.stft(xt, 8, window=wt.detach(), return_complex=False)
    _close(r, want, tp.float64)


@pytest.mark.parametrize("dtype", (tp.float32, tp.float64), ids=lambda d: d.name)
@pytest.mark.parametrize("case", (0, 2, 3, 4))
def test_istft_values_and_grads(dtype, case):
    """(Case 1, center=False with a Hann window, has a zero envelope at its first sample:
    istft refuses it, test_stft_errors.)"""
    shape, n_fft, kw = STFT_CASES[case]
    if kw.get("win_length", n_fft) < n_fft or kw.get("window") == "ones":
        kw = dict(kw, window="hann")
        kw.pop("win_length", None)
    tdtype = getattr(torch, dtype.name)
    stft_kw = {k: v for k, v in kw.items() if k not in ("pad_mode", "align_to_window")}
    spec_t = torch.stft(torch.tensor(_array(shape, dtype)), n_fft, return_complex=True,
                        **_stft_kwargs(n_fft, stft_kw, torch, tdtype)).detach()
    spec_t.requires_grad_(True)
    spec = tp.tensor(spec_t.detach().numpy(), requires_grad=True)
    ikw_tp = _stft_kwargs(n_fft, stft_kw, tp, dtype)
    ikw_t = _stft_kwargs(n_fft, stft_kw, torch, tdtype)
    for extra in ({}, {"length": shape[-1]}, {"length": shape[-1] - 3}):
        spec.grad = None
        spec_t.grad = None
        check(lambda t: tp.istft(t, n_fft, **ikw_tp, **extra),
              lambda t: torch.istft(t, n_fft, **ikw_t, **extra), spec, spec_t,
              dtype.to_complex())
    # the round trip gives the signal back
    x = tp.tensor(_array(shape, dtype))
    back = tp.istft(tp.stft(x, n_fft, return_complex=True, **ikw_tp), n_fft, length=shape[-1],
                    **ikw_tp)
    np.testing.assert_allclose(_numpy(back), _numpy(x), atol=TOL[dtype] * 100)


def test_istft_return_complex():
    a = _array((8, 12), tp.complex128)
    w = np.hanning(8)
    spec, spec_t = tp.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    check(lambda t: tp.istft(t, 8, 2, window=tp.tensor(w), onesided=False, return_complex=True),
          lambda t: torch.istft(t, 8, 2, window=torch.tensor(w), onesided=False,
                                return_complex=True), spec, spec_t, tp.complex128)


def test_stft_errors():
    x = tp.randn(100)
    with pytest.raises(ArgumentError, match=r"stft\(\): requires the return_complex parameter "
                                            r"be given for real inputs"):
        tp.stft(x, 16, window=tp.hann_window(16))
    with pytest.raises(ShapeError, match=r"stft\(\): expected a 1D window tensor of size equal "
                                         r"to win_length=16, but got window with size \[5\]"):
        tp.stft(x, 16, window=tp.ones(5), return_complex=True)
    with pytest.raises(ShapeError, match=r"stft\(\): expected 0 < n_fft < 10, but got n_fft=16"):
        tp.stft(tp.randn(10), 16, window=tp.ones(16), return_complex=True, center=False)
    with pytest.raises(ShapeError, match=r"stft\(\): expected a 1D or 2D tensor"):
        tp.stft(tp.randn(2, 2, 100), 16, window=tp.ones(16), return_complex=True)
    with pytest.raises(ArgumentError, match=r"stft\(\): align_to_window should only be set "
                                            r"when center = false"):
        tp.stft(x, 16, window=tp.ones(16), return_complex=True, align_to_window=True)
    with pytest.warns(UserWarning, match="A window was not provided"):
        tp.stft(x, 16, return_complex=True)
    with pytest.raises(DTypeError, match=r"istft\(\): requires a complex-valued input tensor"):
        tp.istft(tp.randn(9, 5), 16, window=tp.ones(16))
    spec = tp.stft(x, 16, window=tp.hann_window(16), return_complex=True)
    with pytest.raises(ShapeError, match=r"istft\(\): expected the frequency dimension \(3rd to "
                                         r"the last\) of the input tensor to match n_fft / 2 \+ 1"):
        tp.istft(spec, 20, window=tp.hann_window(20))
    with pytest.raises(ArgumentError, match=r"istft\(\): window overlap add min"):
        tp.istft(spec, 16, hop_length=16, window=tp.hann_window(16, periodic=False),
                 center=False)


# ---- cuda: the Stockham kernel and the host fallback, against the CPU -------------------------
def _cpu_and_cuda(shape, dtype, seed=0):
    a = _array(shape, dtype, seed)
    return (tp.tensor(a, requires_grad=True),
            tp.tensor(a, device="cuda", requires_grad=True))


def _same(cuda_t, cpu_t, dtype):
    g, w = _numpy(cuda_t), _numpy(cpu_t)
    assert g.shape == w.shape and g.dtype == w.dtype
    scale = max(1.0, float(np.abs(w).max())) if w.size else 1.0
    np.testing.assert_allclose(g, w, rtol=0, atol=TOL[dtype] * scale * 10)


CUDA_CASES = [
    ("fft", tp.complex64, (3, 16), {}),
    ("fft", tp.complex128, (2, 8), {"norm": "ortho"}),
    ("ifft", tp.complex128, (4, 8), {"dim": 0}),
    ("fft", tp.float32, (5, 8), {"n": 4}),
    ("rfft", tp.float64, (2, 32), {"norm": "forward"}),
    ("irfft", tp.complex128, (3, 5), {}),                     # n = 8
    ("hfft", tp.complex64, (2, 3), {}),                       # n = 4
    ("ihfft", tp.float64, (4, 8), {}),
    ("fft2", tp.complex128, (2, 4, 8), {}),
    ("rfftn", tp.float64, (4, 2, 8), {"norm": "ortho"}),
    ("irfftn", tp.complex128, (4, 2, 5), {}),
    ("fft", tp.complex128, (2, 1), {}),                       # n = 1
    ("fft", tp.complex128, (2, 6), {}),                       # host fallback
    ("rfft", tp.float32, (2, 12), {}),                        # host fallback
    ("irfft", tp.complex128, (2, 4), {"n": 7}),               # host fallback
    ("fftn", tp.complex64, (4, 3), {}),                       # host fallback (3)
]


@pytest.mark.parametrize("case", range(len(CUDA_CASES)))
def test_cuda_equals_cpu(case):
    name, dtype, shape, kw = CUDA_CASES[case]
    fn = getattr(tp.fft, name)
    x, xc = _cpu_and_cuda(shape, dtype)
    out, outc = fn(x, **kw), fn(xc, **kw)
    assert outc.device.type == "cuda"
    _same(outc, out, dtype)


@pytest.mark.parametrize("case", range(len(CUDA_CASES)))
def test_cuda_gradients_equal_cpu(case):
    name, dtype, shape, kw = CUDA_CASES[case]
    fn = getattr(tp.fft, name)
    x, xc = _cpu_and_cuda(shape, dtype)
    out, outc = fn(x, **kw), fn(xc, **kw)
    w = _weights(out)
    _linear_loss(out, w, tp).backward()
    _linear_loss(outc, w, tp).backward()
    _same(xc.grad, x.grad, dtype)


def test_cuda_host_fallback_is_logged(caplog):
    x = tp.tensor(_array((2, 6), tp.complex64), device="cuda")
    with caplog.at_level(logging.INFO, logger="tensorplay.dispatch"):
        tp.fft.fft(x)
    assert "_fft_c2c on cuda: a transformed length is not a power of two" in caplog.text
    caplog.clear()
    x = tp.tensor(_array((2, 8), tp.complex64), device="cuda")
    with caplog.at_level(logging.INFO, logger="tensorplay.dispatch"):
        tp.fft.fft(x)
    assert "host copy" not in caplog.text


def test_cuda_stft_round_trip():
    x = tp.tensor(_array((64,), tp.float32))
    w = tp.hann_window(16)
    spec = tp.stft(x, 16, window=w, return_complex=True)
    spec_c = tp.stft(x.to("cuda"), 16, window=w.to("cuda"), return_complex=True)
    _same(spec_c, spec, tp.float32)
    back = tp.istft(spec_c, 16, window=w.to("cuda"), length=64)
    np.testing.assert_allclose(_numpy(back), _numpy(x), atol=1e-5)


def test_stockham_kernel_against_numpy():
    """The kernel itself on (rows, n, 2) float pairs, both directions, with a scale."""
    from triton_kernels.fft import stockham
    for dtype, tol in ((tp.float32, 1e-5), (tp.float64, 1e-12)):
        for n in (1, 2, 4, 64):
            z = _array((3, n), tp.complex128)
            pairs = tp.tensor(np.stack([z.real, z.imag], -1), dtype=dtype, device="cuda")
            for forward in (True, False):
                r = _numpy(stockham(pairs, forward, 0.5))
                got = r[..., 0] + 1j * r[..., 1]
                want = 0.5 * (np.fft.fft(z, axis=1) if forward else n * np.fft.ifft(z, axis=1))
                np.testing.assert_allclose(got, want, atol=tol * max(1, np.abs(want).max()))


# ---- vmap: the three transforms' batching rule (their dims shifted past the batch dim) -------
@pytest.mark.parametrize("fn", [
    tp.fft.rfft, tp.fft.fft2, tp.fft.irfft, lambda t: tp.fft.hfftn(t, dim=(0, 1)),
    lambda t: tp.fft.ihfft(t, dim=0), lambda t: tp.fft.ifftn(tp.complex(t, t), dim=(1, 0)),
])
def test_vmap_equals_a_loop(fn):
    x = tp.tensor(_array((3, 4, 8), tp.float64))
    want = tp.stack([fn(x[i]) for i in range(3)])
    _close(tp.vmap(fn)(x), want.numpy(), tp.float64)
    _close(tp.vmap(fn, in_dims=1)(x), tp.stack([fn(x[:, i]) for i in range(4)]).numpy(),
           tp.float64)
