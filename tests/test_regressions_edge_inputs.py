"""Edge-case inputs where TensorPlay differed from PyTorch, found by the differential
fuzzer's edge cases (tests/fuzzing/programs.py, _EDGE_CASES: empty tensors, integer and
mixed-dtype arguments, huge finite values). Each case runs on tensorplay and on torch:
both raise (TensorPlay a typed error), or both give the same values and gradients."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from torch_twins import raises_like_torch


def _same(got, want):
    assert tuple(got.shape) == tuple(want.shape)
    values = np.asarray(got.detach().tolist(), dtype=np.float64).reshape(tuple(got.shape))
    np.testing.assert_allclose(values, want.detach().double().numpy(), rtol=1e-6, atol=1e-6,
                               equal_nan=True)


# ---- huge finite values --------------------------------------------------------------
@pytest.mark.parametrize("scale", [1e30, 2.27e38, 1e-12])
def test_cosine_similarity_of_an_overflowing_norm(scale):
    """The norm of a row of 1e30s overflows float32 to inf: x / inf is 0 in PyTorch, and
    the clamp at eps (not differentiated) must keep that inf, not make it inf - inf."""
    a = np.array([[1.0], [0.5], [-1.0]], dtype=np.float32) * np.float32(scale)
    b = np.array([[1.0, 2.0, 3.0, 4.0]], dtype=np.float32)

    def run(m):
        x = m.tensor(a, requires_grad=True)
        out = m.nn.functional.cosine_similarity(x, m.tensor(b), dim=1)
        out.sum().backward()
        return out, x.grad
    (got, got_grad), (want, want_grad) = run(tp), run(torch)
    _same(got, want)
    _same(got_grad, want_grad)


# ---- empty tensors -------------------------------------------------------------------
@pytest.mark.parametrize("name, shape, size", [
    ("adaptive_avg_pool2d", (0, 5, 4), (2, 2)),      # a 3-D input's C read as a batch
    ("adaptive_max_pool2d", (0, 5, 4), (2, 2)),
    ("adaptive_max_pool3d", (0, 2, 3, 4), (1, 1, 1)),
    ("adaptive_max_pool1d", (0, 1, 5), 7),
    ("adaptive_avg_pool2d", (2, 0, 5, 4), (2, 2)),   # forward fine, backward refuses
    ("adaptive_max_pool2d", (2, 0, 5, 4), (2, 2)),   # refused
    ("fractional_max_pool2d", (0, 5, 4), None),
])
def test_adaptive_and_fractional_pooling_of_an_empty_batch(name, shape, size):
    def run(m):
        x = m.zeros(*shape, requires_grad=True)
        fn = getattr(m.nn.functional, name)
        out = fn(x, 2, output_size=(2, 2)) if size is None else fn(x, size)
        out = out[0] if isinstance(out, tuple) else out
        out.sum().backward()
        return out, x.grad
    pair = raises_like_torch(run)
    if pair is not None:
        (got, got_grad), (want, want_grad) = pair
        _same(got, want)
        _same(got_grad, want_grad)


def test_batch_norm_of_an_empty_batch_in_training():
    """No statistics to take: the running ones stay, the weight's gradient is zeros."""
    def run(m):
        x = m.zeros(0, 3, requires_grad=True)
        w = m.ones(3, requires_grad=True)
        rm, rv = m.zeros(3), m.ones(3)
        out = m.nn.functional.batch_norm(x, rm, rv, weight=w, bias=m.zeros(3),
                                         training=True, momentum=0.3)
        out.sum().backward()
        inst = m.nn.functional.instance_norm(m.zeros(0, 3, 4))
        return out, w.grad, rm, rv, inst
    got, want = raises_like_torch(run)
    for g, w in zip(got, want):
        _same(g, w)


def test_batch_norm_update_stats_refuses_an_empty_input():
    assert raises_like_torch(lambda m: m.batch_norm_update_stats(m.zeros(0, 2), None, None,
                                                                 0.1)) is None


@pytest.mark.parametrize("shape, grid", [((0, 1, 3, 3), (0, 0, 2, 2)),
                                         ((0, 1, 2, 3, 3), (0, 1, 0, 2, 3)),
                                         ((1, 0, 3, 3), (1, 2, 2, 2))])
def test_grid_sampler_with_no_planes_or_points(shape, grid):
    def run(m):
        x = m.zeros(*shape, dtype=m.float64, requires_grad=True)
        g = m.zeros(*grid, dtype=m.float64, requires_grad=True)
        out = m.grid_sampler(x, g, 0, 0, False)
        out.sum().backward()
        return out, g.grad
    (got, got_grad), (want, want_grad) = raises_like_torch(run)
    _same(got, want)
    _same(got_grad, want_grad)


# ---- integer, bool and mixed dtypes ----------------------------------------------------
@pytest.mark.parametrize("op", ["scatter", "scatter_value", "scatter_add", "scatter_reduce",
                                "gather", "index_select", "index_add", "index_copy", "take"])
def test_int32_indices_where_pytorch_takes_them(op):
    """PyTorch's gather/scatter and index_select families take an int32 index as well as
    an int64 one; take and index_copy insist on int64."""
    calls = {
        "scatter": lambda x, s, i, v: x.scatter(0, i, s),
        "scatter_value": lambda x, s, i, v: x.scatter(0, i, 2.0),
        "scatter_add": lambda x, s, i, v: x.scatter_add(0, i, s),
        "scatter_reduce": lambda x, s, i, v: x.scatter_reduce(0, i, s, "amax"),
        "gather": lambda x, s, i, v: x.gather(0, i),
        "index_select": lambda x, s, i, v: x.index_select(1, v),
        "index_add": lambda x, s, i, v: x.index_add(0, v, x[:2] * 2),
        "index_copy": lambda x, s, i, v: x.index_copy(0, v, x[:2] * 2),
        "take": lambda x, s, i, v: x.take(v),
    }

    def run(m):
        x = m.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
        s = m.tensor(np.full((1, 4), 2.0), requires_grad=True)
        i = m.tensor([[0, 1, 2, 0]], dtype=m.int32)
        v = m.tensor([0, 2], dtype=m.int32)
        out = calls[op](x, s, i, v)
        out.sum().backward()
        return out, x.grad
    pair = raises_like_torch(run)
    if pair is not None:
        (got, got_grad), (want, want_grad) = pair
        _same(got, want)
        _same(got_grad, want_grad)


@pytest.mark.parametrize("dtypes", [("float64", "float32"), ("float32", "bool"),
                                    ("int64", "int64"), ("float32", "float32")])
def test_polar_takes_two_floats_of_one_dtype(dtypes):
    def run(m):
        a, b = (m.ones(2, dtype=getattr(m, d)) for d in dtypes)
        return m.polar(a, b)
    pair = raises_like_torch(run)
    if pair is not None:
        _same(tp.view_as_real(pair[0]), torch.view_as_real(pair[1]))


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_bitwise_ops_refuse_complex_with_a_typed_error(name):
    assert raises_like_torch(lambda m: getattr(m, name)(
        m.ones(2, dtype=m.uint8), m.ones(2, dtype=m.complex64))) is None
    assert raises_like_torch(lambda m: m.bitwise_not(m.ones(2, dtype=m.complex64))) is None
