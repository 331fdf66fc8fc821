"""Shape/dtype rules of the reduction family's linear algebra: mv, dot, addmm, baddbmm,
linear, einsum (with its equation parser, shared by the kernel and the backward),
tril/triu and diag."""
from __future__ import annotations

import string
from dataclasses import dataclass

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.meta.overlap import assert_no_internal_overlap
from tensorplay.meta.rules import (
    OutSpec, SELF, broadcast, check_devices,
)


def _sizes(t):
    return t._impl.sizes


def same_dtype(op, named):
    (first, a), rest = named[0], named[1:]
    for name, t in rest:
        if t._impl.dtype is not a._impl.dtype:
            raise DTypeError(f"{op}(): expected '{first}' and '{name}' to have the same dtype, "
                             f"but got: {a._impl.dtype.name} != {t._impl.dtype.name}", op=op,
                             arg=name)


def check_rank(op, name, t, ranks, what):
    if len(_sizes(t)) not in ranks:
        raise ShapeError(f"{op}(): argument '{name}' must be {what}, but got "
                         f"{len(_sizes(t))}-D shape {fmt_shape(_sizes(t))}", op=op, arg=name)


# ---- products --------------------------------------------------------------------------
def mv(op, args):
    """self @ vec (addmv calls it with its own argument `mat` as the matrix)."""
    self, vec = args
    name = "mat" if op.startswith("addmv") else "self"
    check_rank(op, name, self, (2,), "a matrix (2-D)")
    check_rank(op, "vec", vec, (1,), "a vector (1-D)")
    if _sizes(self)[1] != _sizes(vec)[0]:
        raise ShapeError(f"{op}(): '{name}' and 'vec' shapes cannot be multiplied "
                         f"({_sizes(self)[0]}x{_sizes(self)[1]} and {_sizes(vec)[0]})", op=op,
                         arg="vec")
    same_dtype(op, [(name, self), ("vec", vec)])
    check_devices(op, [(name, self), ("vec", vec)])
    return OutSpec((_sizes(self)[0],), self._impl.dtype)


def dot(op, args):
    self, tensor = args
    check_rank(op, "self", self, (1,), "a vector (1-D)")
    check_rank(op, "tensor", tensor, (1,), "a vector (1-D)")
    if _sizes(self) != _sizes(tensor):
        raise ShapeError(f"{op}(): inconsistent tensor size, expected 'self' "
                         f"{fmt_shape(_sizes(self))} and 'tensor' {fmt_shape(_sizes(tensor))} "
                         f"to have the same number of elements", op=op, arg="tensor")
    same_dtype(op, [("self", self), ("tensor", tensor)])
    check_devices(op, [("self", self), ("tensor", tensor)])
    return OutSpec((), self._impl.dtype)


def _product(op, a, b, names, rank):
    """The shape of names[0] @ names[1] for two matrices (rank 2) or two batches (rank 3)."""
    what = "a matrix (2-D)" if rank == 2 else "a batch of matrices (3-D)"
    check_rank(op, names[0], a, (rank,), what)
    check_rank(op, names[1], b, (rank,), what)
    sa, sb = _sizes(a), _sizes(b)
    if rank == 3 and sa[0] != sb[0]:
        raise ShapeError(f"{op}(): batch sizes differ: '{names[0]}' has {sa[0]}, '{names[1]}' "
                         f"has {sb[0]}", op=op, arg=names[1])
    if sa[-1] != sb[-2]:
        raise ShapeError(f"{op}(): '{names[0]}' and '{names[1]}' shapes cannot be multiplied "
                         f"({sa[-2]}x{sa[-1]} and {sb[-2]}x{sb[-1]})", op=op, arg=names[1])
    return sa[:-1] + sb[-1:]


