"""Database entries: the discrete Fourier transform (tp.fft) and the short-time transforms.

Each public function is one entry; its samples also reach the ATen transform it is built
from (_fft_r2c for a real input, _fft_c2c for a complex one or the n-dimensional forms,
_fft_c2r for irfft and hfft), which is how those three are covered. The samples walk the
n / s / dim / norm arguments and the memory layouts; a complex dtype is the complex
transform, an integer one is promoted to the default float as in PyTorch.

An FFT sums n terms of size ~3, so float32 results carry n times the rounding of one
term: the tolerances below are loosened for the single-precision dtypes.
"""
from __future__ import annotations

from functools import partial

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DimError, DTypeError, ShapeError
from opinfo.core import ErrorInput as E, OpInfo, make_tensor, rng_for, SampleInput as S

REAL = (tp.float32, tp.float64)
COMPLEX = (tp.complex64, tp.complex128)
TOL = {tp.float32: (1e-4, 1e-4), tp.complex64: (1e-4, 1e-4), tp.int64: (1e-4, 1e-4)}
LAYOUTS = ("contiguous", "transposed", "strided")
NORMS = (None, "backward", "ortho", "forward")


# Finite differences (gradcheck, gradgradcheck) nudge every input element and run the op
# again for each: on `cuda` in the Triton interpreter that is minutes for a sample of a
# hundred elements. The smaller samples are enough to check the formulas by finite
# differences (every sample's gradient is still compared with PyTorch's).
GRADCHECK_NUMEL = 24


def _one_gradcheck_on_cuda(samples_func):
    """samples_func with, on `cuda`, only its first sample fit for finite differences:
    there each nudge is a round of interpreted launches (the gradient of every sample is
    still compared with PyTorch's)."""
    def samples(op, device, dtype, requires_grad, **kw):
        out = list(samples_func(op, device, dtype, requires_grad, **kw))
        if device != "cuda":
            return out
        first = next((i for i, x in enumerate(out) if x.grad), None)
        return [S(x.input, x.args, x.kwargs, x.name, x.meta, x.grad and i == first)
                for i, x in enumerate(out)]
    return samples


def _sample(rng, shape, dtype, device, requires_grad, k, args=(), kwargs=None, name=""):
    grad = requires_grad and (dtype.is_floating_point or dtype.is_complex)
    x = make_tensor(shape, dtype, device, rng=rng, layout=LAYOUTS[k % 3], requires_grad=grad)
    return S(x, args, dict(kwargs or {}), name=f"{list(shape)} {LAYOUTS[k % 3]} {name}",
             grad=x.numel() <= GRADCHECK_NUMEL)


# ---- samples ----------------------------------------------------------------------------------
ONE_DIM_CASES = [
    ((8,), {}), ((3, 6), {"norm": "ortho"}), ((2, 3, 5), {"dim": 1, "norm": "forward"}),
    ((4, 6), {"n": 4}), ((3, 5), {"n": 9, "dim": 0, "norm": "backward"}),
    ((1, 4), {"dim": 0, "n": 3}),
]   # (no empty batch: PyTorch's MKL FFT refuses one)


def _one_dim_samples(op, device, dtype, requires_grad, half_input=False):
    """(x, n, dim, norm) cases; half_input: the input is a half spectrum (irfft, hfft),
    whose default n = 2 * (m - 1) needs m >= 2 along dim."""
    rng = rng_for(op.full_name, dtype)
    for k, (shape, kw) in enumerate(ONE_DIM_CASES):
        if half_input and "n" not in kw and shape[kw.get("dim", -1)] < 2:
            continue
        yield _sample(rng, shape, dtype, device, requires_grad, k, kwargs=kw, name=str(kw))


MULTI_DIM_CASES = [
    ((4, 6), {}), ((2, 4, 6), {"norm": "ortho"}), ((3, 4, 5), {"dim": (0, 2)}),
    ((3, 4, 5), {"s": (3, 8)}), ((3, 4, 5), {"s": (2, -1), "dim": (2, 0), "norm": "forward"}),
    ((2, 3, 4), {"dim": (-1,)}), ((3, 4), {"s": (2, 6), "norm": "ortho"}),
]
N_DIM_CASES = [((2, 3, 4), {}), ((2, 3, 4), {"s": (5,)}), ((3, 4), {"dim": (1, 0)})]


