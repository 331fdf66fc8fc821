"""Regressions for the mismatches the differential fuzzer found (issue 12), one test per
class, each reduced to a few lines and checked against torch (values, dtypes and
gradients, NaN and inf included)."""
import math

import numpy as np
import pytest
import torch

import tensorplay as tp

nan, inf = math.nan, math.inf


def _np(t):
    """A tensor of either library as a float64 NumPy array (None stays None)."""
    if t is None:
        return None
    if isinstance(t, torch.Tensor):
        return t.detach().to(torch.float64).numpy()
    return t.detach().to(tp.float64).numpy()


def _same(got, want, rtol=1e-6, atol=1e-7):
    for g, w in zip(got, want):
        if w is None:
            assert g is None or not np.any(_np(g)), f"torch has no gradient, got {g}"
            continue
        np.testing.assert_allclose(_np(g), _np(w), rtol=rtol, atol=atol, equal_nan=True)


def _run_both(fn, arrays, dtype="float64", grad=True):
    """fn(lib, *tensors) in both libraries: (outputs..., input grads...) for each."""
    results = []
    for lib in (tp, torch):
        ts = [lib.tensor(np.asarray(a), dtype=getattr(lib, dtype), requires_grad=grad)
              for a in arrays]
        out = fn(lib, *ts)
        outs = out if isinstance(out, tuple) else (out,)
        if grad:
            sum(o.sum() for o in outs if o.requires_grad).backward()
        results.append(list(outs) + [t.grad for t in ts] if grad else list(outs))
    return results


# ---- NaN and inf conventions (PyTorch's kernels are the oracle) ---------------------------
def test_prelu_infinite_weight_gives_positive_inputs_gradient_one():
    got, want = _run_both(lambda m, x, w: m.nn.functional.prelu(x, w),
                          [[nan, 1.0, -2.0, 3.0], [inf]])
    _same(got, want)


def test_vector_norm_ord_0_gradient_is_zero_at_inf():
    got, want = _run_both(lambda m, x: m.linalg.vector_norm(x, 0), [[1.0, -inf, 0.0]])
    _same(got, want)


def test_prod_of_0dim_nan_has_gradient_one():
    got, want = _run_both(lambda m, x: m.prod(x), [nan])
    _same(got, want)


def test_nanmean_of_all_nan_slice_has_nan_gradient():
    got, want = _run_both(lambda m, x: m.nanmean(x, 1), [[[nan, 1.0], [nan, nan]]])
    _same(got, want)


def test_group_norm_infinite_weight_or_input_forward_and_backward():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 3))
    w, b = rng.standard_normal(4), rng.standard_normal(4)
    w[3] = -inf
    x_inf = x.copy()
    x_inf[1, 2, 1] = inf
    for arrays in ([x, w, b], [x_inf, np.abs(w) + 1, b]):
        got, want = _run_both(lambda m, x, w, b: m.native_group_norm(x, w, b, 2, 4, 3, 2, 1e-5),
                              arrays, grad=False)
        _same(got, want, rtol=1e-5, atol=1e-6)
        got, want = _run_both(lambda m, x, w, b: m.nn.functional.group_norm(x, 2, w, b, 1e-5),
                              arrays)
        _same(got, want, rtol=1e-5, atol=1e-6)


def test_layer_norm_mean_with_inf_is_nan():
    x = np.array([[1.0, inf, 2.0, 3.0], [0.5, 1.5, -1.0, 2.0]])
    got, want = _run_both(lambda m, x: m.native_layer_norm(x, [4], None, None, 1e-5)[1:],
                          [x], grad=False)
    _same(got, want)


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_upsampling_inf_reaches_only_the_outputs_that_read_it(mode):
    x = np.arange(12.0).reshape(1, 1, 3, 4)
    x[0, 0, 0, 3] = -inf

    def up(m, t):
        if mode == "nearest":
            return m.ops.aten.upsample_nearest2d(t, (5, 6), 1.7, 1.6) if m is torch else \
                m.upsample_nearest2d(t, (5, 6), 1.7, 1.6)
        return m.ops.aten.upsample_bilinear2d(t, (5, 6), True, None, None) if m is torch \
            else m.upsample_bilinear2d(t, (5, 6), True, None, None)

    got, want = _run_both(up, [x])
    _same(got, want)


def test_adaptive_avg_pool_nan_stays_in_its_windows():
    x = np.arange(70.0).reshape(1, 2, 5, 7)
    x[0, 0, 0, 4] = nan
    got, want = _run_both(lambda m, t: m.nn.functional.adaptive_avg_pool2d(t, (2, 3)), [x])
    _same(got, want)


def test_sdpa_nan_rows_stay_nan_and_fully_masked_rows_are_zero():
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((2, 3, 2)) for _ in range(3))
    q[0, 2, 1] = -inf
    mask = np.array([[True, False, True], [False, False, False], [True, True, True]])
    outs = []
    for lib in (tp, torch):
        t = [lib.tensor(a) for a in (q, k, v)]
        outs.append(lib.nn.functional.scaled_dot_product_attention(
            *t, attn_mask=lib.tensor(mask)))
    _same([outs[0]], [outs[1]])


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 0.5, 3.0, inf])
def test_cdist_nan_and_inf_follow_torch(p):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((5, 3))
    a[2, 1] = inf
    b[1, 0] = nan
    b[3] = a[0] + [0.0, 0.0, 0.0]      # a zero distance: its gradient is 0
    got, want = _run_both(lambda m, x, y: m.cdist(x, y, p), [a, b])
    _same(got, want)


def test_cdist_refuses_mixed_dtypes():
    with pytest.raises(tp.errors.DTypeError, match="x2"):
        tp.cdist(tp.ones(2, 3), tp.ones(4, 3, dtype=tp.float64))


def test_var_mean_mean_is_nan_after_an_early_inf():
    x = np.array([[1.0, -inf, 2.0], [3.0, 4.0, inf]], dtype=np.float32)
    for dims in ([1], [0], None):
        got, want = _run_both(lambda m, t: m.var_mean(t, dims), [x], "float32", grad=False)
        _same(got, want)


@pytest.mark.parametrize("fn", ["logaddexp", "logaddexp2"])
def test_logaddexp_equal_infinities_have_nan_gradient(fn):
    got, want = _run_both(lambda m, x, y: getattr(m, fn)(x, y),
                          [[1.0, inf, -inf, nan, 3.0], [0.5, inf, -inf, 1.0, 100.0]])
    _same(got, want)


