"""The indexing family on `cuda` (triton_kernels/_indexing.py and its launchers) against the
CPU backend, for what the operator database does not reach: atomic adds with many
repeated indices, half types (accumulated in float32), non-contiguous operands, walks
of more than 4 dims (split on the host), shapes that take several programs, and bad
indices raising the CPU kernel's typed error before any launch."""
import numpy as np
import pytest

from triton_util import assert_same, make

import tensorplay as tp
from tensorplay._generated import functional as F
from tensorplay.errors import DimError, ShapeError
from triton_kernels import _indexing as indexing

BIG = indexing.BLOCK + 389       # more elements than one program takes


def both(fn, *tensors, **tol):
    assert_same(fn(*[t.cuda() for t in tensors]), fn(*tensors), **tol)


def index(values):
    return tp.tensor(np.asarray(values, dtype=np.int64))


def random_index(shape, high, seed=1):
    return index(np.random.default_rng(seed).integers(0, high, shape))


# ---- atomic adds ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.float16, tp.bfloat16, tp.int64,
                                   tp.int32, tp.int8], ids=lambda d: d.name)
def test_scatter_add_with_many_repeats(dtype):
    """Every source element lands on one of 3 rows: up to ~30 adds per element."""
    x = make((3, 7), dtype, low=0.0, high=1.0)
    src = make((90, 7), dtype, low=0.0, high=1.0, seed=2)
    idx = random_index((90, 7), 3)
    tol = dict(rtol=2e-2, atol=0.3) if dtype in (tp.float16, tp.bfloat16) else {}
    both(lambda a, i, s: a.scatter_add(0, i, s), x, idx, src, **tol)
    both(lambda a, i, s: a.clone().scatter_add_(0, i, s), x, idx, src, **tol)


def test_half_scatter_add_rounds_once():
    """2048 + 1 + 1 + ... in fp16: added one at a time each +1 rounds away (2049 is not an
    fp16 value); summed in the float32 buffer and rounded once they count."""
    x = tp.full((1,), 2048.0, dtype=tp.float16, device="cuda")
    ones = tp.ones(8, dtype=tp.float16, device="cuda")
    out = x.scatter_add(0, tp.zeros(8, dtype=tp.int64, device="cuda"), ones)
    assert out.dtype == tp.float16 and out.cpu().item() == 2056.0


def test_index_add_put_accumulate_and_embedding_backward_repeat():
    x = make((5, 6))
    src = make((40, 6), seed=3)
    idx = random_index((40,), 5)
    both(lambda a, i, s: a.index_add(0, i, s, alpha=0.5), x, idx, src)
    both(lambda a, i, s: a.index_put((i,), s, accumulate=True), x, idx, src)
    grad = make((4, 10, 6), seed=4)
    ids = random_index((4, 10), 5)
    for scale in (False, True):
        both(lambda g, i: F.embedding_dense_backward(g, i, 5, 2, scale), grad, ids)


def test_embedding_gradient_on_cuda():
    w = make((6, 3)).cuda().requires_grad_()
    ids = random_index((7, 2), 6).cuda()
    tp.nn.functional.embedding(ids, w).sum().backward()
    counts = np.bincount(ids.cpu().numpy().reshape(-1), minlength=6)[:, None]
    np.testing.assert_allclose(w.grad.cpu().numpy(), np.broadcast_to(counts, (6, 3)))