def _multi_dim_samples(op, device, dtype, requires_grad, n_dim=False):
    rng = rng_for(op.full_name, dtype)
    cases = MULTI_DIM_CASES + (N_DIM_CASES if n_dim else [])
    for k, (shape, kw) in enumerate(cases):
        yield _sample(rng, shape, dtype, device, requires_grad, k, kwargs=kw, name=str(kw))


def _shift_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    cases = [((7,), {}), ((4, 5), {}), ((4, 5), {"dim": 1}), ((3, 4, 5), {"dim": (0, 2)}),
             ((6, 3), {"dim": -2})]
    for k, (shape, kw) in enumerate(cases):
        yield _sample(rng, shape, dtype, device, requires_grad, k, kwargs=kw, name=str(kw))


def _window(lib, kind, n, dtype, device):
    dtype = dtype.to_real() if dtype.is_complex else dtype
    return getattr(lib, f"{kind}_window")(n, dtype=dtype, device=device)


def _stft_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    onesided = {} if not dtype.is_complex else {"onesided": False}
    cases = [
        ((64,), 16, {"hop_length": 4, "window": "hann"}),
        ((2, 48), 8, {"window": "hamming", "center": False}),
        ((40,), 16, {"window": "hann", "win_length": 10, "pad_mode": "constant",
                     "normalized": True}),
        ((40,), 8, {"window": "hann", "win_length": 5, "center": False,
                    "align_to_window": True}),
        ((20,), 8, {"window": "hann", "hop_length": 4}),
    ]
    for k, (shape, n_fft, kw) in enumerate(cases):
        kw = dict(kw, **onesided, return_complex=True)
        kw["window"] = _window(tp, kw["window"], kw.get("win_length", n_fft), dtype, device)
        yield _sample(rng, shape, dtype, device, requires_grad, k, (n_fft,), kw,
                      name=f"n_fft={n_fft}")


def _istft_samples(op, device, dtype, requires_grad):
    """Spectra of real signals (PyTorch's stft of them), so that the onesided inverse is
    the inverse of something; a complex signal's two-sided spectrum with return_complex."""
    rng = rng_for(op.full_name, dtype)
    real = dtype.to_real()
    cases = [((64,), 16, {"hop_length": 4}, False), ((2, 48), 8, {"normalized": True}, False),
             ((40,), 8, {"hop_length": 2, "length": 37}, False),
             ((40,), 8, {"hop_length": 2, "onesided": False, "return_complex": True}, True),
             ((16,), 8, {"hop_length": 4}, False)]
    for k, (shape, n_fft, kw, two_sided) in enumerate(cases):
        signal = make_tensor(shape, dtype if two_sided else real, rng=rng)
        stft_kw = {k2: v for k2, v in kw.items() if k2 in ("hop_length", "normalized",
                                                           "onesided")}
        window = torch.hann_window(n_fft, dtype=getattr(torch, real.name))
        spec = torch.stft(torch.from_numpy(signal.numpy()), n_fft, window=window,
                          return_complex=True, **stft_kw)
        x = tp.tensor(spec.resolve_conj().numpy(), dtype=dtype, device=device)
        x = x.detach().requires_grad_(requires_grad)
        kw = dict(kw, window=_window(tp, "hann", n_fft, dtype, device))
        yield S(x, (n_fft,), kw, name=f"{list(shape)} n_fft={n_fft} {list(kw)}",
                grad=x.numel() <= 2 * GRADCHECK_NUMEL)