# ---- rounding: half types, as PyTorch's kernels round -----------------------------------
def test_half_times_0dim_double_is_computed_in_float32():
    a = np.random.default_rng(3).standard_normal(50)
    for lib_scalar in (0.37, 1 / 3):
        got = (tp.tensor(a).to(tp.float16) * tp.tensor(lib_scalar, dtype=tp.float64))
        want = torch.tensor(a).half() * torch.tensor(lib_scalar, dtype=torch.float64)
        np.testing.assert_array_equal(_np(got), _np(want))
        x, tx = tp.tensor(a).to(tp.bfloat16), torch.tensor(a).bfloat16()
        x.div_(lib_scalar)
        tx.div_(lib_scalar)
        np.testing.assert_array_equal(_np(x), _np(tx))


def test_logaddexp2_promotes_a_half_operand_before_arithmetic():
    a = np.random.default_rng(4).standard_normal((3, 4))
    b = np.random.default_rng(5).standard_normal(4)
    got = tp.logaddexp2(tp.tensor(a, dtype=tp.float32), tp.tensor(b).to(tp.float16))
    want = torch.logaddexp2(torch.tensor(a, dtype=torch.float32), torch.tensor(b).half())
    assert got.dtype == tp.float32
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-6)


def test_rms_norm_default_eps_of_half_input_is_float32_eps():
    a = np.random.default_rng(6).standard_normal((2, 3, 4))
    got = tp._fused_rms_norm(tp.tensor(a).to(tp.float16), [4], None, None)
    want = torch._fused_rms_norm(torch.tensor(a).half(), [4], None, None)
    assert got[1].dtype == tp.float32
    _same(got, want, rtol=1e-6, atol=1e-6)


def test_div_gradient_of_0dim_double_divisor_of_half_tensor():
    a = np.random.default_rng(7).standard_normal((3, 4))
    g = np.random.default_rng(8).standard_normal((3, 4))
    grads = []
    for lib in (tp, torch):
        d = lib.tensor(0.37, dtype=lib.float64, requires_grad=True)
        y = lib.div(lib.tensor(a).to(lib.float16), d)
        (y * lib.tensor(g).to(lib.float16)).sum().backward()
        grads.append(d.grad)
    assert grads[0].item() == grads[1].item()


@pytest.mark.parametrize("dtypes", [("float16", "float32"), ("float64", "float32"),
                                    ("float32", "float64"), ("bfloat16", "bfloat16")])
def test_bce_with_logits_has_target_dtype_and_torch_rounding(dtypes):
    rng = np.random.default_rng(9)
    x, y, pw = rng.standard_normal((3, 4)) * 3, rng.random((3, 4)), rng.random(4) * 3
    outs = []
    for lib in (tp, torch):
        outs.append(lib.nn.functional.binary_cross_entropy_with_logits(
            lib.tensor(x, dtype=getattr(lib, dtypes[0])),
            lib.tensor(y, dtype=getattr(lib, dtypes[1])),
            pos_weight=lib.tensor(pw, dtype=getattr(lib, dtypes[0])), reduction="none"))
    assert str(outs[0].dtype).split(".")[-1] == str(outs[1].dtype).split(".")[-1]
    # the half types round as PyTorch does at each step: equal to far below their epsilon
    np.testing.assert_allclose(_np(outs[0]), _np(outs[1]), rtol=1e-6)


# ---- aliasing, requires_grad, dtype, raising ------------------------------------------
def test_batch_norm_eval_stats_do_not_alias_running_mean():
    x, rm, rv = tp.ones(2, 3, 2), tp.zeros(3), tp.ones(3)
    _, mean, _ = tp.native_batch_norm(x, None, None, rm, rv, False, 0.1, 1e-5)
    rm[0] = 7
    assert mean[0].item() == 0.0


def test_empty_trapezoid_does_not_require_grad():
    for lib in (tp, torch):
        y = lib.trapezoid(lib.zeros(2, 0, requires_grad=True))
        assert not y.requires_grad
        assert tuple(y.shape) == (2,)


@pytest.mark.parametrize("make", [lambda x, m: x.sum(1, dtype=m.int32),
                                  lambda x, m: x.cumsum(0, dtype=m.int64),
                                  lambda x, m: x.prod(dtype=m.int32)])
def test_recorded_op_with_integer_output_raises_as_torch(make):
    with pytest.raises(RuntimeError, match="Autograd not support dtype"):
        make(torch.ones(3, 4, requires_grad=True), torch)
    with pytest.raises(tp.errors.AutogradError, match="Autograd not support dtype"):
        make(tp.ones(3, 4, requires_grad=True), tp)
    converted = tp.ones(3, requires_grad=True).to(tp.int32)     # a conversion is allowed
    assert not converted.requires_grad


def test_where_takes_a_uint8_condition():
    cond = [[1], [0], [2]]
    got = tp.where(tp.tensor(cond, dtype=tp.uint8), tp.ones(3, 4), tp.zeros(3, 4))
    want = torch.where(torch.tensor(cond, dtype=torch.uint8), torch.ones(3, 4),
                       torch.zeros(3, 4))
    np.testing.assert_array_equal(_np(got), _np(want))
    with pytest.raises(tp.errors.DTypeError, match="condition"):
        tp.where(tp.tensor([1, 0]), tp.ones(2), tp.zeros(2))


@pytest.mark.parametrize("dtype", ["int64", "float16", "bool"])
def test_conversion_keeps_the_layout_of_a_dense_input(dtype):
    for lib_make in (lambda m: m.arange(12).reshape(3, 4).t(),
                     lambda m: m.arange(24).reshape(2, 3, 4).permute(2, 0, 1)):
        got = lib_make(tp).to(getattr(tp, dtype))
        want = lib_make(torch).to(getattr(torch, dtype))
        assert tuple(got.stride()) == tuple(want.stride())
        np.testing.assert_array_equal(_np(got), _np(want))


def test_clone_of_a_fresh_transposed_result_does_not_alias_it():
    x = tp.ones(3, 4).t() * 2           # a fresh result laid out column-major
    y = x.clone()
    y.add_(1)
    assert x[0].tolist() == [2.0, 2.0, 2.0]
    assert tuple(y.stride()) == tuple((torch.ones(3, 4).t() * 2).clone().stride())


