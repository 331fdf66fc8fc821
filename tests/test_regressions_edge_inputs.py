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


def test_native_batch_norm_refuses_an_empty_input_in_training():
    assert raises_like_torch(lambda m: m.native_batch_norm(
        m.zeros(0, 3), None, None, None, None, True, 0.1, 1e-5)) is None


def test_std_mean_and_embedding_bag_backward_of_empty_tensors():
    def run(m):
        x = m.zeros(0, 4, requires_grad=True)
        std, mean = m.std_mean(x, [-1], correction=2, keepdim=True)
        w = m.zeros(4, 0, requires_grad=True)
        bag = m.nn.functional.embedding_bag(m.zeros(0, dtype=m.int64), w,
                                            m.zeros(2, dtype=m.int64))
        bag.sum().backward()
        return std, mean, bag, w.grad
    for got, want in zip(*raises_like_torch(run)):
        _same(got, want)


@pytest.mark.parametrize("shape, dim", [((0, 3, 2), 1), ((0, 3, 2), 0), ((3, 0), 0),
                                        ((0, 0), 0)])
def test_unique_along_a_dim_with_empty_dims(shape, dim):
    """An empty dim other than `dim`: PyTorch refuses to count the (all empty) slices."""
    pair = raises_like_torch(lambda m: m.unique(m.zeros(shape), dim=dim, return_counts=True))
    if pair is not None:
        for got, want in zip(*pair):
            _same(got, want)


@pytest.mark.parametrize("shape, pad", [((2, 0), (1, -1, 2, 0)), ((2, 3), (-4, 2)),
                                        ((2, 3), (-3, 1))])
def test_constant_pad_crops_before_it_pads(shape, pad):
    pair = raises_like_torch(lambda m: m.nn.functional.pad(m.ones(shape), pad))
    if pair is not None:
        _same(*pair)


def test_bincount_of_nothing_is_int64_even_with_weights():
    got, want = raises_like_torch(lambda m: m.bincount(
        m.zeros(0, dtype=m.uint8), m.zeros(0, dtype=m.float64), minlength=3))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1] == "int64"
    _same(got, want)


def test_zeta_where_its_terms_vanish_at_once():
    """q = +inf, or x = +inf with q > 1: Cephes' series tests 0 / 0 (nan)."""
    inf = float("inf")
    xs = [inf, inf, inf, 2.0, inf, 1.0, inf, 0.5, 2.5]
    qs = [2.5, 0.5, 1.0, inf, inf, inf, 1.5, inf, 3.0]
    got, want = raises_like_torch(lambda m: m.special.zeta(
        m.tensor(xs, dtype=m.float64), m.tensor(qs, dtype=m.float64)))
    _same(got, want)


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
@pytest.mark.parametrize("dtypes", [("int32", "float64"), ("float16", "int64"),
                                    ("bool", "bool"), ("int64", "int64")])
def test_logaddexp_promotes_an_integer_operand(name, dtypes):
    def run(m):
        a = m.tensor([1, 0, 3]).to(getattr(m, dtypes[0]))
        b = m.tensor([2, 0, 1]).to(getattr(m, dtypes[1]))
        return getattr(m, name)(a, b)
    pair = raises_like_torch(run)
    if pair is not None:
        assert str(pair[0].dtype).split(".")[-1] == str(pair[1].dtype).split(".")[-1]
        _same(*pair)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "dist"])
@pytest.mark.parametrize("dtypes", [("float64", "int32"), ("int32", "float16"),
                                    ("uint8", "float64"), ("int32", "int32")])
def test_pointwise_losses_and_dist_promote_an_integer_operand(name, dtypes):
    def run(m):
        a = (m.arange(4) * 3).to(getattr(m, dtypes[0]))
        b = m.tensor([1, 0, 2, 5]).to(getattr(m, dtypes[1]))
        fn = m.dist if name == "dist" else getattr(m.nn.functional, name)
        return fn(a, b)
    pair = raises_like_torch(run)
    if pair is not None:
        assert str(pair[0].dtype).split(".")[-1] == str(pair[1].dtype).split(".")[-1]
        _same(*pair)


@pytest.mark.parametrize("dtype", ["float32", "complex64", "bool", "int32"])
def test_ctc_loss_lengths_must_be_integers(dtype):
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((4, 2, 3))

    def run(m):
        lp = m.tensor(logits).log_softmax(2)
        lengths = m.tensor([4, 4]).to(getattr(m, dtype))
        return m.ctc_loss(lp, m.tensor([[1, 1], [1, 1]]), lengths, m.tensor([2, 2]), 0, 1,
                          True)
    pair = raises_like_torch(run)
    if pair is not None:
        _same(*pair)