# ---- error inputs -----------------------------------------------------------------------------
def _errors_one_dim(op, device, real_only=False):
    name = op.name
    x = tp.randn(4, 6, device=device)
    yield E(S(x, (), {"norm": "bad"}), ArgumentError,
            rf'{name}\(\): Invalid normalization mode: "bad"', arg="norm")
    yield E(S(x, (), {"dim": 3}), DimError, rf"{name}\(\): Dimension out of range \(expected "
            r"to be in range of \[-2, 1\], but got 3\)", arg="dim")
    yield E(S(x, (), {"n": 0}), ShapeError, rf"{name}\(\): Invalid number of data points "
            r"\(0\) specified", arg="n")
    yield E(S(tp.tensor(1.0, device=device)), DimError, rf"{name}\(\): Dimension specified as "
            r"-1 but tensor has no dimensions", arg="dim")
    if real_only:
        c = tp.complex(x, x)
        yield E(S(c), DTypeError, rf"{name}\(\): expects a real input tensor, but got "
                r"complex64", arg="input")


def _errors_multi_dim(op, device, real_only=False):
    name = op.name
    x = tp.randn(4, 6, device=device)
    yield E(S(x, (), {"norm": "bad"}), ArgumentError,
            rf'{name}\(\): Invalid normalization mode: "bad"', arg="norm")
    yield E(S(x, (), {"dim": (0, 0)}), DimError, rf"{name}\(\): FFT dims must be unique",
            arg="dim")
    yield E(S(x, (), {"s": (2,), "dim": (0, 1)}), ShapeError, rf"{name}\(\): When given, dim "
            r"and shape arguments must have the same length", arg="s")
    yield E(S(x, (), {"s": (2, 0)}), ShapeError, rf"{name}\(\): Invalid number of data "
            r"points \(0\) specified", arg="s")
    if real_only:
        c = tp.complex(x, x)
        yield E(S(c), DTypeError, rf"{name}\(\): expects a real input tensor", arg="input")


def _errors_n_dim(op, device, real_only=False):
    yield from _errors_multi_dim(op, device, real_only)
    x = tp.randn(4, 6, device=device)
    yield E(S(x, (), {"s": (2, 2, 2)}), ShapeError, rf"{op.name}\(\): Got shape with 3 values "
            r"but input tensor only has 2 dimensions", arg="s")
    if op.name in ("fft_rfftn", "fft_irfftn", "fft_hfftn", "fft_ihfftn"):
        yield E(S(x, (), {"dim": ()}), ShapeError, rf"{op.name}\(\): must transform at least "
                r"one axis", arg="dim")


def _errors_shift(op, device):
    yield E(S(tp.randn(4, 6, device=device), (), {"dim": 5}), DimError,
            rf"{op.name}\(\): Dimension out of range", arg="dim")


def _errors_stft(op, device):
    x = tp.randn(100, device=device)
    yield E(S(x, (16,), {"window": tp.hann_window(16, device=device)}), ArgumentError,
            r"stft\(\): requires the return_complex parameter be given for real inputs",
            arg="return_complex")
    yield E(S(x, (16,), {"window": tp.ones(5, device=device), "return_complex": True}),
            ShapeError, r"stft\(\): expected a 1D window tensor of size equal to "
            r"win_length=16, but got window with size \[5\]", arg="window")
    yield E(S(tp.randn(2, 2, 50, device=device), (16,),
              {"window": tp.ones(16, device=device), "return_complex": True}), ShapeError,
            r"stft\(\): expected a 1D or 2D tensor", arg="input")
    yield E(S(x, (16,), {"window": tp.ones(16, device=device), "return_complex": True,
                         "align_to_window": True}), ArgumentError,
            r"stft\(\): align_to_window should only be set when center = false",
            arg="align_to_window")


def _errors_istft(op, device):
    yield E(S(tp.randn(9, 5, device=device), (16,), {"window": tp.ones(16, device=device)}),
            DTypeError, r"istft\(\): requires a complex-valued input tensor", arg="input")
    spec = tp.complex(tp.randn(9, 5, device=device), tp.randn(9, 5, device=device))
    yield E(S(spec, (20,), {"window": tp.ones(20, device=device)}), ShapeError,
            r"istft\(\): expected the frequency dimension \(3rd to the last\) of the input "
            r"tensor to match n_fft / 2 \+ 1", arg="input")


# ---- the entries --------------------------------------------------------------------------------
def _entry(name, overloads, dtypes, samples, errors, **kw):
    return OpInfo(name, op=getattr(tp.fft, name[4:]), ref=getattr(torch.fft, name[4:]),
                  overloads=overloads, dtypes=dtypes, tolerances=TOL,
                  sample_inputs_func=_one_gradcheck_on_cuda(samples),
                  error_inputs_func=errors, **kw)


