"""The public FFT functions (tp.fft.*) and the short-time transforms (tp.stft, tp.istft),
written as PyTorch writes them (aten/src/ATen/native/SpectralOps.cpp) over three ops:

    _fft_c2c   complex -> complex          fft, ifft, fftn, ifftn (complex input), the
                                           non-Hermitian dims of hfftn / ihfftn
    _fft_r2c   real -> complex (forward)   fft / ifft of a real input, rfft, ihfft, rfftn
    _fft_c2r   complex half -> real        irfft, hfft, irfftn, hfftn

The inverse transforms of a real input are conjugated forward ones (the DFT of a real x
satisfies ifft(x) = conj(fft(x)) / n), and the Hermitian ones (hfft: the signal is the
half spectrum of a real one) conjugate the input of an inverse: so two real transforms,
each one way, serve all six real functions. Their graphs record themselves: each of the
three ops has its formula in derivatives.yaml.

`norm` picks which direction carries the 1/n: "backward" (the default) the inverse,
"forward" the forward one, "ortho" both 1/sqrt(n) (PyTorch's norm_from_string turns it
into the op's `normalization`, which says what *this* transform multiplies by).
"""
from __future__ import annotations

import warnings

from tensorplay import _creation
from tensorplay._generated import functional as F
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.meta.fft import BY_N, BY_ROOT_N, NONE, fft_dtype, wrap_fft_dim, \
    wrap_fft_dims


# ---- the pieces every function shares ------------------------------------------------------
def norm_mode(op, norm, forward):
    """PyTorch's norm_from_string: the factor this transform multiplies by."""
    if norm is None or norm == "backward":
        return NONE if forward else BY_N
    if norm == "forward":
        return BY_N if forward else NONE
    if norm == "ortho":
        return BY_ROOT_N
    raise ArgumentError(f'{op}(): Invalid normalization mode: "{norm}" (argument \'norm\' '
                        f'must be "backward", "forward", "ortho" or None)', op=op, arg="norm")


def _promote(op, x, require_complex):
    """PyTorch's promote_tensor_fft (meta.fft.fft_dtype says to what)."""
    dtype = fft_dtype(op, x.dtype, require_complex)
    return x if x.dtype is dtype else x.to(dtype)


def _check_points(op, n, arg):
    if n < 1:
        raise ShapeError(f"{op}(): Invalid number of data points ({n}) specified (argument "
                         f"'{arg}')", op=op, arg=arg)


def _resize(x, dims, sizes):
    """x with x.size(dims[i]) == sizes[i]: the first sizes[i] elements, or zeros appended
    (PyTorch's resize_fft_input: `n` larger than the signal pads it, smaller crops it)."""
    pad = [0] * (2 * x.dim())
    must_pad = False
    for d, n in zip(dims, sizes):
        have = x.shape[d]
        if have > n:
            x = x.narrow(d, 0, n)
        elif have < n:
            pad[2 * (x.dim() - 1 - d) + 1] = n - have    # constant_pad_nd: last dim first
            must_pad = True
    return F.constant_pad_nd(x, pad) if must_pad else x


def _check_real_input(op, x):
    if x.dtype.is_complex:
        raise DTypeError(f"{op}(): expects a real input tensor, but got {x.dtype.name} "
                         f"(argument 'input')", op=op, arg="input")


# ---- one dimension -----------------------------------------------------------------------
def _c2c(op, x, n, dim, norm, forward):
    d = wrap_fft_dim(op, dim, x.dim())
    if n is not None:
        _check_points(op, n, "n")
        x = _resize(x, [d], [n])
    else:
        _check_points(op, x.shape[d], "n")
    return F._fft_c2c(x, [d], norm_mode(op, norm, forward), forward)