def _add_product(op, args, names, rank):
    """beta * self + alpha * (names[1] @ names[2]): self broadcasts to the product.
    rank: 2 (matrices), 3 (batches) or 1 (a matrix times a vector)."""
    self, a, b = args[:3]
    if rank == 1:
        sizes = mv(op, (a, b)).sizes
    else:
        sizes = _product(op, a, b, names[1:], rank)
    named = list(zip(names, (self, a, b)))
    same_dtype(op, named[1:] + named[:1])
    check_devices(op, named)
    if broadcast(op, [("product", sizes), ("self", _sizes(self))]) != sizes:
        raise ShapeError(f"{op}(): argument 'self' (shape {fmt_shape(_sizes(self))}) cannot be "
                         f"broadcast to the product's shape {fmt_shape(sizes)}", op=op,
                         arg="self")
    if op.endswith("_"):
        if sizes != _sizes(self):
            raise ShapeError(f"{op}(): argument 'self' (shape {fmt_shape(_sizes(self))}) must "
                             f"have the product's shape {fmt_shape(sizes)} in-place", op=op,
                             arg="self")
        if rank == 2:
            # PyTorch's addmm_ computes into a dense matrix and copies that into self
            # (addmv_ and baddbmm_ write through self's strides and do not check)
            assert_no_internal_overlap(op, self)
        return SELF
    return OutSpec(sizes, self._impl.dtype)


def addmm(op, args):
    return _add_product(op, args, ("self", "mat1", "mat2"), 2)


def addmv(op, args):
    return _add_product(op, args, ("self", "mat", "vec"), 1)


def baddbmm(op, args):
    return _add_product(op, args, ("self", "batch1", "batch2"), 3)


def linear(op, args):
    x, weight, bias = args
    check_rank(op, "weight", weight, (2,), "a matrix (2-D) of shape [out_features, in_features]")
    if not _sizes(x) or _sizes(x)[-1] != _sizes(weight)[1]:
        raise ShapeError(f"{op}(): 'input' and 'weight' shapes cannot be multiplied: the last "
                         f"dim of 'input' {fmt_shape(_sizes(x))} must be in_features = "
                         f"{_sizes(weight)[1]} of 'weight' {fmt_shape(_sizes(weight))}", op=op,
                         arg="weight")
    named = [("input", x), ("weight", weight)] + ([("bias", bias)] if bias is not None else [])
    same_dtype(op, named)
    check_devices(op, named)
    out = _sizes(x)[:-1] + (_sizes(weight)[0],)
    if bias is not None and broadcast(op, [("input @ weight.T", out), ("bias", _sizes(bias))]) \
            != out:
        raise ShapeError(f"{op}(): argument 'bias' (shape {fmt_shape(_sizes(bias))}) does not "
                         f"broadcast to the output shape {fmt_shape(out)}", op=op, arg="bias")
    return OutSpec(out, x._impl.dtype)


# ---- einsum ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Einsum:
    """An einsum equation with '...' replaced by letters and the output made explicit.

    inputs: one subscript string per operand;  output: the output's subscripts;
    sizes: letter -> size (broadcast: a size-1 letter takes the other operands' size);
    ellipsis: the letters that spell '...', in order."""
    inputs: tuple
    output: str
    sizes: dict
    ellipsis: str = ""

    @property
    def equation(self):
        return ",".join(self.inputs) + "->" + self.output


