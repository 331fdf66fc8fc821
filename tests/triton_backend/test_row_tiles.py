"""The row kernels' tiles (triton_kernels/_rows.py) against PyTorch: softmax /
log_softmax forward and backward, layer_norm and rms_norm, over ROWS-row tiles of a
strided [outer, N, inner] view. Each case is chosen to reach one path: several short
rows per tile, a non-last dim read where it lies (rows coalesced), rows longer than a
block (the looped, two-read kernels), a persistent program walking several tiles,
transposed and strided inputs, tails of odd lengths, empty and 0-dim tensors; float32,
float16 and bfloat16 (computed in float32, rounded once)."""
import numpy as np
import pytest
import torch

from triton_util import CUDA, host, make

import tensorplay as tp
import tensorplay.nn.functional as NF
from triton_kernels import _rows, softmax

TORCH = {tp.float32: torch.float32, tp.float16: torch.float16, tp.bfloat16: torch.bfloat16,
         tp.float64: torch.float64}
TOL = {tp.float32: (1e-5, 1e-6), tp.float16: (2e-3, 2e-3), tp.bfloat16: (1.6e-2, 1.6e-2),
       tp.float64: (1e-12, 1e-12)}
DTYPES = [tp.float32, tp.float16, tp.bfloat16]


def torch_of(t):
    return torch.tensor(host(t), dtype=TORCH[t.dtype])


def close(got, expected, dtype, scale=1.0):
    assert got.device == CUDA and got.dtype is dtype
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(host(got), expected.detach().double().numpy(), rtol=rtol,
                               atol=atol * scale, equal_nan=True)


def check_softmax(x, dim, view=lambda t: t, grad_scale=1.0):
    """softmax and log_softmax of view(x) along dim, values and input gradients, against
    PyTorch (float32 for the half types' reference, rounded like ours)."""
    g = make(tuple(view(x).shape), seed=7)
    for name in ("softmax", "log_softmax"):
        xc = x.cuda().requires_grad_()
        out = getattr(tp, name)(view(xc), dim)
        out.backward(g.to(x.dtype).cuda())
        xt = torch_of(x).requires_grad_()
        ref = getattr(torch, name)(view(xt), dim)
        ref.backward(torch_of(g.to(x.dtype)))
        close(out, ref, x.dtype)
        close(xc.grad, xt.grad, x.dtype, grad_scale)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_short_rows_share_a_tile(dtype):
    # rows of 13 elements: BLOCK 16 (a tail of 3), 64 rows a tile (37 rows: one partial tile)
    assert _rows.RowPlan(13, 37, coalesce_rows=False).rows == 64
    check_softmax(make((37, 13), dtype, seed=1), -1)


@pytest.mark.parametrize("dim", [0, 1])
def test_a_non_last_dim_is_read_in_place(dim):
    x = make((3, 5, 33), seed=2)
    plan = softmax.plan_for(5, 33, (165, 33, 1))
    assert plan.rows == 32 and plan.one_pass     # 32 neighbouring rows, coalesced
    check_softmax(x, dim)


def test_persistent_programs_walk_several_tiles():
    # 50 tiles of one long-ish row each, over _rows.INTERPRETER_PROGRAMS programs
    x = make((50, 300), seed=3)
    assert _rows.RowPlan(300, 50, coalesce_rows=False).tiles_per_outer == 13
    assert _rows.persistent_grid(50) == _rows.INTERPRETER_PROGRAMS
    check_softmax(x, 1)


def test_rows_longer_than_a_block_loop(monkeypatch):
    monkeypatch.setattr(_rows, "MAX_ONE_PASS", 16)
    monkeypatch.setattr(_rows, "LOOP_BLOCK", 16)
    assert not softmax.plan_for(45, 4, (45, 1, 180)).one_pass
    check_softmax(make((4, 45), tp.bfloat16, seed=4) * 4, -1)
    check_softmax(make((2, 45, 3), seed=5), 1)      # looped, non-last dim


