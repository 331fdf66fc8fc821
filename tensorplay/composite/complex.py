"""Complex numbers: the views of a complex tensor's parts, the accessors, the constructors.

A complex tensor holds (re, im) pairs side by side in memory, as NumPy and PyTorch lay
them out, so its parts are *views* of a float dtype over the same storage:

    z: complex64, sizes (3,), strides (1,), offset k
    view_as_real(z): float32, sizes (3, 2), strides (2, 1), offset 2k
    z.real = view_as_real(z)[..., 0]      z.imag = view_as_real(z)[..., 1]

Writes through them change `z` (`z.imag.zero_()`), and autograd follows them like any
view (tensorplay/autograd/inplace_views.py measures such a region in the parts' units).

`conj` is eager here: PyTorch gives a complex tensor a lazy "conjugate bit" that every
kernel must honour (a view whose reads are conjugated); TensorPlay copies instead, so
no kernel needs to know, at the cost of one pass over the data. `is_conj()` is
therefore always False, `resolve_conj()` returns its input, and `conj()` of a real
tensor is the tensor itself, as in PyTorch.
"""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay._generated import functional as F
from tensorplay._tensor import wrap
from tensorplay.composite.views import make_view
from tensorplay.errors import DTypeError, ShapeError


def view_as_real(self):
    """A complex tensor as a float tensor with a last dim of 2: (re, im), a view."""
    impl = self._impl
    if not impl.dtype.is_complex:
        raise DTypeError(f"view_as_real(): argument 'self' must be a complex tensor, but got "
                         f"a tensor of dtype {impl.dtype.name}", op="view_as_real",
                         arg="self")
    sizes = tuple(impl.sizes) + (2,)
    strides = tuple(2 * s for s in impl.strides) + (1,)
    out = make_view(self, sizes, strides, 2 * impl.offset, dtype=impl.dtype.to_real())
    if impl.base is None:
        # of the base itself: a rebuilt history replays it, as PyTorch's view_func does
        # (an as_strided of an expanded base would share each slot's gradient out)
        out._impl.replay = _view_as_real_recorded
    return out


def _view_as_real_recorded(base_impl):
    return F.view_as_real(wrap(base_impl))


# The float dtypes whose pairs are a complex dtype (NumPy has no complex32 for float16)
_PAIRED = (dt.float32, dt.float64)