def test_heaviside_result_is_in_the_graph_and_its_backward_raises_typed():
    x = tp.randn(3, 4, requires_grad=True)
    y = tp.heaviside(x, tp.randn(4))
    assert y.requires_grad == torch.heaviside(torch.randn(3, 4, requires_grad=True),
                                              torch.randn(4)).requires_grad
    with pytest.raises(tp.errors.DerivativeNotImplementedError, match="heaviside"):
        y.sum().backward()


@pytest.mark.parametrize("make", [
    lambda m: m.nonzero(m.tensor([[1, 0, 2], [0, 3, 0]])),
    lambda m: m.where(m.ones(3, 4))[1],
    lambda m: m.sort(m.arange(12.0).reshape(3, 4).t(), 0)[1],
    lambda m: m.unravel_index(m.tensor([[1, 2], [3, 4]]), (2, 3))[0],
    lambda m: m.index_fill(m.arange(12).reshape(3, 4).t(), 1, m.tensor([0, 2]), 7),
    lambda m: m.index_put(m.arange(12.0).reshape(3, 4).t(), (m.tensor([1]),), m.tensor(7.0)),
    lambda m: m.scatter(m.arange(12.0).reshape(3, 4).t(), 0, m.tensor([[0, 1, 2]]), 7.0),
], ids=["nonzero", "where", "sort", "unravel_index", "index_fill", "index_put", "scatter"])
def test_result_layout_matches_torch(make):
    got, want = make(tp), make(torch)
    assert tuple(got.stride()) == tuple(want.stride())
    np.testing.assert_array_equal(_np(got), _np(want))


def test_layer_and_group_norm_refuse_mixed_parameter_dtypes_as_torch():
    with pytest.raises(RuntimeError, match="mixed dtype"):
        torch.native_layer_norm(torch.ones(2, 3), [3], torch.ones(3, dtype=torch.float64),
                                None, 1e-5)
    with pytest.raises(tp.errors.DTypeError, match="mixed dtype"):
        tp.native_layer_norm(tp.ones(2, 3), [3], tp.ones(3, dtype=tp.float64), None, 1e-5)
    with pytest.raises(tp.errors.DTypeError, match="mixed dtype"):
        tp.native_group_norm(tp.ones(2, 4, 3), tp.ones(4, dtype=tp.float64), None,
                             2, 4, 3, 2, 1e-5)
    # a half input with float32 parameters is PyTorch's allowed mix
    tp.native_layer_norm(tp.ones(2, 3, dtype=tp.float16), [3], tp.ones(3), tp.ones(3), 1e-5)


def test_binary_cross_entropy_refuses_nan_input_as_torch():
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        torch.nn.functional.binary_cross_entropy(torch.tensor([nan, 0.5]), torch.ones(2))
    with pytest.raises(tp.errors.ArgumentError, match="between 0 and 1"):
        tp.nn.functional.binary_cross_entropy(tp.tensor([nan, 0.5]), tp.ones(2))


def test_take_along_dim_without_dim_views_flat_as_torch():
    for lib, error in ((torch, RuntimeError), (tp, tp.errors.ShapeError)):
        x = lib.arange(12.0).reshape(3, 4).t().clone()      # cannot be viewed flat
        with pytest.raises(error, match="is not compatible with input tensor"):
            lib.take_along_dim(x, lib.tensor([[0, 1, 2]]))


@pytest.mark.parametrize("loss", ["huber_loss", "smooth_l1_loss"])
def test_huber_and_smooth_l1_gradient_at_infinite_target_is_finite(loss):
    kwargs = {"delta": 2.0} if loss == "huber_loss" else {"beta": 0.5}
    for target in ([-inf, nan, 0.5], [inf, 1.0, -2.5]):
        got, want = _run_both(
            lambda m, x, t: getattr(m.nn.functional, loss)(x, t.detach(), reduction="sum",
                                                           **kwargs),
            [[1.0, 5.0, 0.25], target])
        _same(got[:2], want[:2])


def test_huber_loss_has_input_dtype():
    got = tp.nn.functional.huber_loss(tp.ones(3), tp.zeros(3, dtype=tp.float64))
    want = torch.nn.functional.huber_loss(torch.ones(3), torch.zeros(3, dtype=torch.float64))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1] == "float32"


def test_margin_ranking_loss_nan_gets_no_gradient():
    got, want = _run_both(
        lambda m, a, b, t: m.nn.functional.margin_ranking_loss(a, b, t.detach(), margin=0.0),
        [[1.0, 2.0, 3.0], [nan, 1.0, 5.0], [1.0, -1.0, 1.0]])
    _same(got[:3], want[:3])


def test_trapezoid_with_dx_and_an_infinite_end_is_nan():
    got, want = _run_both(lambda m, y: m.trapezoid(y, dx=2.0),
                          [[[inf, 1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0]]])
    _same(got, want)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_infinite_weight_and_nan_running_stat(training):
    rng = np.random.default_rng(10)
    x, rm, rv = rng.standard_normal((2, 3, 4)), np.array([0.1, nan, 0.3]), np.ones(3)
    w, b = np.array([1.0, 2.0, -inf]), np.zeros(3)
    outs = []
    for lib in (tp, torch):
        t = [lib.tensor(a) for a in (x, w, b, rm, rv)]
        outs.append(lib.native_batch_norm(t[0], t[1], t[2], t[3], t[4], training, 0.1,
                                          1e-5)[0])
    _same([outs[0]], [outs[1]])


def test_pairwise_distance_inf_norm_shares_the_gradient_among_ties():
    got, want = _run_both(lambda m, x, y: m.nn.functional.pairwise_distance(x, y, p=inf),
                          [[[-inf], [0.5], [1.0]], [[0.1, 0.2, -0.3, 0.4]]])
    _same(got, want)


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_batch_norm_layout_decides_its_loop_as_in_torch(layout):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 3, 2, 2))
    x[0, 2, 0, 0] = -inf
    w, b = np.array([1.0, inf, 2.0]), rng.standard_normal(3)
    rm, rv = rng.standard_normal(3), rng.random(3) + 0.5
    outs = []
    for lib in (tp, torch):
        t = lib.tensor(x) if layout == "contiguous" else \
            lib.tensor(np.repeat(x, 2, axis=-1))[..., ::2]
        outs.append(lib.native_batch_norm(t, lib.tensor(w), lib.tensor(b), lib.tensor(rm),
                                          lib.tensor(rv), False, 0.1, 1e-5)[0])
    _same([outs[0]], [outs[1]])