def test_complex_result_takes_an_in_place_write():
    """complex(a, b) is a new tensor, not a view of a temporary (an in-place write into
    it must not be refused as a write into a view of a leaf)."""
    def run(m):
        a = m.ones(2, 3, requires_grad=True)
        b = m.arange(3.0, requires_grad=True)
        c = m.complex(a * 1, b * 2 + a)
        c.sub_(b[None])
        c.mul_(a)
        (m.view_as_real(c) * m.arange(12.0).reshape(2, 3, 2)).sum().backward()
        return a.grad, b.grad
    for got, want in zip(*raises_like_torch(run)):
        _same(got, want)


@pytest.mark.parametrize("x, w, transposed", [((0, 2, 4, 4), (0, 2, 3, 2), False),
                                              ((1, 2, 4, 4), (0, 2, 3, 2), False),
                                              ((1, 0, 4, 4), (0, 2, 3, 2), True),
                                              ((0, 2, 4, 4), (3, 2, 3, 2), False)])
def test_convolution_with_no_output_channels_is_refused(x, w, transposed):
    """A weight without channels in dim 0: PyTorch's typed refusal, not a kernel crash."""
    pair = raises_like_torch(lambda m: m.convolution(
        m.zeros(x, dtype=m.float64), m.zeros(w, dtype=m.float64), None, (1, 1), (0, 0),
        (1, 1), transposed, (0, 0), 1))
    if pair is not None:
        _same(*pair)


@pytest.mark.parametrize("name", ["mse_loss", "smooth_l1_loss"])
def test_loss_backward_with_a_bool_target(name):
    """The forward promotes the bool target; so must the backward formula."""
    def run(m):
        b = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
        getattr(m.nn.functional, name)(m.tensor([True, False]), b).backward()
        return b.grad
    _same(*raises_like_torch(run))


@pytest.mark.parametrize("value", [1 + 0j, 1 + 2j, "tensor 1+0j", "tensor float64"])
def test_index_fill_refuses_a_complex_value_for_a_real_tensor(value):
    def run(m):
        v = value
        if value == "tensor 1+0j":
            v = m.tensor(1 + 0j)
        elif value == "tensor float64":
            v = m.tensor(2.0, dtype=m.float64)
        return m.zeros(3, 4).index_fill(1, m.tensor([0, 2]), v)
    pair = raises_like_torch(run)
    if pair is not None:
        _same(*pair)


@pytest.mark.parametrize("indices, offsets", [([], [0, 0]), ([1, 2], [0, 1])])
def test_embedding_bag_mean_outputs_do_not_share_memory(indices, offsets):
    """bag_size and max_indices hold the same values for mode mean, in memory of their own:
    a write into one leaves the other alone."""
    def run(m):
        w = m.arange(12.0, dtype=m.float64).reshape(4, 3)
        out = m.ops.aten._embedding_bag if m is torch else m._embedding_bag
        _, _, bag_size, max_indices = out(w, m.tensor(indices, dtype=m.int64),
                                          m.tensor(offsets), False, 1, False, None, False, -1)
        max_indices.fill_(2)
        return bag_size, max_indices
    for got, want in zip(*raises_like_torch(run)):
        _same(got, want)


@pytest.mark.parametrize("pad", [0, 1, 2, -1])
def test_conv_tbc_never_multiplies_its_padding(pad):
    """PyTorch's conv_tbc adds one kernel tap at a time over the rows it reaches: an inf in
    the weight next to the padding gives inf, not the zero-padded convolution's 0 * inf."""
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((5, 2, 3)), rng.standard_normal((3, 3, 4)), rng.standard_normal(4)
    w[0, 0, 0] = np.inf

    def run(m):
        xs, ws, bs = (m.tensor(a, requires_grad=True) for a in (x, w, b))
        out = m.conv_tbc(xs, ws, bs, pad)
        (out * m.arange(float(out.numel())).reshape(tuple(out.shape))).sum().backward()
        return out, xs.grad, ws.grad, bs.grad
    for got, want in zip(*raises_like_torch(run)):
        _same(got, want)


