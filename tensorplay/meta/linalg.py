"""Shape/dtype rules of linear algebra: mv, dot, addmm, baddbmm, linear, tril/triu and
diag (mm and bmm, the most common, are in rules.py)."""
from __future__ import annotations

from tensorplay import _dtype as dt
from tensorplay.errors import ArgumentError, DTypeError, ShapeError, fmt_shape
from tensorplay.kernel_support.checks import OutSpec, SELF, broadcast, check_devices
from tensorplay.kernel_support.lapack import solve_is_vector
from tensorplay.kernel_support.layout import lapack_strides
from tensorplay.kernel_support.overlap import assert_no_internal_overlap


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


def linear_backward(op, args):
    """_linear_backward: (grad_input, grad_weight, grad_bias) of linear, shaped like input,
    like weight and (out_features,); an output output_mask leaves out is None. It reads
    weight for grad_input and input for grad_weight only (linear's node saves each only
    for the other's gradient), so either may be None when its gradient is not asked."""
    grad_output, x, weight, output_mask = args
    if not _sizes(grad_output):
        raise ShapeError(f"{op}(): argument 'grad_output' must have at least 1 dimension, "
                         f"but got a 0-D tensor", op=op, arg="grad_output")
    lead, out_features = _sizes(grad_output)[:-1], _sizes(grad_output)[-1]
    named = [("grad_output", grad_output)]
    for name, t, wanted in (("input", x, output_mask[1]), ("weight", weight, output_mask[0])):
        if wanted and t is None:
            raise ArgumentError(f"{op}(): output_mask asks for the gradient that reads "
                                f"'{name}', but argument '{name}' is None", op=op, arg=name)
        if t is not None:
            named.append((name, t))
    if weight is not None:
        check_rank(op, "weight", weight, (2,),
                   "a matrix (2-D) of shape [out_features, in_features]")
        if _sizes(weight)[0] != out_features:
            raise ShapeError(f"{op}(): 'weight' {fmt_shape(_sizes(weight))} must have "
                             f"out_features = {out_features} rows, the last dim of "
                             f"'grad_output' {fmt_shape(_sizes(grad_output))}", op=op,
                             arg="weight")
    if x is not None and (not _sizes(x) or _sizes(x)[:-1] != lead):
        raise ShapeError(f"{op}(): 'input' {fmt_shape(_sizes(x))} and 'grad_output' "
                         f"{fmt_shape(_sizes(grad_output))} must agree in all dims but the "
                         f"last", op=op, arg="input")
    if x is not None and weight is not None and _sizes(x)[-1] != _sizes(weight)[1]:
        raise ShapeError(f"{op}(): the last dim of 'input' {fmt_shape(_sizes(x))} must be "
                         f"in_features = {_sizes(weight)[1]} of 'weight' "
                         f"{fmt_shape(_sizes(weight))}", op=op, arg="weight")
    same_dtype(op, named)
    check_devices(op, named)
    d = grad_output._impl.dtype
    specs = [None, None, None]
    if output_mask[0]:
        specs[0] = OutSpec(lead + (_sizes(weight)[1],), d)
    if output_mask[1]:
        specs[1] = OutSpec((out_features, _sizes(x)[-1]), d)
    if output_mask[2]:
        specs[2] = OutSpec((out_features,), d)
    return tuple(specs)


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


# ---- inverses, determinants, solves, factorizations ------------------------------------
def check_square(op, A, name="A", *, empty_ok=False):
    """A stack of square float32/float64 matrices (check_lapack_dtype)."""
    sizes = _sizes(A)
    if len(sizes) < 2:
        raise ShapeError(f"{op}(): the input tensor '{name}' must have at least 2 "
                         f"dimensions, but got shape {fmt_shape(sizes)}", op=op, arg=name)
    if sizes[-1] != sizes[-2]:
        raise ShapeError(f"{op}(): '{name}' must be batches of square matrices, but they are "
                         f"{sizes[-2]} by {sizes[-1]} matrices", op=op, arg=name)
    check_lapack_dtype(op, A, name, empty_ok=empty_ok)