def view_as_complex(self):
    """A float tensor with a last dim of 2 as a complex tensor (its pairs), a view."""
    op = "view_as_complex"
    impl = self._impl
    if impl.dtype not in _PAIRED:
        raise DTypeError(f"view_as_complex(): argument 'self' must be a float32 or float64 "
                         f"tensor, but got a tensor of dtype {impl.dtype.name}", op=op,
                         arg="self")
    sizes, strides = tuple(impl.sizes), tuple(impl.strides)
    if not sizes or sizes[-1] != 2:
        raise ShapeError(f"view_as_complex(): argument 'self' must have a last dimension of "
                         f"size 2, but got shape {list(sizes)}", op=op, arg="self")
    if strides[-1] != 1:
        raise ShapeError(f"view_as_complex(): argument 'self' must have a last dimension of "
                         f"stride 1, but got strides {list(strides)}", op=op, arg="self")
    if any(s % 2 for s in strides[:-1]) or impl.offset % 2:
        raise ShapeError(f"view_as_complex(): argument 'self' must have even strides and an "
                         f"even storage offset (whole complex numbers), but got strides "
                         f"{list(strides)} and offset {impl.offset}", op=op, arg="self")
    out = make_view(self, sizes[:-1], tuple(s // 2 for s in strides[:-1]), impl.offset // 2,
                    dtype=impl.dtype.to_complex())
    # a rebuilt history (after an in-place op on the base, in no_grad mode too) replays
    # the op, as PyTorch's view_func does: a strided window of the real base cannot stand
    # for a complex view, whose elements are pairs of the base's
    out._impl.replay = _view_as_complex_replay(impl)
    return out


def _view_as_complex_replay(impl):
    """view_as_complex of the base itself, or of a window of a real base (`self`'s
    sizes, strides and offset in the base's memory); None for other bases."""
    if impl.base is None:
        return lambda base_impl: F.view_as_complex(wrap(base_impl))
    if impl.base.dtype is not impl.dtype:
        return None
    sizes, strides, offset = tuple(impl.sizes), tuple(impl.strides), impl.offset
    return lambda base_impl: F.view_as_complex(
        F.as_strided(wrap(base_impl), sizes, strides, offset))


def real(self):
    """The real parts (a view) of a complex tensor; a real tensor itself."""
    if not self._impl.dtype.is_complex:
        return self
    return F.view_as_real(self).select(-1, 0)


def imag(self):
    """The imaginary parts (a view) of a complex tensor."""
    if not self._impl.dtype.is_complex:
        raise DTypeError("imag(): argument 'self' must be a complex tensor (imag is not "
                         f"implemented for tensors with non-complex dtypes), but got "
                         f"{self._impl.dtype.name}", op="imag", arg="self")
    return F.view_as_real(self).select(-1, 1)


def conj(self):
    """The complex conjugate: a copy for a complex tensor (see the module docstring), the
    tensor itself for a real one."""
    if not self._impl.dtype.is_complex:
        return self
    return F.conj_physical(self)


def conj_physical(self):
    """The complex conjugate in new memory; a real tensor itself (as PyTorch's)."""
    if not self._impl.dtype.is_complex:
        return self
    return F._conj_physical(self)


def conj_physical_kernel(self):
    """`_conj_physical`, the op with the derivative: the parts copied, the imaginary ones
    negated."""
    out = self.clone()
    F.view_as_real(out).select(-1, 1).neg_()
    return out


def conj_physical_(self):
    if self._impl.dtype.is_complex:
        F.view_as_real(self).select(-1, 1).neg_()
    else:
        self._impl.version.value += 1    # a write of the same values, as PyTorch counts it
    return self


def resolve_conj(self):
    """A tensor with its conjugate bit resolved: conj is eager here, so `self`."""
    return self


def resolve_neg(self):
    """A tensor with its negative bit resolved: there is no negative bit here, so `self`."""
    return self


def complex(real, imag):
    """real + 1j * imag, from two float tensors of one dtype (broadcast)."""
    _check_parts("complex", real, imag, ("real", "imag"))
    parts = F.stack(F.broadcast_tensors([real, imag]), -1)
    if parts._impl.dtype not in _PAIRED:     # the half types: NumPy has no complex32
        parts = parts.float()
    # A new tensor, as PyTorch's: a view of the temporary `parts` would make an in-place
    # write into the result (z.sub_(x)) a write into a view of a leaf (parts has no
    # history down here, below autograd), which autograd refuses.
    return F.view_as_complex(parts).clone()


def _check_parts(op, real, imag, args):
    """Two float tensors of one dtype, named `args` in `op`'s errors."""
    for arg, t in zip(args, (real, imag)):
        if t._impl.dtype not in (dt.float16,) + _PAIRED:
            raise DTypeError(f"{op}(): argument '{arg}' must be a float tensor (float16, "
                             f"float32 or float64), but got {t._impl.dtype.name}",
                             op=op, arg=arg)
    if real._impl.dtype is not imag._impl.dtype:
        raise DTypeError(f"{op}(): expected argument '{args[0]}' and '{args[1]}' to have the "
                         f"same dtype, but got {real._impl.dtype.name} and "
                         f"{imag._impl.dtype.name}", op=op, arg=args[1])


def polar(abs, angle):
    """abs * (cos(angle) + 1j * sin(angle)), from two float tensors of one dtype (checked
    before the products, which would promote a bool or integer one)."""
    _check_parts("polar", abs, angle, ("abs", "angle"))
    return complex(abs * F.cos(angle), abs * F.sin(angle))