def test_batch_norm_backward_infinite_weight_scales_last():
    rng = np.random.default_rng(12)
    x, g = rng.standard_normal((2, 3, 2, 2)), rng.standard_normal((2, 3, 2, 2))
    w, b = np.array([1.0, inf, 2.0]), np.zeros(3)
    grads = []
    for lib in (tp, torch):
        xs = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.batch_norm(xs, None, None, lib.tensor(w), lib.tensor(b), True)
        y.backward(lib.tensor(g))
        grads.append(xs.grad)
    _same([grads[0]], [grads[1]])


def test_conv_tbc_writes_its_result_row_major():
    """conv_tbc's (time, batch, out_channels) result is laid out as PyTorch's kernel
    writes it, not as the permuted convolution it is computed with."""
    x, w, b = (np.random.default_rng(3).standard_normal(s).astype(np.float32)
               for s in [(4, 1, 2), (3, 2, 2), (2,)])
    ours = tp.conv_tbc(tp.tensor(x), tp.tensor(w), tp.tensor(b), 0)
    theirs = torch.conv_tbc(torch.tensor(x), torch.tensor(w), torch.tensor(b), 0)
    assert ours.stride() == theirs.stride()
    _same([ours], [theirs])


@pytest.mark.parametrize("mode", [0, 2])          # bilinear, bicubic
def test_grid_sample_at_a_nan_point_is_nan(mode):
    """A NaN grid point reads nothing, but its weight is NaN: PyTorch's gather-then-weigh
    gives NaN there (nearest, which weighs nothing, gives 0)."""
    x = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    grid = np.zeros((1, 2, 2, 2), np.float32)
    grid[0, 1, 0, 1] = nan
    ours = tp.grid_sampler(tp.tensor(x), tp.tensor(grid), mode, 0, False)
    theirs = torch.grid_sampler(torch.tensor(x), torch.tensor(grid), mode, 0, False)
    _same([ours], [theirs])
    assert ours.isnan().any()


def test_im2col_of_an_empty_batch_can_be_written_in_place():
    """An empty window view is "contiguous" to NumPy but read-only: the result must own
    writable memory (seed 902185: a neg_ under no_grad raised NumPy's ValueError)."""
    cols = tp.nn.functional.unfold(tp.zeros(0, 2, 4, 5), (2, 2))
    want = torch.nn.functional.unfold(torch.zeros(0, 2, 4, 5), (2, 2))
    cols.neg_()
    assert tuple(cols.shape) == tuple(want.shape)


@pytest.mark.parametrize("shape,size", [((2, 3, 5, 4), (7, 9)), ((2, 3, 5, 4), (3, 2)),
                                        ((2, 3, 5), (8,))])
def test_nearest_resizing_of_uint8_images_as_torch(shape, size):
    """uint8 images resize by nearest as in PyTorch (seed 903720 was refused), exactly."""
    x = np.random.default_rng(0).integers(0, 256, shape).astype(np.uint8)
    want = torch.nn.functional.interpolate(torch.from_numpy(x), size=size, mode="nearest")
    got = tp.nn.functional.interpolate(tp.tensor(x), size=size, mode="nearest")
    assert got.dtype == tp.uint8 and np.array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("fn", ["svdvals", "svd", "pinv", "nuclear_norm", "matrix_rank"])
def test_svd_of_a_non_finite_matrix_never_reaches_lapack(fn):
    """NumPy's LAPACK can loop forever on a non-finite matrix (a fuzzed nuclear_norm never
    returned). TensorPlay answers before it, as PyTorch: a NaN is refused naming the batch
    element, a matrix with an infinity has NaN singular values (so NaN norms and
    pseudo-inverses, rank 0); the other matrices of the batch are untouched."""
    a = np.random.default_rng(0).standard_normal((3, 3, 4))
    a[1, 1, 2] = inf
    call = {"svdvals": lambda lib, t: lib.linalg.svdvals(t),
            "svd": lambda lib, t: lib.linalg.svd(t)[1],
            "pinv": lambda lib, t: lib.linalg.pinv(t),
            "nuclear_norm": lambda lib, t: lib.linalg.matrix_norm(t, "nuc"),
            "matrix_rank": lambda lib, t: lib.linalg.matrix_rank(t)}[fn]
    ours, theirs = call(tp, tp.tensor(a)), call(torch, torch.tensor(a))
    _same([ours], [theirs], rtol=1e-10, atol=1e-12)
    a[2, 0, 0] = nan
    with pytest.raises(tp.errors.LinAlgError, match=r"\(Batch element 2\): The algorithm "
                       r"failed to converge because the input matrix contained non-finite"):
        call(tp, tp.tensor(a))
    with pytest.raises(RuntimeError, match="non-finite"):
        call(torch, torch.tensor(a))


def test_renorm_backward_takes_float32_norms_in_float64_on_the_cpu():
    """Rows of 1e30s: the forward's float32 norm overflows (the rows become 0), PyTorch's
    backward takes the norms in the CPU's accumulate dtype, float64, and gets finite
    gradients (TensorPlay's were NaN)."""
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((2, 3)) * 1e30).astype(np.float32)
    g = rng.standard_normal((2, 3)).astype(np.float32)
    got = []
    for lib in (tp, torch):
        x = lib.tensor(a, requires_grad=True)
        lib.renorm(x, 2, 0, 100.0).backward(lib.tensor(g))
        got.append(x.grad)
    assert got[0].dtype == tp.float32
    _same([got[0]], [got[1]], rtol=1e-6, atol=1e-40)


@pytest.mark.parametrize("idx,off", [([1, 0, 2], [0]), ([0, 1, 2, 3], [0, 2]), ([3, 0], [0]),
                                     ([4, 3], [0, 1]), ([2, 1, 0, 4], [0, 1, 3])])
def test_embedding_bag_max_with_nan_rows_as_torch(idx, off):
    """PyTorch's max bag keeps its first row and takes each later row that is greater: a
    NaN first row stays, a later NaN is skipped (seed 915530: TensorPlay's maximum took
    every NaN, and its max_indices fell back to 0)."""
    from tensorplay._generated import functional as TF
    w = np.array([[1, 2], [nan, 5], [3, nan], [nan, nan], [-inf, 0]], dtype=np.float32)
    ours = TF._embedding_bag(tp.tensor(w), tp.tensor(idx), tp.tensor(off), False, 2, False,
                             None, False, -1)
    theirs = torch.ops.aten._embedding_bag(torch.tensor(w), torch.tensor(idx),
                                           torch.tensor(off), False, 2, False, None, False, -1)
    _same([ours[0]], [theirs[0]], rtol=0, atol=0)
    assert ours[3].tolist() == theirs[3].tolist()