def test_nll_loss_with_no_classes_and_every_target_ignored():
    def run(m):
        x = m.zeros(3, 0, requires_grad=True)
        loss = m.nn.functional.nll_loss(x, m.tensor([-100, -100, -100]), reduction="sum")
        loss.backward()
        return loss, x.grad
    for got, want in zip(*raises_like_torch(run)):
        _same(got, want)


@pytest.mark.parametrize("name", ["l1_loss", "mse_loss", "kl_div"])
def test_complex_losses(name):
    """l1_loss takes complex numbers (|d| is real); mse_loss and kl_div refuse them."""
    def run(m):
        a = m.tensor([1 + 1j, 2 + 0j], requires_grad=True)
        loss = getattr(m.nn.functional, name)(a, m.tensor([0.5, 1.0]))
        loss.backward()
        return loss, a.grad
    pair = raises_like_torch(run)
    if pair is not None:
        (got, got_grad), (want, want_grad) = pair
        _same(got, want)
        _same(tp.view_as_real(got_grad), torch.view_as_real(want_grad))


@pytest.mark.parametrize("length, pad", [(2, -1), (3, -1), (1, 0)])
def test_conv_tbc_refuses_a_negative_output_length(length, pad):
    pair = raises_like_torch(lambda m: m.conv_tbc(m.ones(length, 2, 3), m.ones(3, 3, 2),
                                                  m.zeros(2), pad))
    if pair is not None:
        _same(*pair)


def test_triangular_solve_coefficient_takes_an_in_place_write():
    """Its second result (A broadcast to the batch) is a copy of its own, writable."""
    rng = np.random.default_rng(2)
    b, a = rng.standard_normal((2, 3, 4)), rng.standard_normal((3, 3)) + 3 * np.eye(3)

    def run(m):
        _, coefficient = m.triangular_solve(m.tensor(b), m.tensor(a), False, True, False)
        coefficient[coefficient > 0] = 7
        return coefficient
    _same(*raises_like_torch(run))


@pytest.mark.parametrize("name", ["bitwise_left_shift", "bitwise_right_shift"])
def test_bit_shifts_refuse_complex_with_a_typed_error(name):
    assert raises_like_torch(lambda m: getattr(m, name)(
        m.ones(3, 1, dtype=m.int32), m.ones(1, 4, dtype=m.complex64))) is None


@pytest.mark.parametrize("dtypes", [("int64", "float32"), ("bool", "float32"),
                                    ("float64", "float32"), ("float64", "int64")])
def test_kl_div_refuses_integral_inputs(dtypes):
    def run(m):
        target = m.tensor([1, 2]).to(getattr(m, dtypes[0]))
        x = m.tensor([1, 2]).to(getattr(m, dtypes[1])) * 0.1
        return m.nn.functional.kl_div(x, target, reduction="sum")
    pair = raises_like_torch(run)
    if pair is not None:
        _same(*pair)


def test_max_unpool3d_of_an_empty_batch():
    def run(m):
        x = m.zeros(0, 1, 1, 2, 2, requires_grad=True)
        idx = m.zeros(0, 1, 1, 2, 2, dtype=m.int64)
        if m is torch:
            out = m.nn.functional.max_unpool3d(x, idx, (3, 2, 2), (3, 2, 2), (0, 0, 0),
                                               output_size=(5, 4, 4))
        else:
            out = m.max_unpool3d(x, idx, (5, 4, 4), (3, 2, 2), (0, 0, 0))
        out.sum().backward()
        return out, x.grad
    for got, want in zip(*raises_like_torch(run)):
        _same(got, want)


@pytest.mark.parametrize("op", ["select_scatter", "slice_scatter", "diagonal_scatter"])
def test_scatter_backward_does_not_save_src(op):
    """src changed in place (under no_grad) before backward: PyTorch's self gradient reads
    only src's sizes, so backward runs."""
    def run(m):
        x = m.arange(12.0, dtype=m.float64).reshape(3, 4).requires_grad_(True)
        src = (m.ones(4 if op == "select_scatter" else 3, dtype=m.float64) * 5)
        if op == "slice_scatter":
            src = m.ones(1, 4, dtype=m.float64)
        src.requires_grad_(True)
        s = src * 1
        out = {"select_scatter": lambda: m.select_scatter(x, s, 0, 1),
               "slice_scatter": lambda: m.slice_scatter(x, s, 0, 1, 2),
               "diagonal_scatter": lambda: m.diagonal_scatter(x, s)}[op]()
        with m.no_grad():
            s.mul_(3)
        (out * m.arange(12.0, dtype=m.float64).reshape(3, 4)).sum().backward()
        return x.grad, src.grad
    for got, want in zip(*raises_like_torch(run)):
        _same(got, want)


