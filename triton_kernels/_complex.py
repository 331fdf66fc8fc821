"""Complex tensors as the Triton kernels see them: (re, im) float pairs.

Triton has no complex type. A complex tensor's memory is its (re, im) pairs side by
side (as NumPy and PyTorch lay it out), so every complex kernel works on a *float view*
of the same bytes:

    z: complex64, sizes (3,), strides (1,), offset k
    pairs(z):   float32, sizes (3, 2), strides (2, 1), offset 2k    (view_as_real)
    part(z, 0): float32, sizes (3,),   strides (2,),   offset 2k    (z.real)
    part(z, 1): float32, sizes (3,),   strides (2,),   offset 2k+1  (z.imag)

and back: `as_complex` of a float tensor with a last dim of 2 (view_as_complex).

These are the views of tensorplay/composite/complex.py built directly on the impl: a
kernel runs below autograd and only needs somewhere to read and write.

`copy_values` is every copy of the backend (copy_, clone, _to_copy, fill_): a real copy
is the pointwise template's `copy` kernel, a complex one the same kernel on the pairs.
"""
from __future__ import annotations

import numpy as np

from tensorplay._device_transfer import from_host
from tensorplay.kernel_support.results import TensorImpl, factory
from triton_kernels.pointwise import run


def _view(t, sizes, strides, offset):
    impl = t._impl
    return factory.wrap(TensorImpl(impl.storage, tuple(sizes), tuple(strides), offset,
                                   impl.dtype.to_real(), impl.device))


def pairs(t):
    """The complex tensor `t` as floats with a last dim of 2, (re, im): view_as_real."""
    impl = t._impl
    return _view(t, impl.sizes + (2,), tuple(2 * s for s in impl.strides) + (1,),
                 2 * impl.offset)


def as_complex(t):
    """The float tensor `t` with a last dim of 2 (stride 1, even strides and offset: a
    result the backend allocated) as the complex tensor of its pairs: view_as_complex."""
    impl = t._impl
    sizes, strides = impl.sizes[:-1], tuple(s // 2 for s in impl.strides[:-1])
    return factory.wrap(TensorImpl(impl.storage, tuple(sizes), strides, impl.offset // 2,
                                   impl.dtype.to_complex(), impl.device))


def part(t, k):
    """The real (k = 0) or imaginary (k = 1) parts of the complex tensor `t`, a view."""
    impl = t._impl
    return _view(t, impl.sizes, tuple(2 * s for s in impl.strides), 2 * impl.offset + k)


def copy_values(out, src):
    """out[...] = src (src broadcast to out's sizes), converting the dtype. Complex on
    either side is a copy of floats: pairs onto pairs; a real src into a complex out is its
    real part with 0 as the imaginary one; a complex src into a real out keeps the real
    part (PyTorch's cast discards the imaginary one)."""
    into, of = out._impl.dtype, src._impl.dtype
    if into.is_complex and of.is_complex:
        run("copy", pairs(out), (pairs(src),), of.to_real())
    elif into.is_complex:
        real = into.to_real()
        run("copy", part(out, 0), (src,), of)
        zero = from_host(np.zeros((), real.np), real, out._impl.device)
        run("copy", part(out, 1), (zero,), real)
    elif of.is_complex:
        run("copy", out, (part(src, 0),), of.to_real())
    else:
        run("copy", out, (src,), of)
    return out