def test_transposed_strided_and_odd_inputs():
    x = make((6, 7, 5), seed=6)
    check_softmax(x, 0, view=lambda t: t.transpose(0, 2))          # read through strides
    check_softmax(x, 1, view=lambda t: t[::2, :, 1::2])              # every other element
    check_softmax(x, -1, view=lambda t: t.permute([2, 0, 1]))        # needs a copy
    check_softmax(make((1,), seed=8), 0)


def test_empty_and_zero_dim():
    for shape, dim in (((0, 4), 1), ((3, 0), 1), ((0,), 0)):
        out = tp.softmax(tp.zeros(shape, device="cuda"), dim)
        assert tuple(out.shape) == shape and out.device == CUDA
    check_softmax(tp.tensor(1.5), 0)


def test_half_to_float_and_special_rows():
    x = make((3, 9), tp.float16, seed=9)
    out = tp._softmax(x.cuda(), 1, True)
    close(out, torch.softmax(torch_of(x).float(), 1), tp.float32)
    inf = float("inf")
    rows = tp.tensor([[1e4, 0.0, -inf], [-inf] * 3, [0.0, 0.0, 0.0], [inf, 0.0, 1.0]])
    for name in ("softmax", "log_softmax"):
        close(getattr(tp, name)(rows.cuda(), 1), getattr(torch, name)(torch_of(rows), 1),
              tp.float32)


# ---- layer_norm and rms_norm ------------------------------------------------------------
def check_norm(x, shape, weight=True, bias=True, view=lambda t: t, rms=False):
    n = int(np.prod(shape))
    w = make(tuple(shape), seed=11).to(x.dtype) if weight else None
    b = make(tuple(shape), seed=12).to(x.dtype) if bias and not rms else None
    g = make(tuple(view(x).shape), seed=13).to(x.dtype)
    leaves = [t.cuda().requires_grad_() for t in (x, w, b) if t is not None]
    refs = [torch_of(t).requires_grad_() for t in (x, w, b) if t is not None]

    def run(f, mod, ts):
        args = dict(zip(["weight", "bias"][:len(ts) - 1], ts[1:]))
        if rms:
            return f.rms_norm(view(ts[0]), list(shape), **args)
        return f.layer_norm(view(ts[0]), list(shape), **args)
    out = run(NF, tp, leaves)
    ref = run(torch.nn.functional, torch, refs)
    out.backward(g.cuda())
    ref.backward(torch_of(g))
    close(out, ref, x.dtype)
    for leaf, r in zip(leaves, refs):
        close(leaf.grad, r.grad, x.dtype, scale=10 * max(1, n // 8))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_norms_over_short_rows(dtype):
    check_norm(make((9, 11), dtype, seed=14), [11])
    check_norm(make((2, 3, 5), dtype, seed=15), [3, 5], weight=False, rms=True)


@pytest.mark.parametrize("rms", [False, True], ids=["layer", "rms"])
def test_norms_of_long_rows_loop(rms, monkeypatch):
    monkeypatch.setattr(_rows, "MAX_ONE_PASS", 16)
    monkeypatch.setattr(_rows, "LOOP_BLOCK", 16)
    check_norm(make((5, 37), seed=16) * 3 + 2, [37], rms=rms)      # Welford over 3 blocks


def test_norms_read_strided_rows_in_place():
    x = make((4, 6, 10), seed=17)
    check_norm(x, [10], view=lambda t: t.transpose(0, 1))          # strided batch
    check_norm(x, [5], view=lambda t: t[:, :, ::2])                  # strided rows
    check_norm(x, [4, 6], view=lambda t: t.permute([2, 0, 1]))       # copied first


def test_norm_statistics_and_empty_rows():
    x = make((7, 13), seed=18)
    out, mean, rstd = tp.native_layer_norm(x.cuda(), [13], None, None, 1e-5)
    ref = torch.native_layer_norm(torch_of(x), [13], None, None, 1e-5)
    for got, expected in zip((out, mean, rstd), ref):
        close(got, expected, tp.float32, scale=10)
    out, mean, rstd = tp.native_layer_norm(tp.zeros((3, 0), device="cuda"), [0], None, None,
                                           1e-5)
    assert tuple(out.shape) == (3, 0) and np.isnan(host(rstd)).all()
    assert tuple(NF.layer_norm(tp.zeros((0, 4), device="cuda"), [4]).shape) == (0, 4)