def test_ldexp_backward_does_not_save_self():
    """self changed in place (under no_grad) before backward: PyTorch's ldexp saves its
    result and `other`, not self, so backward runs (and broadcasts back to other)."""
    def run(m):
        x = m.zeros(2, 4, requires_grad=True)
        e = m.tensor([0.5, -1.0, 2.0, 0.0], requires_grad=True)
        y = m.ldexp(x * 1 + 1, e)
        with m.no_grad():
            x[::2][...] = 3
        (y * 2).sum().backward()
        return y, x.grad, e.grad
    for got, want in zip(*raises_like_torch(run)):
        _same(got, want)


@pytest.mark.parametrize("op", ["logical_and_", "logical_or_", "logical_xor_", "logical_not_"])
def test_logical_inplace_on_a_leaf_that_requires_grad(op):
    """PyTorch generates no autograd code for the logical ops (DONT_REQUIRE_DERIVATIVE):
    their in-place forms run on a leaf that requires grad, which stays a leaf."""
    def run(m):
        x = m.tensor([[0.0, 1.5], [2.0, 0.0]], dtype=m.float64, requires_grad=True)
        args = () if op == "logical_not_" else (m.tensor([1.0, 0.0], dtype=m.float64),)
        getattr(x, op)(*args)
        assert x.requires_grad and x.is_leaf and x.grad_fn is None
        return x.detach()
    pair = raises_like_torch(run)
    if pair is not None:
        _same(*pair)


@pytest.mark.parametrize("self_dtype, target_dtype", [
    ("float64", "int32"), ("float32", "float64"), ("float16", "float32"),
    ("float64", "bool"), ("int64", "float32"), ("int32", "int64")])
def test_huber_loss_promotes_its_target(self_dtype, target_dtype):
    """huber_loss computes in the common dtype into a tensor like self (float32 against a
    float64 target is float32); an integer self or common dtype is refused."""
    def run(m):
        x = m.tensor([0.5, -2.0, 3.0]).to(getattr(m, self_dtype))
        t = m.tensor([1, 0, 1]).to(getattr(m, target_dtype))
        out = m.nn.functional.huber_loss(x, t, reduction="none", delta=0.5)
        assert str(out.dtype).split(".")[-1] == self_dtype
        return out
    pair = raises_like_torch(run)
    if pair is not None:
        _same(*pair)


def test_binary_cross_entropy_refuses_a_complex_weight():
    def run(m):
        x = m.full((3, 4), 0.25, dtype=m.float64)
        return m.nn.functional.binary_cross_entropy(x, x, weight=m.ones(4, dtype=m.complex64))
    raises_like_torch(run)


def test_lu_unpack_reads_pivots_only_to_unpack_them():
    def run(m):
        LU = m.arange(15.0, dtype=m.float64).reshape(3, 5)
        return m.lu_unpack(LU, m.ones(3), unpack_pivots=False)[1:]
    for got, want in zip(*raises_like_torch(run)):
        _same(got, want)


@pytest.mark.parametrize("ord", [2, "nuc", -2])
def test_spectral_matrix_norm_of_empty_matrices(ord):
    """No singular values: ord 2 is a constant 0, 'nuc' a sum of nothing, -2 raises."""
    def run(m):
        x = m.zeros(0, 2, 4, requires_grad=True)
        out = m.linalg.matrix_norm(x, ord, (0, 2), True)
        assert out.requires_grad == (ord == "nuc")
        return out
    pair = raises_like_torch(run)
    if pair is not None:
        _same(*pair)


def test_lobpcg_of_an_empty_batch():
    def run(m):
        A = m.zeros(0, 9, 9, dtype=m.float64)
        return m.lobpcg(A, k=1, X=m.zeros(0, 9, 1, dtype=m.float64))
    for got, want in zip(*raises_like_torch(run)):
        _same(got, want)


def test_ldexp_with_a_complex_exponent_is_complex():
    def run(m):
        return m.ldexp(m.ones(3), m.tensor([1 + 1j, 2, -1], dtype=m.complex64))
    got, want = raises_like_torch(run)
    assert got.dtype == tp.complex64
    _same(tp.view_as_real(got), torch.view_as_real(want))


