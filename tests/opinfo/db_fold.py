"""Database entries: im2col and col2im (F.unfold, F.fold)."""
from __future__ import annotations
import tensorplay as tp
from tensorplay.errors import ArgumentError, ShapeError
from opinfo.core import COMPLEX, FLOATING, GRAD_COMPLEX, OpInfo, make_tensor, rng_for
from opinfo.db_resample import E, S, TOL, _grad, _t, aten


# (input shape, layout, kernel, dilation, padding, stride)
FOLD_CASES = (
    ((1, 2, 4, 5), "contiguous", (2, 2), (1, 1), (0, 0), (1, 1)),
    ((2, 1, 5, 4), "transposed", (2, 3), (2, 1), (1, 1), (2, 1)),
    ((2, 4, 3), "strided", (3, 1), (1, 1), (1, 0), (1, 2)),
)


def sample_inputs_im2col(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout, k, d, p, s in FOLD_CASES:
        yield S(make_tensor(shape, dtype, device, rng=rng, layout=layout,
                            requires_grad=_grad(dtype, requires_grad)),
                (k, d, p, s), name=f"{list(shape)} {layout} k={k} d={d} p={p} s={s}")


def sample_inputs_col2im(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for shape, layout, k, d, p, s in FOLD_CASES:
        cols = tp.im2col(tp.zeros(shape, dtype=dtype, device=device), k, d, p, s)
        yield S(make_tensor(tuple(cols.shape), dtype, device, rng=rng, layout=layout,
                            requires_grad=_grad(dtype, requires_grad)),
                (tuple(shape[-2:]), k, d, p, s), name=f"{list(shape)} {layout} k={k}")


def errors_im2col(op, device):
    yield E(S(_t((5, 4)), ((2, 2), (1, 1), (0, 0), (1, 1))), ShapeError,
            r"im2col\(\): expected argument 'self' to be a 3-D", arg="self")
    yield E(S(_t((1, 1, 2, 2)), ((3, 3), (1, 1), (0, 0), (1, 1))), ShapeError,
            r"im2col\(\): no sliding block fits", arg="self")
    yield E(S(_t((1, 1, 4, 4)), ((2, 2), (0, 1), (0, 0), (1, 1))), ArgumentError,
            r"im2col\(\): argument 'dilation' must be positive", arg="dilation")


def errors_col2im(op, device):
    yield E(S(_t((1, 5, 9)), ((4, 4), (2, 2), (1, 1), (0, 0), (1, 1))), ShapeError,
            r"col2im\(\): argument 'self' dim -2 \(5\) must be divisible", arg="self")
    yield E(S(_t((1, 4, 8)), ((4, 4), (2, 2), (1, 1), (0, 0), (1, 1))), ShapeError,
            r"col2im\(\): argument 'self' has 8 blocks", arg="self")


op_db = [
    OpInfo("im2col", overloads=("im2col",), dtypes=FLOATING + COMPLEX, ref=aten.im2col,
           grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=sample_inputs_im2col, error_inputs_func=errors_im2col),
    OpInfo("col2im", overloads=("col2im",), dtypes=FLOATING + COMPLEX, ref=aten.col2im,
           grad_dtypes=GRAD_COMPLEX,
           sample_inputs_func=sample_inputs_col2im, error_inputs_func=errors_col2im,
           tolerances=TOL),
]