ANY = REAL + COMPLEX
FFT = [
    _entry("fft_fft", ("fft_fft", "_fft_r2c"), (tp.float32, tp.float64, tp.int64) + COMPLEX,
           _one_dim_samples, _errors_one_dim),
    _entry("fft_ifft", ("fft_ifft", "_fft_r2c"), ANY, _one_dim_samples, _errors_one_dim),
    _entry("fft_rfft", ("fft_rfft", "_fft_r2c"), REAL + (tp.int64,), _one_dim_samples,
           partial(_errors_one_dim, real_only=True)),
    _entry("fft_irfft", ("fft_irfft", "_fft_c2r"), ANY,
           partial(_one_dim_samples, half_input=True), _errors_one_dim),
    _entry("fft_hfft", ("fft_hfft", "_fft_c2r"), ANY, partial(_one_dim_samples, half_input=True),
           _errors_one_dim),
    _entry("fft_ihfft", ("fft_ihfft", "_fft_r2c"), REAL, _one_dim_samples,
           partial(_errors_one_dim, real_only=True)),
    _entry("fft_fft2", ("fft_fft2", "_fft_c2c"), ANY, _multi_dim_samples, _errors_multi_dim),
    _entry("fft_ifft2", ("fft_ifft2", "_fft_c2c"), ANY, _multi_dim_samples, _errors_multi_dim),
    _entry("fft_rfft2", ("fft_rfft2", "_fft_r2c"), REAL, _multi_dim_samples,
           partial(_errors_multi_dim, real_only=True)),
    _entry("fft_irfft2", ("fft_irfft2", "_fft_c2r"), ANY, _multi_dim_samples, _errors_multi_dim),
    _entry("fft_hfft2", ("fft_hfft2", "_fft_c2c", "_fft_c2r"), ANY, _multi_dim_samples,
           _errors_multi_dim),
    _entry("fft_ihfft2", ("fft_ihfft2", "_fft_r2c", "_fft_c2c"), REAL, _multi_dim_samples,
           partial(_errors_multi_dim, real_only=True)),
    _entry("fft_fftn", ("fft_fftn", "_fft_c2c"), ANY, partial(_multi_dim_samples, n_dim=True),
           _errors_n_dim),
    _entry("fft_ifftn", ("fft_ifftn", "_fft_c2c"), ANY, partial(_multi_dim_samples, n_dim=True),
           _errors_n_dim),
    _entry("fft_rfftn", ("fft_rfftn", "_fft_r2c"), REAL, partial(_multi_dim_samples, n_dim=True),
           partial(_errors_n_dim, real_only=True)),
    _entry("fft_irfftn", ("fft_irfftn", "_fft_c2r"), ANY,
           partial(_multi_dim_samples, n_dim=True), _errors_n_dim),
    _entry("fft_hfftn", ("fft_hfftn", "_fft_c2c", "_fft_c2r"), ANY,
           partial(_multi_dim_samples, n_dim=True), _errors_n_dim),
    _entry("fft_ihfftn", ("fft_ihfftn", "_fft_r2c", "_fft_c2c"), REAL,
           partial(_multi_dim_samples, n_dim=True), partial(_errors_n_dim, real_only=True)),
    _entry("fft_fftshift", ("fft_fftshift",), ANY + (tp.int64,), _shift_samples, _errors_shift),
    _entry("fft_ifftshift", ("fft_ifftshift",), ANY + (tp.int64,), _shift_samples,
           _errors_shift),
]

STFT = [
    OpInfo("stft", overloads=("stft", "_fft_r2c"), dtypes=ANY, tolerances=TOL,
           sample_inputs_func=_one_gradcheck_on_cuda(_stft_samples),
           error_inputs_func=_errors_stft),
    OpInfo("istft", overloads=("istft", "_fft_c2r"), dtypes=COMPLEX, tolerances=TOL,
           sample_inputs_func=_one_gradcheck_on_cuda(_istft_samples),
           error_inputs_func=_errors_istft),
]

op_db = FFT + STFT
