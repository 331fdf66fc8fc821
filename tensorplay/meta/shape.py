"""Shape/dtype rules of the shape ops that copy (cat, flip, roll, repeat,
repeat_interleave). Views are Composite and need none."""
from __future__ import annotations

from tensorplay._frontdoor import wrap_dim as _wrap_dim, wrap_dims
from tensorplay._promotion import result_type
from tensorplay.errors import ArgumentError, DimError, ShapeError
from tensorplay.kernel_support.arguments import cat_inputs, check_repeats_tensor
from tensorplay.kernel_support.checks import OutSpec, check_devices, wrap_dim


def _sizes(t):
    return t._impl.sizes


def flip(op, args):
    self, dims = args
    wrap_dims(op, "dims", dims, len(_sizes(self)))
    return OutSpec(_sizes(self), self._impl.dtype)


def cat(op, args):
    tensors, dim = args
    kept = cat_inputs(op, tensors)
    check_devices(op, [(f"tensors[{i}]", t) for i, t in enumerate(tensors)])
    if all(_sizes(t) == (0,) for t in tensors):
        # only legacy empties (all skipped): PyTorch returns one without reading `dim`
        return OutSpec((0,), result_type(*tensors))
    first = _sizes(kept[0])
    if not first:
        raise ShapeError(f"{op}(): zero-dimensional tensor (at position "
                         f"{tensors.index(kept[0])} of argument 'tensors') cannot be "
                         f"concatenated", op=op, arg="tensors")
    d = wrap_dim(op, dim, len(first))
    total = 0
    for t in kept:
        s = _sizes(t)
        i = next(k for k, u in enumerate(tensors) if u is t)
        if len(s) != len(first):
            raise ShapeError(f"{op}(): tensors must have the same number of dimensions: got "
                             f"{len(first)} and {len(s)} (tensors[{i}] in argument 'tensors')",
                             op=op, arg="tensors")
        for j, (a, b) in enumerate(zip(first, s)):
            if j != d and a != b:
                raise ShapeError(f"{op}(): sizes of tensors must match except in dimension "
                                 f"{d}. Expected size {a} but got size {b} for tensor number "
                                 f"{i} in the list (argument 'tensors')", op=op, arg="tensors")
        total += s[d]
    sizes = first[:d] + (total,) + first[d + 1:]
    return OutSpec(sizes, result_type(*tensors))


def roll(op, args):
    self, shifts, dims = args
    n = len(_sizes(self))
    if len(dims) == 0 and len(shifts) != 1:
        raise ArgumentError(f"{op}(): argument 'shifts' must hold one shift when 'dims' is "
                            f"empty, but got {list(shifts)}", op=op, arg="shifts")
    if len(dims) and len(shifts) != len(dims):
        raise ArgumentError(f"{op}(): arguments 'shifts' and 'dims' must align: shifts: "
                            f"{len(shifts)}, dims: {len(dims)}", op=op, arg="dims")
    # PyTorch returns an empty tensor's copy before it reads `dims`, and a 0-dim
    # tensor has no dimension to roll along (its usual [-1, 0] range does not apply).
    if self._impl.numel() and n == 0 and len(dims):
        raise DimError(f"{op}(): argument 'dims' names dimension {dims[0]}, but the "
                       f"tensor (argument 'self') has no dimensions", op=op, arg="dims")
    if self._impl.numel():
        for d in dims:
            _wrap_dim(op, "dims", d, n)
    return OutSpec(_sizes(self), self._impl.dtype)


def repeat(op, args):
    self, repeats = args
    sizes = _sizes(self)
    if len(repeats) < len(sizes):
        raise ShapeError(f"{op}(): number of dimensions of 'repeats' ({len(repeats)}) can not "
                         f"be smaller than number of dimensions of tensor ({len(sizes)})",
                         op=op, arg="repeats")
    if any(r < 0 for r in repeats):
        raise ArgumentError(f"{op}(): argument 'repeats' must be non-negative, but got "
                            f"{list(repeats)}", op=op, arg="repeats")
    padded = (1,) * (len(repeats) - len(sizes)) + tuple(sizes)
    return OutSpec(tuple(r * s for r, s in zip(repeats, padded)), self._impl.dtype)


def repeated_size(op, self, dim):
    """The length repeat_interleave repeats along: dim's size, or numel() when flattened."""
    sizes = _sizes(self)
    if dim is None or not sizes:
        if sizes:
            return self._impl.numel()
        if dim is not None:
            wrap_dim(op, dim, 0)
        return 1
    return sizes[wrap_dim(op, dim, len(sizes))]


def _repeat_interleave_sizes(op, self, count, dim):
    sizes = _sizes(self)
    if dim is None or not sizes:
        return (count,)
    d = wrap_dim(op, dim, len(sizes))
    return sizes[:d] + (count,) + sizes[d + 1:]


def repeat_interleave_int(op, args):
    self, repeats, dim, output_size = args
    if repeats < 0:
        raise ArgumentError(f"{op}(): argument 'repeats' must be non-negative, but got "
                            f"{repeats}", op=op, arg="repeats")
    n = repeated_size(op, self, dim)
    if output_size is not None and output_size != n * repeats:
        raise ArgumentError(f"{op}(): argument 'output_size' must be the repeated size "
                            f"{n * repeats}, but got {output_size}", op=op, arg="output_size")
    return OutSpec(_repeat_interleave_sizes(op, self, n * repeats, dim), self._impl.dtype)


def repeat_interleave_repeats(op, args):
    repeats, output_size = args
    check_repeats_tensor(op, repeats, _sizes(repeats)[0] if _sizes(repeats) else 1)
    if output_size is None:
        raise ArgumentError(f"{op}(): without data (a meta tensor) the output's size depends "
                            f"on the values of 'repeats': pass argument 'output_size'", op=op,
                            arg="output_size")
    return OutSpec((output_size,), repeats._impl.dtype)