@pytest.mark.parametrize("base", [0.0, -2.0, float("inf"), complex(0, float("-inf"))])
@pytest.mark.parametrize("exponent", [-1 + 0j, 0j, 2 + 0j, -0.5 - 2j, 3, -2, 0.5, 0, 1])
def test_complex_pow_is_cpow(base, exponent):
    """PyTorch's complex pow is C's cpow, cexp(b * clog(a)) (0 ** 0j is NaN, 0 ** -1 is
    inf + NaN j), except a Python-number exponent of 0, 1, 0.5, -0.5, -1, 2, 3, -2: a
    fill, a copy, sqrt, rsqrt, reciprocal or products (inf ** 3 is NaN)."""
    def run(m):
        x = m.tensor([base, 1.5 - 1j], dtype=m.complex64)
        if isinstance(exponent, complex):
            return m.view_as_real(m.pow(x, m.tensor([exponent, exponent], dtype=m.complex64)))
        return m.view_as_real(x ** exponent)
    got, want = raises_like_torch(run)
    _same(got, want)


@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("shape, target", [((3, 0, 2), (3, 2)), ((0, 0, 2), (0, 2)),
                                           ((3, 0, 0), (3, 0)), ((2, 3, 0), (2, 0))])
def test_class_losses_with_no_classes(fn, shape, target):
    """No classes but spatial dims: a target that names a class is out of bounds (typed,
    not NumPy's reshape error), an empty one gives 0."""
    def run(m):
        x = m.zeros(shape, dtype=m.float64, requires_grad=True)
        loss = getattr(m.nn.functional, fn)(x, m.zeros(target, dtype=m.long), reduction="sum")
        loss.backward()
        return loss, x.grad
    pair = raises_like_torch(run)
    if pair is not None:
        for got, want in zip(*pair):
            _same(got, want)


def test_bce_with_logits_refuses_a_complex_target_with_a_typed_error():
    with pytest.raises(tp.errors.DTypeError, match="target"):
        tp.nn.functional.binary_cross_entropy_with_logits(tp.zeros(3),
                                                          tp.zeros(3, dtype=tp.complex64))


@pytest.mark.parametrize("dtype, value", [("float32", 2.5 - 1j), ("float32", 2.5 + 0j),
                                          ("int8", 300), ("int8", float("nan")),
                                          ("int8", 2.5), ("uint8", -1)])
def test_scatter_value_converts_like_fill(dtype, value):
    """scatter's Python-number value is converted as fill_'s is (checked_convert): a
    nonzero imaginary part or an out-of-range number raises, -1 wraps into uint8."""
    def run(m):
        x = m.zeros(3, dtype=getattr(m, dtype))
        return x.scatter(0, m.tensor([0]), value)
    pair = raises_like_torch(run)
    if pair is not None:
        _same(*pair)


@pytest.mark.parametrize("use_input_stats", [False, True])
def test_instance_norm_of_no_channels(use_input_stats):
    """An empty input returns before the running statistics are checked (PyTorch's
    _batch_norm_impl_index), unless instance_norm itself reshapes them first."""
    def run(m):
        x = m.zeros(2, 0, 2, 2, dtype=m.float64, requires_grad=True)
        stats = [m.zeros(3, dtype=m.float64), m.ones(3, dtype=m.float64)]
        out = m.nn.functional.instance_norm(x, *stats, weight=m.ones(3, dtype=m.float64),
                                            bias=m.ones(3, dtype=m.float64),
                                            use_input_stats=use_input_stats)
        return out
    pair = raises_like_torch(run)
    if pair is not None:
        _same(*pair)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_deprecated_cholesky_of_an_empty_input():
    def run(m):
        x = m.zeros(0, 3, dtype=m.float64, requires_grad=True)
        out = m.cholesky(x)
        assert out.requires_grad
        return out
    _same(*raises_like_torch(run))


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("m, n, batch, vector", [(5, 3, (), False), (3, 5, (2,), False),
                                                 (4, 4, (), False), (5, 3, (2,), True),
                                                 (0, 3, (), False), (3, 0, (), False)])