def check_lapack_dtype(op, A, name, *, empty_ok=False):
    """float32/float64 (LAPACK's types; no half types, no integers). `empty_ok`: PyTorch's
    eigh, LU and cond return early on an empty input, before their dtype check, with the
    empty result in the input's own dtype; those ops pass it."""
    if empty_ok and A._impl.numel() == 0:
        return
    dtype = A._impl.dtype
    if not dtype.is_floating_point:
        raise DTypeError(f"{op}(): expected a floating point tensor as input ('{name}'), but "
                         f"got {dtype.name}", op=op, arg=name)
    if dtype.itemsize < 4:
        raise DTypeError(f"{op}(): low precision dtypes are not supported ('{name}'), got "
                         f"{dtype.name}", op=op, arg=name)


def square_factorization(op, args):
    """inv_ex, cholesky_ex: a matrix of A's shape and LAPACK's int32 info per matrix."""
    A = args[0]
    check_square(op, A)
    sizes = _sizes(A)
    return OutSpec(sizes, A._impl.dtype, lapack_strides(sizes)), OutSpec(sizes[:-2], dt.int32)


def slogdet(op, args):
    A = args[0]
    check_square(op, A)
    batch = _sizes(A)[:-2]
    return OutSpec(batch, A._impl.dtype), OutSpec(batch, A._impl.dtype)


def solve(op, args):
    """X with A X = B (left) or X A = B: A's and B's batch dims broadcast."""
    A, B, left = args
    check_square(op, A)
    same_dtype(op, [("A", A), ("B", B)])
    check_devices(op, [("A", A), ("B", B)])
    n = _sizes(A)[-1]
    if solve_is_vector(_sizes(A), _sizes(B)):
        if not left:
            raise ArgumentError(f"{op}(): vector broadcasting of the left hand side is "
                                f"not supported for left=False ('B' is a vector); it is B / A",
                                op=op, arg="B")
        rows, trailing = _sizes(B)[-1], ()
    else:
        if len(_sizes(B)) < 2:
            raise ShapeError(f"{op}(): 'B' must have at least 1 dimension, but got "
                             f"shape {fmt_shape(_sizes(B))}", op=op, arg="B")
        rows = _sizes(B)[-2] if left else _sizes(B)[-1]
        trailing = _sizes(B)[-2:]
    if rows != n:
        raise ShapeError(f"{op}(): incompatible shapes of 'A' and 'B' for the equation "
                         f"{'AX = B' if left else 'XA = B'} ({fmt_shape(_sizes(A))} and "
                         f"{fmt_shape(_sizes(B))})", op=op, arg="B")
    b_batch = _sizes(B)[:-1] if not trailing else _sizes(B)[:-2]
    batch = broadcast(op, [("A", _sizes(A)[:-2]), ("B", b_batch)])
    sizes = tuple(batch) + (tuple(trailing) if trailing else (n,))
    # PyTorch's layout: LAPACK's, of the result's own shape (a batch of vectors too: its
    # last batch dim as the rows); row-major for X A = B, which is solved transposed.
    return OutSpec(sizes, A._impl.dtype, lapack_strides(sizes) if left else None)


# ---- the matrix exponential ------------------------------------------------------------
def check_matrix_exp(op, A, name="self"):
    """A stack of square floating-point matrices (half types too: PyTorch takes them)."""
    sizes = _sizes(A)
    if len(sizes) < 2:
        raise ShapeError(f"{op}(): the input tensor '{name}' must have at least 2 "
                         f"dimensions, but got shape {fmt_shape(sizes)}", op=op, arg=name)
    if sizes[-1] != sizes[-2]:
        raise ShapeError(f"{op}(): '{name}' must be batches of square matrices, but they are "
                         f"{sizes[-2]} by {sizes[-1]} matrices", op=op, arg=name)
    if not A._impl.dtype.is_floating_point:
        raise DTypeError(f"{op}(): expected a floating point tensor as input ('{name}'), but "
                         f"got {A._impl.dtype.name}", op=op, arg=name)


def matrix_exp(op, args):
    """linalg_matrix_exp: a new (row-major) stack of A's shape and dtype."""
    A = args[0]
    check_matrix_exp(op, A)
    return OutSpec(_sizes(A), A._impl.dtype)