# ---- several programs, non-contiguous, high rank --------------------------------------
def test_shapes_that_take_several_programs():
    x = make((BIG // 8 + 3, 8))
    idx = random_index((BIG // 8, 8), x.shape[0])
    both(lambda a, i: a.gather(0, i), x, idx)
    both(lambda a, i: a.scatter_add(0, i, a[:i.shape[0]]), x, idx)
    both(lambda a, i: a.scatter_reduce(0, i, a[:i.shape[0]], "amax"), x, idx)
    flat = random_index((BIG,), x.numel())
    both(lambda a, i: a.take(i), x, flat)
    both(lambda a: a.masked_select(a > 0), x)
    both(lambda a: a.nonzero(), x > 0)


def test_non_contiguous_operands():
    x = make((6, 5, 4)).transpose(0, 2)                   # [4, 5, 6], strides (1, 4, 20)
    idx = random_index((4, 5, 3), 6).transpose(0, 1)      # [5, 4, 3]: a permuted index
    y = make((5, 4, 6)).permute([1, 0, 2])                # [4, 5, 6] again
    both(lambda a, i: a.gather(2, i.transpose(0, 1)), x, idx)
    both(lambda a, s, i: a.scatter_add(2, i.transpose(0, 1), s), x, y, idx)
    both(lambda a, s, i: a.scatter_reduce(2, i.transpose(0, 1), s, "prod"), x, y, idx)
    both(lambda a, i: a[:, ::2].index_select(1, i), x, index([2, 0, 2]))
    both(lambda a, s, i: a[::2].index_copy(0, i, s[:2]), x, y, index([1, 0]))
    both(lambda a: a.t().masked_fill(a.t() > 0, 7.0), x[0])
    both(lambda a, i, j: a[i, :, j], x, index([3, 0]), index([-1, 2]))


def test_in_place_into_a_strided_view():
    """scatter_add_ into a transposed half tensor: the float32 buffer is copied back
    through the view's strides."""
    def run(a, i, s):
        a = a.clone()
        view = a.t()
        view.scatter_add_(1, i, s)
        return a
    x = make((6, 4), tp.float16)
    both(run, x, random_index((4, 9), 6), make((4, 9), tp.float16, seed=5), rtol=1e-2,
         atol=1e-2)


def test_walks_of_more_than_four_dims_split_on_the_host():
    x = make((2, 3, 2, 3, 2, 4))[..., ::2]       # strided: nothing coalesces
    idx = random_index((2, 3, 2, 3, 2, 2), 2)
    both(lambda a, i: a.gather(5, i), x, idx)
    both(lambda a, i: a.scatter_add(0, i, a), x, idx)
    both(lambda a, i: a.scatter_reduce(5, i, a, "mean", include_self=False), x, idx)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [tp.float32, tp.float16, tp.int64], ids=lambda d: d.name)
def test_scatter_reduce_with_repeats(reduce, include_self, dtype):
    x = make((4, 5), dtype, low=-2.0, high=2.0)
    src = make((12, 5), dtype, low=-2.0, high=2.0, seed=6)
    idx = random_index((12, 5), 3)      # row 3 receives nothing: keeps self
    tol = dict(rtol=2e-2, atol=2e-2) if dtype is tp.float16 else {}
    both(lambda a, i, s: a.scatter_reduce(0, i, s, reduce, include_self=include_self),
         x, idx, src, **tol)


# ---- bad indices ----------------------------------------------------------------------
def errors(fn, *tensors):
    """The error fn raises on cuda, checked to equal the CPU one (type and text)."""
    with pytest.raises(Exception) as on_cpu:
        fn(*tensors)
    with pytest.raises(type(on_cpu.value)) as on_cuda:
        fn(*[t.cuda() for t in tensors])
    assert str(on_cuda.value) == str(on_cpu.value)
    return on_cuda.value


@pytest.mark.parametrize("op", ["gather", "scatter_add", "index_select", "index_add", "take",
                                "index", "index_put", "embedding", "index_fill"])
def test_out_of_range_index_raises_the_cpu_error(op):
    x = make((3, 4))
    bad = index([[0, 1, 2, 3], [1, 0, 0, 0]]) if op in ("gather", "scatter_add") else \
        index([1, 5])
    calls = {
        "gather": lambda a, i: a.gather(0, i),
        "scatter_add": lambda a, i: a.scatter_add(0, i, a[:2]),
        "index_select": lambda a, i: a.index_select(0, i),
        "index_add": lambda a, i: a.index_add(0, i, a[:2]),
        "take": lambda a, i: a.take(i * 3),
        "index": lambda a, i: a[i],
        "index_put": lambda a, i: a.index_put((i,), a[0]),
        "embedding": lambda a, i: tp.nn.functional.embedding(i, a),
        "index_fill": lambda a, i: a.index_fill(0, -i - 2, 1.0),
    }
    error = errors(calls[op], x, bad)
    assert isinstance(error, DimError) and error.arg in ("index", "indices")


def test_masked_scatter_with_too_small_a_source_raises():
    error = errors(lambda a, m, s: a.masked_scatter(m, s), make((3, 3)), make((3, 3)) > 0,
                   make((1,)))
    assert isinstance(error, ShapeError)


def test_one_hot_and_repeat_interleave_check_values_on_the_device():
    errors(lambda i: tp.nn.functional.one_hot(i, 3), index([0, 3]))
    errors(lambda i: tp.nn.functional.one_hot(i), index([0, -1]))
    errors(lambda r: tp.repeat_interleave(r), index([1, -1]))
    both(lambda r: tp.repeat_interleave(r), index([0, 3, 0, 2, 1]))


def test_explain_shows_the_triton_hop():
    x = make((3, 4)).cuda()
    with tp.dispatch.explain(file=False) as ex:
        x.gather(1, random_index((3, 2), 4).cuda())
    assert "triton    index_gather" in ex.text