def test_embedding_bag_takes_mixed_index_dtypes_as_int64():
    """int32 indices with int64 offsets: PyTorch promotes both (and its index outputs) to
    int64 (seed 926827: TensorPlay's outputs were int32)."""
    from tensorplay._generated import functional as TF
    ours = TF._embedding_bag(tp.ones(6, 3), tp.tensor([0, 1, 2, 3], dtype=tp.int32),
                             tp.tensor([0, 2]), False, 2, False, None, False, -1)
    theirs = torch.ops.aten._embedding_bag(torch.ones(6, 3),
                                           torch.tensor([0, 1, 2, 3], dtype=torch.int32),
                                           torch.tensor([0, 2]), False, 2, False, None, False, -1)
    assert [str(t.dtype).split(".")[1] for t in ours[1:]] == \
        [str(t.dtype).split(".")[1] for t in theirs[1:]]


def test_embedding_bag_backward_saves_only_the_tables_sizes():
    """The table's gradient needs only its sizes (PyTorch saves the table itself only for
    per_sample_weights' gradient): a write into it before backward is no error (seed
    914980)."""
    for lib in (tp, torch):
        w = lib.ones(4, 3, requires_grad=True)
        out = lib.nn.functional.embedding_bag(lib.tensor([0, 1, 3]), w, lib.tensor([0, 1]),
                                              mode="sum")
        with lib.no_grad():
            w[0] = 7
        out.sum().backward()
        assert w.grad.sum().item() == 9.0


@pytest.mark.parametrize("shape", [(4, 0), (0, 3), (2, 3, 0)])
def test_batch_norm_eval_of_an_empty_input_checks_nothing_else(shape):
    """An empty input in evaluation mode: PyTorch returns the empty result before it looks
    at the weight's shape (seed 922755: TensorPlay refused a weight of 3 for 0 channels)."""
    args = lambda lib: (lib.ones(2), lib.ones(2), lib.ones(2), lib.ones(2), False, 0.1, 1e-5)
    theirs = torch.native_batch_norm(torch.zeros(shape), *args(torch))
    ours = tp.native_batch_norm(tp.zeros(shape), *args(tp))
    assert tuple(ours[0].shape) == tuple(theirs[0].shape)
    with pytest.raises(RuntimeError):
        torch.native_batch_norm(torch.zeros(shape), *args(torch)[:4], True, 0.1, 1e-5)
    with pytest.raises(tp.errors.ShapeError):
        tp.native_batch_norm(tp.zeros(shape), *args(tp)[:4], True, 0.1, 1e-5)
@pytest.mark.parametrize("fn", [
    lambda lib, x: [(y := x * 2), y.detach()],
    lambda lib, x: [x.detach()],
    lambda lib, x: [lib.view_as_complex(x), lib.view_as_complex(x).detach()],
], ids=["result-and-its-detach", "detached-input", "complex-view-and-its-detach"])
def test_compiled_detached_output_keeps_requires_grad_apart(fn):
    """The compiled call of a function returning a value and its detach (the lowered
    graph returns one tensor for both, or the input itself) gives each output its own
    requires_grad, as eager (and PyTorch) does: marking the shared tensor
    non-differentiable took it from the other output, or gave it to the detached one."""
    compiled = tp.compile(lambda x: fn(tp, x))
    for _ in range(2):          # the capture, then the lowered graph
        x = tp.tensor([1.0, 2.0], dtype=tp.float64, requires_grad=True)
        got = compiled(x)
    want = fn(torch, torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True))
    assert [t.requires_grad for t in got] == [t.requires_grad for t in want]
    _same([tp.view_as_real(t) if t.is_complex() else t for t in got],
          [torch.view_as_real(t) if t.is_complex() else t for t in want])


@pytest.mark.parametrize("op", ["fmax", "fmin"])
def test_fmax_and_fmin_give_a_tie_to_self(op):
    """At a tie (-inf and -inf from poisoned inputs, or equal values) PyTorch's fmax/fmin
    backward gives the whole gradient to self; maximum/minimum split it evenly, which
    fmax/fmin built on them inherited. NaN handling and broadcasting as before."""
    a = [[0.3], [-inf], [1.2], [nan]]
    b = [[0.5, -2.0, -inf, 1.2, nan]]
    ours, theirs = _run_both(lambda lib, x, y: getattr(lib, op)(x, y), [a, b])
    _same(ours, theirs)


@pytest.mark.parametrize("shape, weight", [((1, 1, 3, 4, 0), (2, 1, 2, 2, 2)),
                                           ((1, 2, 0), (3, 2, 1))])
def test_convolution_refuses_an_empty_spatial_dim(shape, weight):
    """An input empty in a spatial dim (not in its batch or channels) is refused, as
    PyTorch's backend selection does; padding gave TensorPlay a non-empty result."""
    k = len(shape) - 2
    args = ((1,) * k, (1,) * k, (1,) * k, False, (0,) * k, 1)
    with pytest.raises(RuntimeError):
        torch.convolution(torch.ones(shape), torch.ones(weight), None, *args)
    with pytest.raises(tp.errors.ShapeError, match="'input'"):
        tp.convolution(tp.ones(shape), tp.ones(weight), None, *args)


@pytest.mark.parametrize("shape, weight", [((0, 1, 3, 4, 2), (2, 1, 2, 2, 2)),
                                           ((0, 1, 3, 4), (2, 1, 2, 2))])
def test_convolution_of_an_empty_batch(shape, weight):
    """An empty batch gives an empty result and zero weight gradients (the per-image
    path's chunk step was 0 for it: range() refused)."""
    k = len(shape) - 2
    args = ((1,) * k, (1,) * k, (1,) * k, False, (0,) * k, 1)
    results = []
    for lib in (tp, torch):
        x, w = lib.ones(shape, requires_grad=True), lib.ones(weight, requires_grad=True)
        out = lib.convolution(x, w, None, *args)
        out.sum().backward()
        results.append([out, w.grad])
    assert tuple(results[0][0].shape) == tuple(results[1][0].shape)
    _same(results[0], results[1])