def parse_einsum(op, equation, shapes):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    subs = lhs.split(",")
    if len(subs) != len(shapes):
        raise ArgumentError(f"{op}(): the equation {equation!r} names {len(subs)} operands "
                            f"(argument 'equation') but {len(shapes)} tensors were given",
                            op=op, arg="equation")
    for part in subs + [rhs]:
        bad = set(part.replace("...", "")) - set(string.ascii_letters)
        if bad:
            raise ArgumentError(f"{op}(): invalid subscript {sorted(bad)[0]!r} in the equation "
                                f"{equation!r} (argument 'equation'): subscripts are letters "
                                f"[a-zA-Z] and '...'", op=op, arg="equation")
    free = [c for c in string.ascii_letters if c not in eq]
    ell_rank = max([len(s) - len(sub) + 3 for sub, s in zip(subs, shapes) if "..." in sub],
                   default=0)
    ell = "".join(free[:ell_rank])
    inputs = []
    for i, (sub, shape) in enumerate(zip(subs, shapes)):
        if "..." in sub:
            k = len(shape) - (len(sub) - 3)
            sub = sub.replace("...", ell[ell_rank - k:] if k > 0 else "")
        if len(sub) != len(shape):
            raise ShapeError(f"{op}(): the subscripts {subs[i]!r} of operand {i} do not match "
                             f"its {len(shape)} dims (shape {fmt_shape(shape)}; argument "
                             f"'equation')", op=op, arg="equation")
        inputs.append(sub)
    sizes = {}
    for i, (sub, shape) in enumerate(zip(inputs, shapes)):
        for c, n in zip(sub, shape):
            have = sizes.get(c, 1)
            if have != n and have != 1 and n != 1:
                raise ShapeError(f"{op}(): subscript {c!r} has size {n} in operand {i} but "
                                 f"size {have} elsewhere (argument 'tensors')", op=op,
                                 arg="tensors")
            sizes[c] = n if have == 1 else have
    if arrow:
        output = rhs.replace("...", ell)
        for c in output:
            if c not in sizes or output.count(c) > 1:
                raise ArgumentError(f"{op}(): output subscript {c!r} in {equation!r} must "
                                    f"appear once, and in an operand (argument 'equation')",
                                    op=op, arg="equation")
    else:   # implicit: the '...' dims, then the letters used once, in alphabetical order
        letters = lhs.replace("...", "").replace(",", "")
        output = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return Einsum(tuple(inputs), output, sizes, ell)


def _einsum_dtype(op, spec, tensors):
    """The dtype of PyTorch's einsum, which contracts the operands left to right: a pair
    whose shared letter is summed over (non-trivially, size > 1 in both) goes to bmm or
    dot, which need one dtype; any other pair is multiplied, which promotes. With an empty
    operand PyTorch returns zeros of the last operand's dtype and checks nothing."""
    if any(0 in _sizes(t) for t in tensors):
        return tensors[-1]._impl.dtype
    last = {c: i for i, sub in enumerate(spec.inputs) for c in sub}
    sizes = dict(zip(spec.inputs[0], _sizes(tensors[0])))   # the running result's letters
    dtype = tensors[0]._impl.dtype
    for i in range(1, len(tensors)):
        t = tensors[i]
        mine = dict(zip(spec.inputs[i], _sizes(t)))
        summed = [c for c in mine if last[c] == i and c not in spec.output and
                  sizes.get(c, 1) != 1 and mine[c] != 1]
        if summed and t._impl.dtype is not dtype:
            raise DTypeError(f"{op}(): operands contracted over {summed[0]!r} must have one "
                             f"dtype, but 'tensors[{i}]' is {t._impl.dtype.name} and the "
                             f"operands before it {dtype.name} (argument 'tensors')", op=op,
                             arg=f"tensors[{i}]")
        dtype = dt.promote_types(dtype, t._impl.dtype)
        for c, n in mine.items():
            sizes[c] = max(sizes.get(c, 1), n)
    return dtype


def einsum(op, args):
    equation, tensors = args
    if not tensors:
        raise ArgumentError(f"{op}(): argument 'tensors' must hold at least one tensor", op=op,
                            arg="tensors")
    check_devices(op, [(f"tensors[{i}]", t) for i, t in enumerate(tensors)])
    spec = parse_einsum(op, equation, [_sizes(t) for t in tensors])
    return OutSpec(tuple(spec.sizes[c] for c in spec.output), _einsum_dtype(op, spec, tensors))


# ---- triangles and diagonals -----------------------------------------------------------
def tril(op, args):
    self = args[0]
    check_rank(op, "self", self, range(2, 64), "at least 2-D")
    return SELF if op.endswith("_") else OutSpec(_sizes(self), self._impl.dtype)


def diag(op, args):
    self, k = args
    check_rank(op, "self", self, (1, 2), "a vector or a matrix (1-D or 2-D)")
    s = _sizes(self)
    if len(s) == 1:
        n = s[0] + abs(k)
        return OutSpec((n, n), self._impl.dtype)
    n = max(0, min(s[0], s[1] - k) if k >= 0 else min(s[0] + k, s[1]))
    return OutSpec((n,), self._impl.dtype)