def test_lstsq_solution_is_the_top_of_lapacks_buffer(m, n, batch, vector):
    """PyTorch's solution is the top n rows of the (max(m, n), k) column-major buffer
    LAPACK solved in place: its strides step over max(m, n) rows, and a view of it (a
    flatten, an unflatten) has the strides PyTorch's has."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(batch + (m, n))
    b = rng.standard_normal(batch + (m,) if vector else batch + (m, 2))

    def run(mod):
        x = mod.linalg.lstsq(mod.tensor(a), mod.tensor(b)).solution
        return x, x.unsqueeze(0)
    for got, want in zip(*raises_like_torch(run)):
        assert got.stride() == want.stride()
        _same(got, want)


@pytest.mark.parametrize("inplace", [False, True])
def test_renorm_gradient_past_a_nan_slice(inplace):
    """A slice whose norm is NaN is not above maxnorm: PyTorch's renorm_backward passes
    its gradient through (the composite's where, differentiated, gave 0 * NaN = NaN)."""
    a = np.random.default_rng(1).standard_normal((2, 3, 4))
    a[0, 2, 0] = np.nan
    w = np.random.default_rng(2).standard_normal((2, 3, 4))

    def run(m):
        x = m.tensor(a, requires_grad=True)
        y = x.clone().renorm_(3, -1, 1.0) if inplace else m.renorm(x, 3, -1, 1.0)
        (y * m.tensor(w)).sum().backward()
        return y, x.grad
    for got, want in zip(*raises_like_torch(run)):
        _same(got, want)


def test_cross_saves_its_operands():
    """PyTorch's linalg_cross saves self and other: one changed in place before backward
    makes backward raise (the composite's rolled copies hid the change)."""
    def run(m):
        x = m.arange(18.0).reshape(2, 3, 3).requires_grad_(True)
        y = m.full((2, 3, 3), 0.5, requires_grad=True)
        out = m.linalg.cross(x, y)
        with m.no_grad():
            x.add_(1.5)
        out.sum().backward()
        return x.grad
    raises_like_torch(run)


def test_cholesky_solve_saves_its_right_hand_side():
    def run(m):
        b = m.arange(12.0, dtype=m.float64).reshape(4, 3).requires_grad_(True)
        L = (m.eye(4, dtype=m.float64) * 2).requires_grad_(True)
        out = m.cholesky_solve(b, L)
        with m.no_grad():
            b.mul_(2)
        out.sum().backward()
        return b.grad
    raises_like_torch(run)


@pytest.mark.parametrize("self_dtype, exponent", [("float64", "complex"), ("complex128", "real"),
                                                  ("float64", 2.5 + 1j), ("float64", "real")])
def test_float_power_inplace_refuses_a_complex_result_in_a_real_tensor(self_dtype, exponent):
    def run(m):
        x = m.tensor([[0.5, 2.0], [1.5, 3.0]]).to(getattr(m, self_dtype))
        e = exponent
        if exponent == "complex":
            e = m.tensor([1 + 1j, 2 - 1j], dtype=m.complex64)
        elif exponent == "real":
            e = m.tensor([2.0, 0.5])
        return x.float_power_(e)
    pair = raises_like_torch(run)
    if pair is not None:
        got, want = pair
        _same(tp.view_as_real(got) if got.is_complex() else got,
              torch.view_as_real(want) if want.is_complex() else want)


def test_histogram_edges_of_an_input_that_requires_grad():
    """Both outputs are floating: PyTorch's not-implemented fallback gives each a grad_fn
    (the edges too, made from the range alone)."""
    def run(m):
        x = m.zeros(0, dtype=m.float64, requires_grad=True)
        hist, edges = m.histogram(x, 2)
        assert hist.requires_grad and edges.requires_grad
        return edges
    _same(*raises_like_torch(run))


# ---- scaled_dot_product_attention of an empty attention --------------------------------
SDPA_EMPTY = [   # query, key, value (and enable_gqa)
    ((0, 3, 2), (0, 4, 2), (0, 4, 2), False),     # seed 4007689: an empty batch
    ((2, 0, 2), (2, 4, 2), (2, 4, 2), False),     # an empty query sequence
    ((2, 3, 2), (2, 0, 2), (2, 0, 2), False),     # no keys: zeros, NaN with an inf query
    ((2, 3, 2), (2, 4, 2), (2, 4, 0), False),     # an empty value head dim
    ((2, 3, 2), (2, 4, 3), (2, 5, 0), False),     # shapes never compared there
    ((0, 3, 2), (1, 4, 2), (1, 4, 2), True),      # math path, key and value repeated 0 times
    ((1, 2, 0, 2), (1, 2, 4, 2), (1, 2, 4, 2), False),
]


@pytest.mark.parametrize("shapes", SDPA_EMPTY, ids=str)
@pytest.mark.parametrize("mask", [None, "bool", "float"])
def test_sdpa_of_an_empty_attention_saves_no_input(shapes, mask):
    """PyTorch returns zeros + (q.sum() + k.sum() + v.sum()) * 0 when value is empty or
    the query sequence is: nothing saved, so a write into value before backward does not
    make it raise; the mask, is_causal and the shapes are not read there."""
    *shapes, gqa = shapes
    rng = np.random.default_rng(3)
    data = [rng.standard_normal(s) for s in shapes]
    if data[0].size:
        data[0].flat[0] = np.inf
    mask_data = rng.standard_normal((3, 4))

    def run(m):
        q, k, v = (m.tensor(a, dtype=m.float32, requires_grad=True) for a in data)
        attn_mask = None if mask is None else m.tensor(mask_data, dtype=m.float32)
        if mask == "bool":
            attn_mask = attn_mask > 0
        out = m.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask,
                                                          enable_gqa=gqa)
        with m.no_grad():
            v[v > 0] = 7
        (out * 2).sum().backward()
        return out, q.grad, k.grad, v.grad
    pair = raises_like_torch(run)
    if pair is not None:
        for got, want in zip(*pair):
            _same(got, want)