@pytest.mark.parametrize("shape, hxw", [((2, 4, 0), 3), ((2, 4, 3), 2)])
def test_native_group_norm_checks_the_element_count(shape, hxw):
    """An input that does not hold N * C * HxW elements is refused with a typed error
    naming 'input' (an empty one reached NumPy's reshape: an untyped ValueError)."""
    with pytest.raises(RuntimeError):
        torch.native_group_norm(torch.ones(shape), None, None, 2, 4, hxw, 2, 1e-5)
    with pytest.raises(tp.errors.ShapeError, match="'input'"):
        tp.native_group_norm(tp.ones(shape), None, None, 2, 4, hxw, 2, 1e-5)


def test_compiled_resize_of_an_intermediate_runs_eagerly():
    """resize_ of a value computed inside a compiled function changes its size outside
    the dispatcher: no node records it, so the lowered graph gave it back at its old size
    ((3, 4) for (2, 3)). It is a graph break now, and the compiled call matches eager."""
    def fn(lib, x):
        y = x * 2
        y.resize_((2, 3))
        return [x, y, y + 1]
    compiled = tp.compile(lambda x: fn(tp, x))
    data = np.arange(12.0).reshape(3, 4)
    for _ in range(2):          # the capture, then what the guard set runs
        got = compiled(tp.tensor(data))
    want = fn(torch, torch.tensor(data))
    assert [tuple(t.shape) for t in got] == [tuple(t.shape) for t in want]
    _same(got, want)


def test_addr_of_complex_vectors_takes_a_float_beta():
    """A float beta or alpha is refused for integral results only: a complex result (a
    float64 self, a complex64 vec1) takes it, as PyTorch's addr does."""
    self_, v1, v2 = np.float64(1.5), np.array([1 + 2j, -0.5j]), np.array([2.0, -1.0, 0.5])
    ours = tp.addr(tp.tensor(self_), tp.tensor(v1, dtype=tp.complex64), tp.tensor(v2),
                   beta=0.5, alpha=2)
    theirs = torch.addr(torch.tensor(self_), torch.tensor(v1, dtype=torch.complex64),
                        torch.tensor(v2), beta=0.5, alpha=2)
    assert ours.dtype.name == str(theirs.dtype).split(".")[-1]
    _same([tp.view_as_real(ours)], [torch.view_as_real(theirs)])
    with pytest.raises(tp.errors.DTypeError, match="'beta'"):
        tp.addr(tp.ones(2, 3, dtype=tp.int64), tp.ones(2, dtype=tp.int64),
                tp.ones(3, dtype=tp.int64), beta=0.5)


def test_group_norm_tangent_of_an_empty_batch():
    """group_norm's tangent formula viewed the input as (N, group, -1), which an empty
    batch cannot resolve: the tangent of an empty batch is empty, as PyTorch's."""
    import tensorplay.autograd.forward_ad as fw
    import torch.autograd.forward_ad as tfw
    shapes = []
    for lib, forward in ((tp, fw), (torch, tfw)):
        with forward.dual_level():
            x = forward.make_dual(lib.ones((0, 4, 3), dtype=lib.float64),
                                  lib.ones((0, 4, 3), dtype=lib.float64))
            out = lib.nn.functional.group_norm(x, 2)
            shapes.append(tuple(forward.unpack_dual(out).tangent.shape))
    assert shapes[0] == shapes[1] == (0, 4, 3)