def _r2c(op, x, n, dim, norm, forward, onesided):
    _check_real_input(op, x)
    x = _promote(op, x, require_complex=False)
    d = wrap_fft_dim(op, dim, x.dim())
    if n is not None:
        _check_points(op, n, "n")
        x = _resize(x, [d], [n])
    else:
        _check_points(op, x.shape[d], "n")
    result = F._fft_r2c(x, [d], norm_mode(op, norm, forward), onesided)
    return result if forward else F.conj(result)


def _c2r(op, x, n, dim, norm, forward):
    """irfft (forward=False) and hfft (forward=True: the conjugated input, transformed
    the inverse way, is the forward transform of a Hermitian signal)."""
    x = _promote(op, x, require_complex=True)
    d = wrap_fft_dim(op, dim, x.dim())
    last_dim_size = n if n is not None else 2 * (x.shape[d] - 1)
    _check_points(op, last_dim_size, "n")
    if n is not None:
        x = _resize(x, [d], [n // 2 + 1])
    if forward:
        x = F.conj(x)
    return F._fft_c2r(x, [d], norm_mode(op, norm, forward), last_dim_size)


def fft_fft(self, n, dim, norm):
    if self.dtype.is_complex:
        return _c2c("fft_fft", self, n, dim, norm, forward=True)
    return _r2c("fft_fft", self, n, dim, norm, forward=True, onesided=False)


def fft_ifft(self, n, dim, norm):
    if self.dtype.is_complex:
        return _c2c("fft_ifft", self, n, dim, norm, forward=False)
    return _r2c("fft_ifft", self, n, dim, norm, forward=False, onesided=False)


def fft_rfft(self, n, dim, norm):
    return _r2c("fft_rfft", self, n, dim, norm, forward=True, onesided=True)


def fft_irfft(self, n, dim, norm):
    return _c2r("fft_irfft", self, n, dim, norm, forward=False)


def fft_hfft(self, n, dim, norm):
    return _c2r("fft_hfft", self, n, dim, norm, forward=True)


def fft_ihfft(self, n, dim, norm):
    return _r2c("fft_ihfft", self, n, dim, norm, forward=False, onesided=True)


# ---- several dimensions ------------------------------------------------------------------
def _shape_and_dims(op, x, s, dim):
    """PyTorch's canonicalize_fft_shape_and_dim_args: the dims to transform and the
    length of each. `s` alone means the last len(s) dims; `dim` alone their own lengths;
    neither, every dim; an entry -1 in `s` keeps that dim's length."""
    ndim = x.dim()
    dims = wrap_fft_dims(op, list(dim), ndim) if dim is not None else None
    if s is not None:
        s = list(s)
        if dims is not None and len(dims) != len(s):
            raise ShapeError(f"{op}(): When given, dim and shape arguments must have the "
                             f"same length, but got s={s} and dim={list(dim)} (argument "
                             f"'s')", op=op, arg="s")
        if len(s) > ndim:
            raise ShapeError(f"{op}(): Got shape with {len(s)} values but input tensor only "
                             f"has {ndim} dimensions (argument 's')", op=op, arg="s")
        if dims is None:
            dims = list(range(ndim - len(s), ndim))
        shape = [x.shape[d] if n == -1 else n for d, n in zip(dims, s)]
    else:
        if dims is None:
            dims = list(range(ndim))
        shape = [x.shape[d] for d in dims]
    for n in shape:
        _check_points(op, n, "s")
    return shape, dims


def _at_least_one(op, dims):
    if not dims:
        raise ShapeError(f"{op}(): must transform at least one axis (arguments 's' and "
                         f"'dim' name none)", op=op, arg="dim")


def _c2r_shape_and_dims(op, x, s, dim):
    """As _shape_and_dims, for a Hermitian half spectrum: the signal's length along the
    last dim (2 * (m - 1) by default) and the half (n // 2 + 1) the input is cut to."""
    shape, dims = _shape_and_dims(op, x, s, dim)
    _at_least_one(op, dims)
    if s is None or list(s)[-1] == -1:
        last_dim_size = 2 * (x.shape[dims[-1]] - 1)
    else:
        last_dim_size = shape[-1]
    _check_points(op, last_dim_size, "s")
    shape[-1] = last_dim_size // 2 + 1
    return shape, dims, last_dim_size


def _fftn(op, self, s, dim, norm, forward):
    shape, dims = _shape_and_dims(op, self, s, dim)
    x = _resize(_promote(op, self, require_complex=True), dims, shape)
    return F._fft_c2c(x, dims, norm_mode(op, norm, forward), forward)


def _rfftn(op, self, s, dim, norm):
    _check_real_input(op, self)
    shape, dims = _shape_and_dims(op, self, s, dim)
    _at_least_one(op, dims)
    x = _resize(_promote(op, self, require_complex=False), dims, shape)
    return F._fft_r2c(x, dims, norm_mode(op, norm, True), True)


def _irfftn(op, self, s, dim, norm):
    shape, dims, last_dim_size = _c2r_shape_and_dims(op, self, s, dim)
    x = _resize(_promote(op, self, require_complex=True), dims, shape)
    return F._fft_c2r(x, dims, norm_mode(op, norm, False), last_dim_size)


def _hfftn(op, self, s, dim, norm):
    """The c2c transform over every dim but the last, then hfft along the last."""
    shape, dims, last_dim_size = _c2r_shape_and_dims(op, self, s, dim)
    x = _resize(_promote(op, self, require_complex=True), dims, shape)
    mode = norm_mode(op, norm, True)
    if len(dims) > 1:
        x = F._fft_c2c(x, dims[:-1], mode, True)
    return F._fft_c2r(F.conj(x), [dims[-1]], mode, last_dim_size)


def _ihfftn(op, self, s, dim, norm):
    """ihfft along the last dim (a conjugated rfft: the inverse transform of a real
    signal), then the inverse c2c over the rest."""
    _check_real_input(op, self)
    shape, dims = _shape_and_dims(op, self, s, dim)
    _at_least_one(op, dims)
    x = _resize(_promote(op, self, require_complex=False), dims, shape)
    mode = norm_mode(op, norm, False)
    half = F.conj(F._fft_r2c(x, [dims[-1]], mode, True))
    if len(dims) == 1:
        return half
    return F._fft_c2c(half, dims[:-1], mode, False)


def fft_fft2(self, s, dim, norm):
    return _fftn("fft_fft2", self, s, dim, norm, forward=True)


def fft_ifft2(self, s, dim, norm):
    return _fftn("fft_ifft2", self, s, dim, norm, forward=False)


def fft_fftn(self, s, dim, norm):
    return _fftn("fft_fftn", self, s, dim, norm, forward=True)


def fft_ifftn(self, s, dim, norm):
    return _fftn("fft_ifftn", self, s, dim, norm, forward=False)


def fft_rfft2(self, s, dim, norm):
    return _rfftn("fft_rfft2", self, s, dim, norm)


def fft_rfftn(self, s, dim, norm):
    return _rfftn("fft_rfftn", self, s, dim, norm)


def fft_irfft2(self, s, dim, norm):
    return _irfftn("fft_irfft2", self, s, dim, norm)


def fft_irfftn(self, s, dim, norm):
    return _irfftn("fft_irfftn", self, s, dim, norm)


def fft_hfft2(self, s, dim, norm):
    return _hfftn("fft_hfft2", self, s, dim, norm)


def fft_hfftn(self, s, dim, norm):
    return _hfftn("fft_hfftn", self, s, dim, norm)


def fft_ihfft2(self, s, dim, norm):
    return _ihfftn("fft_ihfft2", self, s, dim, norm)


def fft_ihfftn(self, s, dim, norm):
    return _ihfftn("fft_ihfftn", self, s, dim, norm)


# ---- fftshift / ifftshift -------------------------------------------------------------------
def _shift(op, x, dim, inverse):
    """The zero frequency moved to the middle (fftshift: roll by n // 2 along each dim)
    and back (ifftshift: by (n + 1) // 2, which undoes it for odd n too)."""
    if dim is None:
        dims = list(range(x.dim()))
    else:
        dims = [wrap_fft_dim(op, d, x.dim()) for d in ([dim] if isinstance(dim, int)
                                                        else dim)]
    if not dims:
        return x.clone()
    shifts = [(x.shape[d] + 1) // 2 if inverse else x.shape[d] // 2 for d in dims]
    return F.roll(x, shifts, dims)


def fft_fftshift(self, dim):
    return _shift("fft_fftshift", self, dim, inverse=False)


def fft_ifftshift(self, dim):
    return _shift("fft_ifftshift", self, dim, inverse=True)


# ---- the short-time transforms ---------------------------------------------------------------
def _stft_window(window, win_length, n_fft, like):
    """The window zero-padded on both sides to n_fft samples (centred, the extra sample on
    the right); no window is a rectangular one (ones) of win_length."""
    if window is None:
        if win_length == n_fft:
            return None
        window = _creation.ones(win_length, dtype=like.dtype.to_real() if like.dtype.is_complex
                                else like.dtype, device=like.device)
    left = (n_fft - win_length) // 2
    if win_length < n_fft:
        window = F.constant_pad_nd(window, [left, n_fft - win_length - left])
    return window


def stft(self, n_fft, hop_length, win_length, window, center, pad_mode, normalized,
         onesided, return_complex, align_to_window):
    """PyTorch's torch.stft (torch/functional.py: the centre padding) and at::stft (the
    frames, each windowed and transformed): (batch?, freq, frames) complex values."""
    op = "stft"
    if window is None:
        warnings.warn("stft(): A window was not provided. A rectangular window will be "
                      "applied, which is known to cause spectral leakage. Other windows such "
                      "as tp.hann_window or tp.hamming_window are recommended to reduce "
                      "spectral leakage. To suppress this warning and use a rectangular "
                      "window, explicitly set `window=tp.ones(n_fft)`.", UserWarning,
                      stacklevel=4)
    if return_complex is None:
        return_complex = self.dtype.is_complex or (window is not None and
                                                   window.dtype.is_complex)
        if not return_complex:
            raise ArgumentError("stft(): requires the return_complex parameter be given for "
                                "real inputs (argument 'return_complex'), and "
                                "return_complex=True is the form to use: the result's real "
                                "view is tp.view_as_real(result)", op=op,
                                arg="return_complex")
    if not return_complex:
        warnings.warn("stft(): return_complex=False is deprecated, as in PyTorch: pass "
                      "return_complex=True and call tp.view_as_real on the result for the "
                      "old format", UserWarning, stacklevel=4)
    if center:
        if align_to_window is not None:
            raise ArgumentError("stft(): align_to_window should only be set when center = "
                                "false (argument 'align_to_window')", op=op,
                                arg="align_to_window")
        ndim = self.dim()
        if ndim in (1, 2):
            pad = n_fft // 2
            extended = self.view([1] * (3 - ndim) + list(self.shape))
            self = F.pad(extended, [pad, pad], pad_mode).view(
                list(self.shape[:-1]) + [self.shape[-1] + 2 * pad])
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    dtype = self.dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        raise DTypeError(f"stft(): expected a tensor of floating point or complex values, "
                         f"but got {dtype.name} (argument 'input')", op=op, arg="input")
    if self.dim() not in (1, 2):
        raise ShapeError(f"stft(): expected a 1D or 2D tensor, but got shape "
                         f"{fmt_shape(self.shape)} (argument 'input')", op=op, arg="input")
    x = self.unsqueeze(0) if self.dim() == 1 else self
    length = x.shape[1]
    if n_fft <= 0 or n_fft > length:
        raise ShapeError(f"stft(): expected 0 < n_fft < {length}, but got n_fft={n_fft} "
                         f"(argument 'n_fft')", op=op, arg="n_fft")
    if hop_length <= 0:
        raise ArgumentError(f"stft(): expected hop_length > 0, but got hop_length="
                            f"{hop_length} (argument 'hop_length')", op=op, arg="hop_length")
    if win_length <= 0 or win_length > n_fft:
        raise ArgumentError(f"stft(): expected 0 < win_length <= n_fft, but got win_length="
                            f"{win_length} (argument 'win_length')", op=op, arg="win_length")
    if window is not None and (window.dim() != 1 or window.shape[0] != win_length):
        raise ShapeError(f"stft(): expected a 1D window tensor of size equal to win_length="
                         f"{win_length}, but got window with size {fmt_shape(window.shape)} "
                         f"(argument 'window')", op=op, arg="window")
    if align_to_window and win_length < n_fft:
        # frames start where their (centred) window starts: pad as the window was padded
        left = (n_fft - win_length) // 2
        x = F.constant_pad_nd(x, [left, n_fft - win_length - left])
    window = _stft_window(window, win_length, n_fft, self)
    frames = x.unfold(1, n_fft, hop_length)         # (batch, n_frames, n_fft), a view
    if window is not None:
        frames = frames * window
    complex_fft = frames.dtype.is_complex
    onesided = (not complex_fft) if onesided is None else onesided
    mode = BY_ROOT_N if normalized else NONE
    if complex_fft:
        if onesided:
            raise ArgumentError("stft(): Cannot have onesided output if window or input is "
                                "complex (argument 'onesided')", op=op, arg="onesided")
        spectrum = F._fft_c2c(frames, [2], mode, True)
    else:
        spectrum = F._fft_r2c(frames, [2], mode, onesided)
    spectrum = spectrum.transpose(1, 2)             # (batch, freq, n_frames)
    if self.dim() == 1:
        spectrum = spectrum.squeeze(0)
    return spectrum if return_complex else F.view_as_real(spectrum)


def _overlap_add(frames, length, hop_length):
    """Sum the frames (batch, n_frames, n_fft), frame k placed at k * hop_length, into
    signals (batch, length): the transpose of unfold, done by fold (col2im) with a 1 x n_fft
    kernel."""
    batch, n_frames, n_fft = frames.shape
    cols = frames.transpose(1, 2)                   # (batch, n_fft, n_frames): columns
    signal = F.col2im(cols, [1, length], [1, n_fft], [1, 1], [0, 0], [1, hop_length])
    return signal.view([batch, length])


def istft(self, n_fft, hop_length, win_length, window, center, normalized, onesided,
          length, return_complex):
    """PyTorch's at::istft: each frame transformed back, windowed again and overlap-added,
    divided by the overlap-added squared window (so stft then istft gives the signal back
    where that envelope is not zero)."""
    op = "istft"
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if not self.dtype.is_complex:
        raise DTypeError("istft(): requires a complex-valued input tensor matching the "
                         "output from stft with return_complex=True (argument 'input' is "
                         f"{self.dtype.name})", op=op, arg="input")
    if window is None:
        warnings.warn("istft(): A window was not provided. A rectangular window will be "
                      "applied. Please provide the same window used by stft to make the "
                      "inversion lossless. To suppress this warning and use a rectangular "
                      "window, explicitly set `window=tp.ones(n_fft)`.", UserWarning,
                      stacklevel=4)
    if self.numel() == 0:
        raise ShapeError("istft(): input tensor cannot be empty (argument 'input')", op=op,
                         arg="input")
    if self.dim() not in (2, 3):
        raise ShapeError(f"istft(): expected a tensor with 2 or 3 dimensions of complex, but "
                         f"got shape {fmt_shape(self.shape)} (argument 'input')", op=op,
                         arg="input")
    n_frames = self.shape[-1]
    fft_size = self.shape[-2]
    expected_len = n_fft + hop_length * (n_frames - 1)
    onesided = (fft_size != n_fft) if onesided is None else onesided
    if onesided and n_fft // 2 + 1 != fft_size:
        raise ShapeError(f"istft(): expected the frequency dimension (3rd to the last) of the "
                         f"input tensor to match n_fft / 2 + 1 when onesided=True, but got "
                         f"{fft_size} (argument 'input')", op=op, arg="input")
    if not onesided and n_fft != fft_size:
        raise ShapeError(f"istft(): expected the frequency dimension (3rd to the last) of the "
                         f"input tensor to match n_fft when onesided=False, but got "
                         f"{fft_size} (argument 'input')", op=op, arg="input")
    if not 0 < win_length <= n_fft:
        raise ArgumentError(f"istft(): expected 0 < win_length <= n_fft, but got win_length="
                            f"{win_length} (argument 'win_length')", op=op, arg="win_length")
    if not 0 < hop_length <= win_length:
        raise ArgumentError(f"istft(): expected 0 < hop_length <= win_length, but got "
                            f"hop_length={hop_length} (argument 'hop_length')", op=op,
                            arg="hop_length")
    if window is not None and (window.dim() != 1 or window.shape[0] != win_length):
        raise ShapeError(f"istft(): Invalid window shape. window has to be 1D and length of "
                         f"`win_length` ({win_length}), but got {fmt_shape(window.shape)} "
                         f"(argument 'window')", op=op, arg="window")
    real_dtype = self.dtype.to_real()
    if window is None:
        window = _creation.ones(win_length, dtype=real_dtype, device=self.device)
    if win_length != n_fft:
        left = (n_fft - win_length) // 2
        window = F.constant_pad_nd(window, [left, n_fft - win_length - left])

    x = self.unsqueeze(0) if self.dim() == 2 else self
    x = x.transpose(1, 2)                           # (batch, n_frames, freq)
    mode = BY_ROOT_N if normalized else BY_N
    if return_complex:
        if onesided:
            raise ArgumentError("istft(): Cannot have onesided output if window or input is "
                                "complex (argument 'onesided')", op=op, arg="onesided")
        frames = F._fft_c2c(x, [2], mode, False)
    else:
        if window.dtype.is_complex:
            raise DTypeError("istft(): Complex windows are incompatible with "
                             "return_complex=False (argument 'window')", op=op, arg="window")
        if not onesided:
            x = x.narrow(2, 0, n_fft // 2 + 1)
        frames = F._fft_c2r(x, [2], mode, n_fft)
    frames = frames * window.view([1, 1, n_fft])    # (batch, n_frames, n_fft)

    if frames.dtype.is_complex:
        y = F.complex(_overlap_add(F.real(frames), expected_len, hop_length),
                      _overlap_add(F.imag(frames), expected_len, hop_length))
    else:
        y = _overlap_add(frames, expected_len, hop_length)
    squared = (window.abs() ** 2 if window.dtype.is_complex else window * window)
    envelope = _overlap_add(squared.view([1, 1, n_fft]).expand([1, n_frames, n_fft]),
                            expected_len, hop_length)

    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    elif center:
        end = expected_len - n_fft // 2
    else:
        end = expected_len
    stop = min(end, expected_len)
    y = y.narrow(1, start, stop - start)
    envelope = envelope.narrow(1, start, stop - start)
    # (a meta tensor has no values to look at: the check is for real data only)
    if envelope.device.type != "meta" and bool((envelope.abs() < 1e-11).any()):
        raise ArgumentError("istft(): window overlap add min: the squared windows, "
                            "overlap-added, are (nearly) zero somewhere, so the signal "
                            "cannot be recovered there (arguments 'window', 'hop_length')",
                            op=op, arg="window")
    y = y / envelope
    if self.dim() == 2:
        y = y.squeeze(0)
    if end > expected_len:
        warnings.warn("istft(): The length of signal is shorter than the length parameter. "
                      "Result is being padded with zeros in the tail. Please check your "
                      "center and hop_length settings.", UserWarning, stacklevel=4)
        y = F.constant_pad_nd(y, [0, end - expected_len])
    return y