# ---- recurrent hidden states of another dtype than the input's -------------------------
def _lstm_weights(m, dtype, gates=4, hidden=2, size=2):
    rng = np.random.default_rng(5)
    return [m.tensor(rng.standard_normal(s), dtype=dtype, requires_grad=True)
            for s in ((gates * hidden, size), (gates * hidden, hidden), (gates * hidden,),
                      (gates * hidden,))]


def _state(m, dtype, shape, seed):
    a = np.random.default_rng(seed).standard_normal(shape) * 3
    return m.tensor(a) > 0 if dtype == "bool" else m.tensor(a).to(getattr(m, dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("h_dtype, c_dtype", [
    ("float32", "bool"),         # seed 4012415
    ("float32", "float64"), ("float32", "float16"), ("float32", "int64"),
    ("float16", "float32"), ("float64", "float64"), ("bool", "float32"),
])
def test_lstm_state_of_another_dtype(dtype, h_dtype, c_dtype):
    """h0 of another dtype is refused on every PyTorch path (addmm with w_hh). c0 only
    enters f * c + i * g: promoted on the addmm path (float64), refused by the oneDNN
    kernel every non-empty float32 sequence runs (an internal error there; a DTypeError
    naming hx[1] here)."""
    h_dtype = dtype if h_dtype == "float32" else h_dtype
    c_dtype = dtype if c_dtype == "float32" else c_dtype
    x = np.random.default_rng(4).standard_normal((3, 2, 2))

    def run(m):
        d = getattr(m, dtype)
        w = _lstm_weights(m, d)
        out = m.lstm(m.tensor(x, dtype=d), [_state(m, h_dtype, (1, 2, 2), 6),
                                            _state(m, c_dtype, (1, 2, 2), 7)],
                     w, True, 1, 0.0, False, False, False)
        sum(o.sum() for o in out).backward()
        return list(out) + [t.grad for t in w]
    pair = raises_like_torch(run)
    if pair is None:
        with pytest.raises(tp.errors.DTypeError) as info:
            run(tp)
        assert info.value.arg == ("hx[0]" if h_dtype != dtype else "hx[1]")
        return
    for got, want in zip(*pair):
        assert got.dtype.name == str(want.dtype).split(".")[-1]
        _same(got, want)


@pytest.mark.parametrize("c_dtype", ["float32", "bool", "int64", "float64"])
def test_lstm_module_promotes_a_float64_cell_state(c_dtype):
    """nn.LSTM on float64 (PyTorch's addmm path) takes c_0 of any dtype, promoted; on
    float32 (its oneDNN kernel) it refuses one of another dtype."""
    x = np.random.default_rng(8).standard_normal((3, 2, 2))
    for dtype in ("float64", "float32"):
        def run(m):
            m.manual_seed(0)
            mod = m.nn.LSTM(2, 2).to(getattr(m, dtype))
            with m.no_grad():
                for p, w in zip(mod.parameters(), _lstm_weights(m, getattr(m, dtype))):
                    p.copy_(w)
            out, (h, c) = mod(m.tensor(x, dtype=getattr(m, dtype)),
                              (_state(m, dtype, (1, 2, 2), 9), _state(m, c_dtype, (1, 2, 2), 10)))
            (out.sum() + c.sum()).backward()
            return out, h, c, mod.weight_hh_l0.grad
        pair = raises_like_torch(run)
        if pair is None:
            continue
        for got, want in zip(*pair):
            _same(got, want)


@pytest.mark.parametrize("op", ["gru", "rnn_tanh", "rnn_relu", "gru_cell", "rnn_tanh_cell",
                                "lstm_cell"])
@pytest.mark.parametrize("h_dtype", ["float64", "float16", "bool"])
def test_recurrent_hidden_state_of_another_dtype_is_refused(op, h_dtype):
    """PyTorch's h @ w_hh.T refuses the mix (mat1 and mat2 must have the same dtype);
    TensorPlay names the state."""
    gates = {"gru": 3, "lstm": 4}.get(op.split("_")[0], 1)

    def run(m):
        w = _lstm_weights(m, m.float32, gates)
        h = _state(m, h_dtype, (2, 2) if op.endswith("cell") else (1, 2, 2), 11)
        if op == "lstm_cell":
            return m.lstm_cell(m.ones(2, 2), [h, m.zeros(2, 2)], *w)
        if op.endswith("cell"):
            return getattr(m, op)(m.ones(2, 2), h, *w)
        return getattr(m, op)(m.ones(3, 2, 2), h, w, True, 1, 0.0, False, False, False)
    assert raises_like_torch(run) is None
    with pytest.raises(tp.errors.DTypeError) as info:
        run(tp)
    assert info.value.arg == ("hx[0]" if op == "lstm_cell" else "hx")


@pytest.mark.parametrize("method", ["pow_", "float_power_"])
def test_inplace_power_of_a_scalar_exponent_saves_only_the_original_self(method):
    """x.pow_(number) saves the original self, as PyTorch's PowBackward0 does, not the
    result (which the Tensor overload's exponent gradient reads): a later write into x
    under no_grad leaves its backward computing (fuzz seed 4100923: float_power_ then
    `+=`)."""
    grads = []
    for lib in (tp, torch):
        x = lib.tensor([[0.3, 0.7, 1.5]], dtype=lib.float64, requires_grad=True)
        y = x * 1
        getattr(y, method)(-1.5)
        with lib.no_grad():
            y += 1
        y.sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(*grads, rtol=1e-12)


@pytest.mark.parametrize("fn", ["var_mean", "std_mean"])
@pytest.mark.parametrize("dim", [None, 1])
def test_moments_mean_output_is_no_view_of_a_temporary(fn, dim):
    """var_mean / std_mean return a mean of their own: written in place under no_grad it
    keeps its history, and written with grad on it is no view of a leaf (fuzz seeds 21298,
    28355, 94149: the mean was a reshaped view of the kept-dims one)."""
    a = np.random.default_rng(3).standard_normal((2, 3)) + 0.5j
    grads = []
    for lib in (tp, torch):
        x = lib.tensor(a, requires_grad=True)
        _, m = getattr(lib, fn)(x, dim, correction=0)
        with lib.no_grad():
            m.neg_()
        lib.view_as_real(m).sum().backward()
        grads.append(x.grad.numpy())
        _, m = getattr(lib, fn)(x.real * 1, dim, correction=0)
        m.fill_(2)                                  # an output, not a view of a leaf
    np.testing.assert_allclose(*grads, rtol=1e-12)


@pytest.mark.parametrize("transposed", [False, True])
def test_convolution_of_an_empty_batch_checks_no_dtypes(transposed):
    """PyTorch's convolution of an empty batch takes its empty path before it compares the
    dtypes: a float16 input with float32 weight and bias gives an empty float16 result and
    float32 zero gradients (fuzz seed 59985); TensorPlay refused it."""
    results = []
    for lib in (tp, torch):
        x = lib.zeros((0, 2, 4, 4), dtype=lib.float16, requires_grad=True)
        w = lib.ones((2, 3, 2, 2), requires_grad=True)
        b = lib.ones(3, dtype=lib.float64, requires_grad=True)
        y = lib.convolution(x, w, b, (1, 1), (0, 0), (1, 1), transposed, (0, 0), 1) \
            if transposed else lib.convolution(x, w.transpose(0, 1), b, (1, 1), (0, 0),
                                               (1, 1), False, (0, 0), 1)
        y.sum().backward()
        results.append([(str(t.dtype).split(".")[-1], tuple(t.shape), t.float().abs().sum().item())
                        for t in (y, x.grad, w.grad, b.grad)])
    assert results[0] == results[1]