def test_softmin_negates_in_the_input_dtype():
    """softmin(x, dtype=d) is softmax(-x, dtype=d), as PyTorch's: a uint8 input's
    negation wraps before the softmax sees it (TensorPlay cast to d first)."""
    x = [[1, 5, 200, 0], [3, 3, 255, 7]]
    ours = tp.nn.functional.softmin(tp.tensor(x, dtype=tp.uint8), 1, dtype=tp.float64)
    theirs = torch.nn.functional.softmin(torch.tensor(x, dtype=torch.uint8), 1,
                                         dtype=torch.float64)
    _same([ours], [theirs], rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("shape", [(0, 1, 5, 4), (1, 1, 3, 3)])
def test_im2col_result_is_writable(shape):
    """im2col's result is a tensor of its own: for an empty batch (and any other window
    view already contiguous) it was NumPy's read-only window view, and a write into it
    raised an untyped ValueError."""
    results = []
    for lib in (tp, torch):
        cols = lib.nn.functional.unfold(lib.ones(shape), (1, 1))
        cols[cols > 0] = 7
        results.append(cols)
    _same([results[0]], [results[1]])


@pytest.mark.parametrize("other", ["float32", "complex64"])
def test_einsum_of_mixed_dtypes_computes_in_the_promoted_dtype(other):
    """einsum of an int8 and a float32 (or complex64) operand: the result is promoted,
    and so must the arithmetic be (the kernel cast every operand to the first one's
    accumulation dtype: 0.5 became 0, and a complex part was dropped)."""
    a, b = [[1, -2, 4]], [[0.5 + 1j, -1.27 + 0.3j, 2 - 2j]]
    b = b if other == "complex64" else [[0.5, -1.27, 2.0]]
    ours = tp.einsum("ij,ij->ij", tp.tensor(a, dtype=tp.int8),
                     tp.tensor(b, dtype=getattr(tp, other)))
    theirs = torch.einsum("ij,ij->ij", torch.tensor(a, dtype=torch.int8),
                          torch.tensor(b, dtype=getattr(torch, other)))
    assert ours.dtype.name == other
    real = (lambda t: tp.view_as_real(t)) if other == "complex64" else (lambda t: t)
    treal = (lambda t: torch.view_as_real(t)) if other == "complex64" else (lambda t: t)
    _same([real(ours)], [treal(theirs)])


@pytest.mark.parametrize("fn", ["trapezoid", "cumulative_trapezoid"])
@pytest.mark.parametrize("x_dtype", ["bfloat16", "float16", "float64", "int64"])
def test_trapezoid_of_integer_samples_promotes_with_x(fn, x_dtype):
    """Integer samples y with sample points x: the result has the dtype of x * y, as
    PyTorch's x-spacing times (y[i] + y[i+1]) (bfloat16 for a bfloat16 x; TensorPlay made
    y float32 first); integer x and y still integrate in the default float."""
    y, x = [[1, 2, 3, 4, 5], [2, 0, 1, 7, 3]], [0, 1, 2, 3, 5]
    ours = getattr(tp, fn)(tp.tensor(y), tp.tensor(x, dtype=getattr(tp, x_dtype)))
    theirs = getattr(torch, fn)(torch.tensor(y), torch.tensor(x, dtype=getattr(torch, x_dtype)))
    assert ours.dtype.name == str(theirs.dtype).split(".")[-1]
    _same([ours], [theirs])


@pytest.mark.parametrize("fn", ["trapezoid", "cumulative_trapezoid"])
@pytest.mark.parametrize("bool_arg", ["y", "x"])
def test_trapezoid_refuses_bool_samples(fn, bool_arg):
    """A bool y or x is refused, as PyTorch's 'received a bool input' check does (bool y
    was integrated as float32)."""
    y, x = [True, False, True], [0.0, 1.0, 3.0]
    with pytest.raises(RuntimeError, match="bool"):
        getattr(torch, fn)(torch.tensor(y if bool_arg == "y" else [1.0, 2.0, 3.0]),
                           torch.tensor(x if bool_arg == "y" else y))
    with pytest.raises(tp.errors.DTypeError, match=f"'{bool_arg}'"):
        getattr(tp, fn)(tp.tensor(y if bool_arg == "y" else [1.0, 2.0, 3.0]),
                        tp.tensor(x if bool_arg == "y" else y))


def test_adaptive_max_pool_takes_the_last_nan_of_a_window():
    """PyTorch's loop keeps `val > max || isnan(val)`: of several NaNs in a window the
    last one's index (seed 1028196: TensorPlay's argmax took the first)."""
    x = [[[nan, nan, nan, 2.0, nan, 1.0], [1.0, 3.0, nan, 3.0, 0.0, 5.0]]]
    for fn, arg, size in ((tp.nn.functional.adaptive_max_pool1d, x, 4),
                          (tp.nn.functional.adaptive_max_pool2d, [x], (2, 3))):
        ours = fn(tp.tensor(arg), size, return_indices=True)[1]
        theirs = getattr(torch.nn.functional, fn.__name__)(torch.tensor(arg), size,
                                                           return_indices=True)[1]
        assert ours.tolist() == theirs.tolist()


# ---- empty feature dims ----------------------------------------------------------------------
def _rnn_cell(name):
    """lib.<name>(input, hx, w_ih, w_hh, b_ih, b_hh); lstm_cell takes (hx, cx) as a list."""
    if name == "lstm_cell":
        return lambda lib, x, h, c, *w: lib.lstm_cell(x, [h, c], *w)
    return lambda lib, x, h, *w: getattr(lib, name)(x, h, *w)


@pytest.mark.parametrize("name,gates", [("rnn_relu_cell", 1), ("rnn_tanh_cell", 1),
                                        ("gru_cell", 3), ("lstm_cell", 4)])
@pytest.mark.parametrize("batch,inp,hidden", [(2, 0, 2), (0, 0, 2), (0, 3, 2), (2, 3, 0)])
def test_rnn_cells_of_an_empty_dim(name, gates, batch, inp, hidden):
    """An RNN cell of input_size 0 (seed 1205024: rnn_relu_cell, hx holding a -inf):
    linear's backward flattened the input to (-1, 0) rows, which NumPy cannot resolve,
    and raised an untyped ValueError; PyTorch gives the empty gradients of input and
    w_ih. Batch 0 and hidden 0 (PyTorch takes both) the same way."""
    rng = np.random.default_rng(0)
    hx = rng.standard_normal((batch, hidden))
    if hx.size:
        hx[-1, 0] = -inf
    states = [hx] + ([rng.standard_normal((batch, hidden))] if name == "lstm_cell" else [])
    arrays = ([rng.standard_normal((batch, inp))] + states
              + [rng.standard_normal(s) for s in [(gates * hidden, inp),
                                                  (gates * hidden, hidden),
                                                  (gates * hidden,), (gates * hidden,)]])
    got, want = _run_both(_rnn_cell(name), arrays, dtype="float32")
    assert [tuple(g.shape) for g in got] == [tuple(w.shape) for w in want]
    _same(got, want, rtol=1e-5, atol=1e-6)


EMPTY_FEATURES = [((2, 0), (3, 0)), ((4, 2, 0), (3, 0)), ((2, 3), (0, 3)), ((4, 2, 3), (0, 3))]


@pytest.mark.parametrize("x_shape,w_shape", EMPTY_FEATURES)
def test_linear_of_an_empty_feature_dim(x_shape, w_shape):
    """in_features or out_features 0: linear's gradients are empty (w.r.t. the empty
    operand) or zero, as PyTorch's, where its backward kernel could not flatten the
    batch dims of an empty row with reshape(-1, 0)."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(x_shape), rng.standard_normal(w_shape),
              rng.standard_normal(w_shape[:1])]
    got, want = _run_both(lambda lib, x, w, b: lib.nn.functional.linear(x, w, b), arrays)
    assert [tuple(g.shape) for g in got] == [tuple(w.shape) for w in want]
    _same(got, want)


@pytest.mark.parametrize("x_shape,w_shape", EMPTY_FEATURES)
def test_composite_linear_backward_of_an_empty_feature_dim(x_shape, w_shape):
    """The composed _linear_backward (the backends without a kernel, CUDA's) flattened
    the rows with reshape((-1, 0)) as the CPU kernel did: its gradients against
    PyTorch's, called directly on CPU tensors."""
    from tensorplay.composite import linalg as composite_linalg
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    grad = rng.standard_normal(x_shape[:-1] + w_shape[:1])
    got = composite_linalg.linear_backward(tp.tensor(grad), tp.tensor(x), tp.tensor(w),
                                           [True, True, True])
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, np.zeros(w_shape[0])))
    torch.nn.functional.linear(tx, tw, tb).backward(torch.tensor(grad))
    assert [tuple(g.shape) for g in got] == [tuple(t.shape) for t in (tx, tw, tb)]
    _same(got, [tx.grad, tw.grad, tb.grad])


@pytest.mark.parametrize("of", ["base", "window"])
# (an in-place write into the complex view itself under grad mode stays refused: a
# CopySlices of a complex window of a real base is not implemented)
@pytest.mark.parametrize("write,grad_mode", [("base", False), ("view", False),
                                             ("base", True)])
def test_view_as_complex_after_an_in_place_write_rebuilds_its_history(of, write, grad_mode):
    """A view_as_complex view whose base changed in place rebuilds its history by
    replaying the op, as PyTorch's view_func: a view (v.t()) of it raised the error for
    writes into a complex view of a real tensor (seeds 2035712, 2089565: the write was
    in no_grad mode). Values and gradients against torch, a write of the base under grad
    mode too."""
    a = np.arange(24, dtype=np.float64).reshape(3, 8) / 7

    def run(lib):
        leaf = lib.tensor(a, requires_grad=True)
        x = leaf * 1  # a non-leaf, so that an in-place write under grad mode is allowed
        real = x if of == "base" else x[:, 2:6]
        z = lib.view_as_complex(real.reshape(3, -1, 2) if of == "base" else
                                real.unflatten(-1, (2, 2)))
        target = x if write == "base" else z
        with (lib.enable_grad() if grad_mode else lib.no_grad()):
            target.mul_(3)
        zt = z.t()
        (zt * (1 + 2j)).real.sum().backward()
        return zt, leaf.grad

    (got, got_grad), (want, want_grad) = run(tp), run(torch)
    assert got.stride() == want.stride() and got.dtype.is_complex
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-15)
    np.testing.assert_allclose(got_grad.numpy(), want_grad.numpy(), rtol=1e-15)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rms_norm_of_a_real_input_with_a_complex_weight_has_a_real_tangent(dtype):
    """rms_norm(real x, complex weight) is real (the complex product is cast back, its
    imaginary part discarded, as in PyTorch): its tangent is the real part of the
    formula's complex one, of the output's dtype (seeds 9800890, 9908633: complex128)."""
    import warnings
    import torch.autograd.forward_ad as torch_fwad
    rng = np.random.default_rng(5)
    x, dx = (rng.standard_normal((4, 5)).astype(dtype) for _ in range(2))
    w, dw = ((rng.standard_normal(5) + 1j * rng.standard_normal(5)).astype(np.complex64)
             for _ in range(2))
    fwad = tp.autograd.forward_ad
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # both warn of the discarded imaginary part
        with fwad.dual_level():
            out = tp.nn.functional.rms_norm(fwad.make_dual(tp.tensor(x), tp.tensor(dx)), [5],
                                            weight=fwad.make_dual(tp.tensor(w), tp.tensor(dw)))
            got, got_t = fwad.unpack_dual(out)
        with torch_fwad.dual_level():
            out = torch.nn.functional.rms_norm(
                torch_fwad.make_dual(torch.tensor(x), torch.tensor(dx)), [5],
                weight=torch_fwad.make_dual(torch.tensor(w), torch.tensor(dw)))
            want, want_t = torch_fwad.unpack_dual(out)
    assert str(got.dtype) == str(got_t.dtype) == str(want_t.dtype).replace("torch", "tensorplay")
    np.testing.assert_allclose(got_t.numpy(), want_t.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ord", [1, -1, math.inf, -math.inf])
@pytest.mark.parametrize("dim", [(0, 1), (1, 0), (2, 0)])
def test_a_matrix_norm_by_sums_is_not_a_view(ord, dim):
    """matrix_norm's 1 and inf orders reduce each dim away (keepdim=False) as PyTorch
    does, where a squeeze after a keepdim reduction made the result a view, and
    detach_() refused it (seed 10012316: linalg_norm(A, inf)). Values and gradients
    against PyTorch too."""
    a = np.random.default_rng(2).standard_normal((4, 3, 2))
    x, xt = tp.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    got = tp.linalg.matrix_norm(x, ord, dim)
    want = torch.linalg.matrix_norm(xt, ord, dim)
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    got.detach_()
    assert got.grad_fn is None and not got.requires_grad


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (0, 3, 2)])
def test_cross_entropy_of_no_samples_with_probabilities_is_nan_with_a_zero_tangent(shape):
    """An empty input, class probabilities, 'mean': PyTorch fills the sum of nothing with
    NaN and negates it, so its tangent is -0.0 where dividing by the 0 samples gave NaN
    (seed 10318007)."""
    fw, tfw = tp.autograd.forward_ad, torch.autograd.forward_ad
    with fw.dual_level():
        got = fw.unpack_dual(tp.nn.functional.cross_entropy(
            fw.make_dual(tp.zeros(*shape), tp.ones(*shape)), tp.zeros(*shape)))
    with tfw.dual_level():
        want = tfw.unpack_dual(torch.nn.functional.cross_entropy(
            tfw.make_dual(torch.zeros(*shape), torch.ones(*shape)), torch.zeros(*shape)))
    assert math.isnan(got.primal.item()) and math.isnan(want.primal.item())
    assert got.tangent.item() == want.tangent.item() == 0.0
    assert math.copysign(1, got.tangent.item()) == math.copysign(1, want.tangent.item())


def test_a_copy_to_an_integer_dtype_of_a_stale_split_view_records_nothing():
    """Seed 11708313: a view of split's outputs whose base was written under no_grad
    refuses to make its grad_fn again, in both libraries; a copy to an integer or bool
    dtype has no gradient, records nothing and so never asks (PyTorch's
    output_differentiability condition of _to_copy). A float copy still raises."""
    for lib in (tp, torch):
        base = lib.randn(3, 4, dtype=lib.float64).requires_grad_()
        view = base.split_with_sizes([3])[0]
        with lib.no_grad():
            base[...] = base
        for dtype in (lib.uint8, lib.int32, lib.int64, lib.bool):
            copy = view.to(dtype)
            assert copy.dtype == dtype and not copy.requires_grad
        with pytest.raises(RuntimeError, match="view"):
            view.float()


def test_atan2_of_an_unsigned_integer_gives_the_float_arguments_true_gradient():
    """Seed 11904111: d atan2(a, b) / db = -a / (a^2 + b^2) for a uint8 `a`. PyTorch's
    backward computes -a (and a * a) in uint8, which wraps (-3 is 253), and returned 44.8
    here; TensorPlay computes in the float result's dtype, as NumPy's float64 does."""
    a = np.array([[3, 4, 8, 7], [2, 5, 0, 8], [6, 3, 7, 6]], np.uint8)
    w = np.random.default_rng(0).uniform(-1, 1, (3, 4))
    b = tp.tensor(1.409937787775669, dtype=tp.float64, requires_grad=True)
    (tp.atan2(tp.tensor(a), b) * tp.tensor(w)).sum().backward()
    af = a.astype(np.float64)
    expected = (w * (-af / (af ** 2 + 1.409937787775669 ** 2))).sum()
    np.testing.assert_allclose(b.grad.item(), expected, rtol=1e-12)
