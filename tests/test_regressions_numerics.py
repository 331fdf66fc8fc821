"""Values and gradients that differed from PyTorch, found by the differential fuzzer
(tests/fuzzing), each checked against torch: NaN and infinities in values and gradients,
the rounding of half types, double intermediates, selection among NaNs."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from opinfo.db_losses import _ref_fused_ce_backward


def _same(got, want, **kw):
    np.testing.assert_allclose(np.asarray(got.detach().tolist(), dtype=np.float64),
                               want.detach().double().numpy(), equal_nan=True, **kw)


def test_view_of_expanded_leaf_changed_in_place_shares_its_gradient():
    """A view made before its (expanded) base changed in place gets PyTorch's
    as_strided history: a memory slot's gradient is divided among its readers."""
    def run(m):
        v0 = (m.arange(4, dtype=m.float64) + 1).expand(3, 4).detach().requires_grad_(True)
        v1 = v0.select(0, 2)
        v2 = v0.unsqueeze(-1)
        with m.no_grad():
            v1.neg_()
        w = m.arange(12, dtype=m.float64).reshape(3, 4)
        ((v0 * w).sum() + (v1 * w[0] * 10).sum() + (v2.squeeze(-1) * w * 100).sum()).backward()
        return v0.grad
    _same(run(tp), run(torch))


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_grad_with_infinite_weight_matches_torch_nans(dtype, create_graph):
    """PyTorch's kernel factors the input gradient as rstd*g*w + b*x + c; an infinite
    weight gives NaN (inf - inf inside b and c) where the textbook form gives +-inf."""
    xs = np.random.default_rng(0).standard_normal((3, 5))
    ws = np.array([0.5, np.inf, -1.0, 2.0, 1.5])
    gs = np.random.default_rng(1).standard_normal((3, 5))

    def run(m):
        dt = getattr(m, dtype)
        x = m.tensor(xs.tolist(), dtype=dt, requires_grad=True)
        w = m.tensor(ws.tolist(), dtype=dt, requires_grad=True)
        b = m.tensor([0.1] * 5, dtype=dt, requires_grad=True)
        y = m.nn.functional.layer_norm(x, [5], w, b, 1e-5)
        return m.autograd.grad(y, (x, w, b), m.tensor(gs.tolist(), dtype=dt),
                               create_graph=create_graph)

    for got, want in zip(run(tp), run(torch)):
        _same(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("p", [float("inf"), float("-inf")])
def test_inf_norm_grad_with_nan_goes_to_the_nan_only(p):
    def run(m):
        x = m.tensor([[1.0, -3.0, float("nan")], [2.0, -2.0, 1.0]], requires_grad=True)
        y = m.tensor([[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]], requires_grad=True)
        (m.linalg.vector_norm(x, p, dim=1).sum() + m.dist(x, y, p)
         + m.nn.functional.pairwise_distance(x, y, p=abs(p)).sum()).backward()
        return x.grad, y.grad
    for got, want in zip(run(tp), run(torch)):
        _same(got, want, rtol=1e-6)


@pytest.mark.parametrize("dims, padding", [(1, 0), (2, 0), (2, 1), (3, 0), (3, 1)])
@pytest.mark.parametrize("poison", ["input", "weight"])
def test_conv_grads_with_nonfinite_element_stay_local(dims, padding, poison):
    """A NaN/inf must reach only the gradients of the windows that read it (the run
    layout's wrapped garbage positions must add nothing, not 0 * inf)."""
    rng = np.random.default_rng(dims)
    xs = rng.standard_normal((2, 2) + (5,) * dims)
    ws = rng.standard_normal((3, 2) + (2,) * dims)
    if poison == "input":
        xs[(0, 1) + (1,) + (4,) * (dims - 1)] = np.nan
        xs[(1, 0) + (0,) * (dims - 1) + (4,)] = np.inf
    else:
        ws[(0, 1) + (1,) * dims] = np.nan
        ws[(2, 0) + (0,) * dims] = -np.inf

    def run(m):
        x = m.tensor(xs.tolist(), dtype=m.float64, requires_grad=True)
        w = m.tensor(ws.tolist(), dtype=m.float64, requires_grad=True)
        conv = getattr(m.nn.functional, f"conv{dims}d")
        y = conv(x, w, None, 1, padding)
        y.backward(m.ones_like(y))
        return y, x.grad, w.grad

    for got, want in zip(run(tp), run(torch)):
        _same(got, want, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("equation, shapes", [
    ("ab,bc,cd->ad", ((2, 3), (3, 4), (4, 2))),
    ("ab,bc,cd,de->ae", ((2, 3), (3, 4), (4, 2), (2, 3))),
    ("ij,j,jk->ik", ((2, 3), (3,), (3, 4)))])
def test_einsum_contracts_left_to_right_as_torch(equation, shapes):
    """The order decides whether an inf meets one of the opposite sign (NaN) or not."""
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(s) for s in shapes]
    arrays[-1].reshape(-1)[1] = -np.inf
    arrays[0].reshape(-1)[0] = np.inf
    got = tp.einsum(equation, *[tp.tensor(a.tolist(), dtype=tp.float64) for a in arrays])
    want = torch.einsum(equation, *[torch.tensor(a) for a in arrays])
    _same(got, want, rtol=1e-12)


@pytest.mark.parametrize("equation, shapes", [
    ("ab,bc,cd->ad", ((2, 3), (3, 4), (4, 2))),
    ("ab,bc,cd,de->ea", ((2, 3), (3, 4), (4, 2), (2, 3))),
    ("ij,j,jk->ik", ((2, 3), (3,), (3, 4))),
    ("ii,ij,jk->k", ((3, 3), (3, 4), (4, 2)))])
@pytest.mark.parametrize("poison", [False, True])
def test_einsum_grads_go_back_through_the_left_to_right_chain(equation, shapes, poison):
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s) for s in shapes]
    if poison:
        arrays[-1].reshape(-1)[1] = -np.inf

    def run(m, grads=(True,) * len(shapes)):
        ts = [m.tensor(a.tolist(), dtype=m.float64, requires_grad=r)
              for a, r in zip(arrays, grads)]
        y = m.einsum(equation, *ts)
        y.backward(m.ones_like(y) * 0.5)
        return [y] + [t.grad for t in ts if t.requires_grad]

    for grads in [(True,) * len(shapes), (False,) * (len(shapes) - 1) + (True,),
                  (False, True) + (False,) * (len(shapes) - 2)]:
        for got, want in zip(run(tp, grads), run(torch, grads)):
            _same(got, want, rtol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_ignored_row_does_not_read_an_infinite_weight(reduction):
    xs = np.random.default_rng(6).standard_normal((4, 3))
    weight = [float("inf"), 0.5, 2.0]
    target = [1, 2, 1, 2]

    def run(m):
        x = m.tensor(xs.tolist(), requires_grad=True)
        out, total = m.ops.aten.nll_loss_forward(x, m.tensor(target), m.tensor(weight),
                                                 {"none": 0, "mean": 1, "sum": 2}[reduction],
                                                 1) if m is torch else \
            m.nll_loss_forward(x, m.tensor(target), m.tensor(weight), reduction, 1)
        return (out,) if reduction == "none" else (out, total)   # torch: total 0 for 'none'

    for got, want in zip(run(tp), run(torch)):
        _same(got, want, rtol=1e-6)


def test_ravel_of_a_strided_tensor_is_a_copy():
    def run(m):
        x = m.arange(48.0).as_strided((2, 3, 4), (24, 8, 2))
        r = x.ravel()
        r.zero_()
        return x, r.stride()
    (x, stride), (tx, tstride) = run(tp), run(torch)
    _same(x, tx)
    assert stride == tstride


@pytest.mark.parametrize("how", ["detach_", "requires_grad_"])
def test_leaf_detached_in_place_after_use_gets_no_grad(how):
    def run(m):
        x = m.ones(2, 3, requires_grad=True)
        w = m.ones(2, 3, requires_grad=True)
        y = (x * 2 + w).sum()
        x.detach_() if how == "detach_" else x.requires_grad_(False)
        y.backward()
        return x.grad, w.grad
    (g, wg), (tg, twg) = run(tp), run(torch)
    assert g is None and tg is None
    _same(wg, twg)


@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_rounded_division_gradient_is_zeros_even_for_an_infinite_grad(mode):
    def run(m):
        a = m.tensor(1.5, requires_grad=True)
        b = m.tensor([[1.0, 0.0], [2.0, 3.0]], requires_grad=True)
        m.log2(m.div(a, b, rounding_mode=mode)).sum().backward()
        return a.grad, b.grad
    for got, want in zip(run(tp), run(torch)):
        _same(got, want)


def test_prod_grad_with_two_zeros_and_a_nan_is_zeros():
    def run(m):
        x = m.tensor([[2.0, 0.0, 3.0], [1.0, float("nan"), 0.0]], requires_grad=True)
        m.prod(x).backward()
        return x.grad
    _same(run(tp), run(torch))


_EDGES = [-np.inf, np.inf, np.nan, 0.0, -0.0, -1.0, 2.5]


@pytest.mark.parametrize("exponent", [0.5, -0.5, -1, 2, 3, -2, 1.5])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pow_python_exponent_takes_torch_special_kernels(exponent, dtype):
    """PyTorch computes x ** 0.5 / -0.5 / -1 / 2 / 3 / -2 by sqrt, rsqrt, reciprocal and
    products: rsqrt(-inf) is NaN, rsqrt(-0) is -inf; the gradient uses x ** (e - 1)."""
    def run(m):
        x = m.tensor(_EDGES, dtype=getattr(m, dtype), requires_grad=True)
        y = x ** exponent
        y.backward(m.ones_like(y))
        return y, x.grad
    for got, want in zip(run(tp), run(torch)):
        _same(got, want, rtol=1e-6)


def test_cumprod_grad_with_zeros_infs_and_nans_matches_torch():
    rng = np.random.default_rng(0)
    for _ in range(40):
        a = rng.choice(_EDGES, size=(3, 5))
        g = rng.standard_normal((3, 5))
        dim = int(rng.integers(2))

        def run(m):
            x = m.tensor(a.tolist(), dtype=m.float64, requires_grad=True)
            m.cumprod(x, dim).backward(m.tensor(g.tolist(), dtype=m.float64))
            return x.grad
        _same(run(tp), run(torch), rtol=1e-12)


@pytest.mark.parametrize("op", ["index_fill", "masked_fill"])
def test_fill_value_grad_ignores_nan_grads_of_unfilled_positions(op):
    def run(m):
        x = m.tensor([[1.0, -1.0, 4.0], [-2.0, 9.0, -3.0]], requires_grad=True)
        v = m.tensor(2.0, requires_grad=True)
        if op == "index_fill":
            y = x.index_fill(1, m.tensor([1]), v)
        else:
            y = x.masked_fill(m.tensor([[False, True, False], [False, False, False]]), v)
        m.sqrt(y).sum().backward()     # NaN gradients where y < 0
        return x.grad, v.grad
    for got, want in zip(run(tp), run(torch)):
        _same(got, want, rtol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_grads_follow_torch_formulas(reduction):
    """An infinite weight gives +-inf (not inf - inf); the target's gradient is -logit(x)
    unclamped (x = 0 gives inf, not the -100 clamp of the forward)."""
    xs = [[0.2, 0.0, 0.7, 1.0], [0.5, 0.9, 0.3, 0.1]]
    ys = [[0.1, 0.6, 0.2, 0.3], [1.0, 0.0, 0.5, 0.5]]

    def run(m):
        x = m.tensor(xs, dtype=m.float64, requires_grad=True)
        y = m.tensor(ys, dtype=m.float64, requires_grad=True)
        w = m.tensor([1.5, -float("inf"), 0.5, 2.0], dtype=m.float64)
        loss = m.nn.functional.binary_cross_entropy(x, y, weight=w, reduction=reduction)
        loss.backward(m.ones_like(loss))
        return loss, x.grad, y.grad
    for got, want in zip(run(tp), run(torch)):
        _same(got, want, rtol=1e-12)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_cosine_similarity_of_a_half_input_rounds_as_torch(dtype):
    """PyTorch divides the half input by its half norm before the float32 product."""
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((2, 3, 4)) * 3).tolist()
    b = (rng.standard_normal((3, 4)) * 3).tolist()
    got = tp.nn.functional.cosine_similarity(tp.tensor(a, dtype=getattr(tp, dtype)),
                                             tp.tensor(b))
    want = torch.nn.functional.cosine_similarity(torch.tensor(a, dtype=getattr(torch, dtype)),
                                                 torch.tensor(b))
    _same(got, want, rtol=1e-7)


def test_copy_into_half_sums_the_broadcast_gradient_in_src_dtype():
    def run(m):
        src = m.tensor(0.5, dtype=m.float64, requires_grad=True)
        dst = m.zeros(3, 4, dtype=m.float16)
        dst.copy_(src)
        w = m.tensor(np.linspace(-1, 1, 12).reshape(3, 4).tolist(), dtype=m.float16)
        (dst * w + dst * 0.3).sum().backward()
        return src.grad
    _same(run(tp), run(torch), rtol=1e-12)


@pytest.mark.parametrize("fn", ["var_mean", "std_mean"])
def test_var_mean_gradient_of_a_nan_mean_still_flows(fn):
    """The Welford mean is NaN after an early inf, and its gradient (NaN) still reaches
    every element, as PyTorch's mean_backward does."""
    def run(m):
        x = m.tensor([[1.0, 2.0, 3.0], [4.0, float("inf"), 5.0]], requires_grad=True)
        v, mean = getattr(m, fn)(x, None)
        (v * 0.5 + mean * 0.25 + m.atan(mean)).backward()
        return mean, x.grad
    for got, want in zip(run(tp), run(torch)):
        _same(got, want)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32", "float64"])
def test_logit_eps_bounds_are_in_the_input_dtype(dtype):
    x = [0.0, 1e-7, 0.3, 0.9999, 1.0]
    got = tp.logit(tp.tensor(x, dtype=getattr(tp, dtype)), 1e-6)
    want = torch.logit(torch.tensor(x, dtype=getattr(torch, dtype)), 1e-6)
    _same(got, want, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_sigmoid_rounds_as_torch(dtype):
    """1 / (1 + exp(-x)) as PyTorch: 0 (not a subnormal) far left; halves in float32."""
    x = [0.0, -1.0, float("inf"), -float("inf"), float("nan"), -30.0, -100.0, 0.3, 2.5]
    got = tp.sigmoid(tp.tensor(x, dtype=getattr(tp, dtype)))
    want = torch.sigmoid(torch.tensor(x, dtype=getattr(torch, dtype)))
    _same(got, want, rtol=2e-7, atol=0)


@pytest.mark.parametrize("reduction", ["none", "sum"])
def test_cross_entropy_ignored_row_gets_zero_grad_even_for_nan_grad_output(reduction):
    xs = np.random.default_rng(8).standard_normal((4, 5))

    def run(m):
        x = m.tensor(xs.tolist(), dtype=m.float64, requires_grad=True)
        loss = m.nn.functional.cross_entropy(x, m.tensor([-100, 4, 3, 3]),
                                             reduction=reduction)
        loss.backward(m.full_like(loss, float("nan")))
        return x.grad
    _same(run(tp), run(torch))


# ---- NaN in selection ops: values as torch's, each index points at its value ---------
def _nan_rows(seed, dtype):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, size=(24, 7)).astype(np.float32)
    x[rng.random(x.shape) < 0.35] = np.nan
    x[0] = np.nan
    x[16:] = rng.integers(0, 3, size=(8, 7))     # a few rows without NaN
    return torch.tensor(x).to(dtype), tp.tensor(x).to(getattr(tp, str(dtype)[6:]))


def _assert_index_points_at_value(x, values, indices, dim):
    picked = np.take_along_axis(np.asarray(x.float().tolist()),
                                np.asarray(indices.tolist()), axis=dim)
    np.testing.assert_array_equal(picked, np.asarray(values.float().tolist()))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("op", ["kthvalue", "median", "topk", "topk_smallest", "sort",
                                "sort_descending", "mode"])
def test_selection_with_nan_values_match_torch_and_indices_agree(op, dtype):
    call = {"kthvalue": lambda m, x: m.kthvalue(x, 4, 1, keepdim=True),
            "median": lambda m, x: m.median(x, 1, keepdim=True),
            "topk": lambda m, x: m.topk(x, 3, 1),
            "topk_smallest": lambda m, x: m.topk(x, 3, 1, largest=False),
            "sort": lambda m, x: m.sort(x, dim=1, stable=True),
            "sort_descending": lambda m, x: m.sort(x, dim=1, descending=True, stable=True),
            "mode": lambda m, x: m.mode(x, 1, keepdim=True)}[op]
    tx, px = _nan_rows(0, dtype)
    (tv, ti), (pv, pi) = call(torch, tx), call(tp, px)
    if op == "mode":
        # torch's CPU mode sorts with `<` (unstable, NaN unordered): on rows with NaN its
        # runs depend on where NaNs land. Compare the NaN-free rows; elsewhere NaN is a
        # value of its own, the mode only of an all-NaN row.
        clean = ~torch.isnan(tx).any(1)
        assert clean.sum() > 3
        assert tv[clean].tolist() == [pv.tolist()[i] for i in np.flatnonzero(clean.numpy())]
        assert ti[clean].tolist() == [pi.tolist()[i] for i in np.flatnonzero(clean.numpy())]
        all_nan = torch.isnan(tx).all(1).numpy()
        assert np.array_equal(np.isnan(np.asarray(pv.float().tolist()))[:, 0], all_nan)
    else:
        np.testing.assert_array_equal(np.asarray(pv.float().tolist()),
                                      tv.float().numpy())
        if op.startswith("sort"):
            assert pi.tolist() == ti.tolist()
    _assert_index_points_at_value(tx, pv, pi, 1)


# ---- float32 scans keep a double intermediate, as torch's CPU kernels ----------------
@pytest.mark.parametrize("op", ["cumprod", "cumsum", "cumprod_", "cumsum_"])
@pytest.mark.parametrize("data", [[1e30, 1e30, 1e-30, 1e-30], [3e38, 3e38, -3e38],
                                  [1e20, 1e20, 0.0, 5.0], [1.0, 1e-8, 1e-8, 1e-8]])
def test_float32_scans_use_a_double_intermediate(op, data):
    def run(m):
        x = m.tensor(data)
        r = getattr(x, op)(0)
        return r.tolist(), r.dtype == m.float32

    got, want = run(tp), run(torch)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] and want[1]


# ---- gradients at NaN, ties and too few degrees of freedom ---------------------------
nan = float("nan")
_GRAD_CASES = {
    "amax_nan": (lambda m, x: m.amax(x, 1), [[1.0, nan, 1.0], [2.0, 2.0, 1.0]]),
    "amin_nan": (lambda m, x: m.amin(x, 0), [[nan, 1.0], [nan, 1.0]]),
    "max_all_nan": (lambda m, x: x.max(), [1.0, nan, nan, 0.0]),
    "min_all_tie": (lambda m, x: x.min(), [1.0, 0.0, 0.0, 3.0]),
    "maximum_nan": (lambda m, x: m.maximum(x, x.flip(0)), [nan, 1.0, 2.0, 2.0]),
    "minimum_nan": (lambda m, x: m.minimum(x, x.flip(0) * 2), [nan, 1.0, 2.0, 2.0]),
    "pow_true": (lambda m, x: x ** True, [2.0, 3.0]),
    "pow_false": (lambda m, x: x ** False, [2.0, 3.0]),
    "var_no_dof": (lambda m, x: m.var(x, correction=3), [1.0, 1.5, 2.0]),
    "var_no_dof_2": (lambda m, x: m.var(x, correction=2), [1.0, 2.0]),
    "var_dim_negative_dof": (lambda m, x: m.var(x, 1, correction=3), [[1.0, 2.0], [3.0, 5.0]]),
    "var_one_element": (lambda m, x: m.var(x), [3.0]),
}


@pytest.mark.parametrize("case", list(_GRAD_CASES))
def test_gradients_like_torch(case):
    fn, data = _GRAD_CASES[case]

    def run(m):
        x = m.tensor(data, requires_grad=True)
        with np.errstate(invalid="ignore"):
            fn(m, x).sum().backward()
        return x.grad.tolist()

    np.testing.assert_array_equal(run(tp), run(torch))


# ---- half inputs rounded at every step; NaN gradients that must not spread -----------
def _tp(t):
    """The TensorPlay twin of a torch tensor (same dtype and values, contiguous)."""
    name = str(t.dtype).split(".")[1]
    return tp.tensor(t.detach().float().numpy()).to(getattr(tp, name))


def _strided_half(dtype, seed):
    """A (2, 3, 2, 2) float16/bfloat16 input with stride 2 in the last dim, in both libraries."""
    g = torch.Generator().manual_seed(seed)
    big = torch.randn(2, 3, 2, 4, generator=g).to(dtype)
    name = str(dtype).split(".")[1]
    tp_big = tp.tensor(big.float().numpy()).to(getattr(tp, name))
    return big[..., ::2], tp_big[..., ::2]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_batch_norm_non_contiguous_half_rounds_every_step(dtype):
    """PyTorch's loop for a non-contiguous half input with half parameters runs on
    c10::Half values, rounding after each -, *, +, and eval's rstd comes from tensor ops
    on running_var; rounding once gives outputs one ulp off, which a following batch norm's
    float32 running statistics then show (fuzz seed 11701)."""
    for seed in range(5):
        th_x, tp_x = _strided_half(dtype, seed)
        assert tp_x.stride() == th_x.stride()
        g = torch.Generator().manual_seed(100 + seed)
        params = [torch.randn(3, generator=g) for _ in range(4)]
        params[3] = params[3].abs() + 0.1
        params = [p.to(dtype) for p in params]
        expected = torch.native_batch_norm(th_x, *params, False, 0.1, 1e-5)[0]
        got = tp.native_batch_norm(tp_x, *[_tp(p) for p in params], False, 0.1, 1e-5)[0]
        np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())


def test_cross_entropy_backward_ignored_row_is_zero_for_nan_grad():
    """An ignored row's gradient is 0 even for a NaN grad_output, as in PyTorch's
    cross_entropy backward (nll_loss_backward never writes it), in TensorPlay's kernel and
    in the opinfo reference (not 0 * NaN) (fuzz seeds 22454, 47684)."""
    x = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    target = torch.tensor([0, -100, 2, 3])
    nan = torch.tensor(float("nan"), dtype=torch.float64)
    torch.nn.functional.cross_entropy(x, target, reduction="sum").backward(nan)
    probs = torch.softmax(x.detach(), 1)
    reference = _ref_fused_ce_backward(nan, probs, target, None, "sum", -100,
                                       torch.tensor(3.0, dtype=torch.float64))
    got = tp._cross_entropy_backward(_tp(nan), _tp(probs), tp.tensor([0, -100, 2, 3]), None,
                                     "sum", -100, tp.tensor(3.0, dtype=tp.float64))
    np.testing.assert_array_equal(got.numpy(), x.grad.numpy())
    np.testing.assert_array_equal(reference.numpy(), x.grad.numpy())


def test_prelu_weight_grad_ignores_nan_at_positive_inputs():
    """The weight's gradient takes grad * self only where self <= 0; a NaN grad where
    self > 0 (cos_ of prelu(inf)) must not reach it (NaN * 0) (fuzz seed 88443)."""
    grads = []
    for lib in (torch, tp):
        x = lib.tensor([[float("inf"), -2.0]], requires_grad=True)
        w = lib.tensor([0.25, 0.5], requires_grad=True)
        y = lib.prelu(x, w)
        (y * lib.tensor([[float("nan"), 3.0]])).sum().backward()
        grads.append((x.grad.numpy(), w.grad.numpy()))
    for a, b in zip(*grads):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("value", [0.5, 1, 2])
def test_addcdiv_gradients_of_real_tensors_into_a_complex_result(value):
    """addcdiv(complex self, real tensor1, real tensor2): PyTorch takes value's factor in
    the real dtype (value / tensor2, value * tensor1 / tensor2 ** 2) before the complex grad
    multiplies it. Multiplying the complex product by value made inf * 0 a nan part (fuzz
    seed 1014778), and grad / -0.0 lost the sign of the zero."""
    def run(m):
        s = m.tensor([1 + 2j, 0.5 - 1j, 2 + 0j, -1 + 1j], requires_grad=True)
        t1 = m.tensor([float("inf"), 1.0, 2.0, -float("inf")], requires_grad=True)
        t2 = m.tensor([0.7, 0.0, -0.0, 2.0], requires_grad=True)
        m.addcdiv(s.to(m.complex128), t1, t2, value=value).backward(
            m.tensor([0.3 + 0.5j, 0.2 - 0.4j, -1 + 0.5j, 0.5 + 0j], dtype=m.complex128))
        return [np.asarray(t.grad.tolist()) for t in (s, t1, t2)]

    for got, want in zip(run(tp), run(torch)):
        np.testing.assert_array_equal(got, want)


def test_huber_loss_tangent_of_mixed_float_dtypes():
    """forward mode of huber_loss(float32 self, float16 target) (fuzz seed 1018995, KNOWN):
    PyTorch's tangent formula raises on the unpromoted dtypes (a PyTorch bug); TensorPlay's
    tangent is PyTorch's with the target cast to float32, the forward's dtype."""
    for x, t in ((1.5, 0.25), (3.0, -0.5)):
        got = tp.func.jvp(lambda a, b: tp.nn.functional.huber_loss(a, b, delta=2.0),
                          (tp.tensor(x), tp.tensor(t, dtype=tp.float16)),
                          (tp.tensor(0.7), tp.tensor(-1.3, dtype=tp.float16)))
        want = torch.func.jvp(lambda a, b: torch.nn.functional.huber_loss(a, b, delta=2.0),
                              (torch.tensor(x), torch.tensor(t, dtype=torch.float16).float()),
                              (torch.tensor(0.7), torch.tensor(-1.3, dtype=torch.float16).float()))
        for g, w in zip(got, want):
            assert g.dtype is tp.float32
            _same(g, w, rtol=1e-6)
        with pytest.raises(RuntimeError, match="Found dtype"):   # the bug, while it lasts
            torch.func.jvp(lambda a, b: torch.nn.functional.huber_loss(a, b, delta=2.0),
                           (torch.tensor(x), torch.tensor(t, dtype=torch.float16)),
                           (torch.tensor(0.7), torch.tensor(-1.3, dtype=torch.float16)))


def test_ldexp_inplace_exponent_gradient_sums_elementwise():
    """ldexp_ takes ldexp's formula, as PyTorch's ldexp_ records LdexpBackward0: an
    infinite exponent gives results of both signs, inf - inf = NaN in the exponent's
    gradient (mul_'s formula summed grad * self first, then scaled: -inf) (fuzz seed
    1106126); finite exponents give PyTorch's gradients."""
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    for exponent in (float("inf"), 2.0, -1.5):
        grads = []
        for lib in (tp, torch):
            a = lib.tensor(x, requires_grad=True)
            e = lib.tensor(exponent, dtype=lib.float64, requires_grad=True)
            b = a * 1.0
            b.ldexp_(e)
            (b * lib.tensor(w)).sum().backward()
            grads.append((e.grad.numpy(), a.grad.numpy()))
        for ours, theirs in zip(*grads):
            np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_batch_norm_mean_of_cancelling_huge_float32_values_is_summed_in_double():
    """PyTorch's contiguous batch-norm kernel sums a float32 channel in double (acc_type):
    the mean of +-1e30s that cancel to 1e26 is right to float32's last digit there, where
    float32 sums were 1e-6 off (fuzz seed 1205154); the running mean follows it."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = (rng.standard_normal((2, 3, 2, 2)) * 3e29).astype(np.float32)
        means = []
        for lib in (tp, torch):
            running = lib.zeros(3)
            _, mean, _ = lib.native_batch_norm(lib.tensor(x), None, None, running,
                                               lib.ones(3), True, 0.1, 1e-5)
            means.append((mean.numpy(), running.numpy()))
        for ours, theirs in zip(*means):
            np.testing.assert_allclose(ours, theirs, rtol=2e-7)


@pytest.mark.parametrize("name", ["modified_bessel_i0", "modified_bessel_i1",
                                  "modified_bessel_k0", "modified_bessel_k1"])
def test_modified_bessel_float32_overflows_and_underflows_as_torch(name):
    """PyTorch's float32 I and K are exp(+-|x|) * chbevl / sqrt(|x|) with float32's exp:
    I is inf from |x| = 88.72, where its float64 value rounded is still finite up to
    91.9 (fuzz seed 2026260: i1 of an int32 91, 5.1e37 against inf), and K runs
    through the subnormals to 0 as float32's exp(-x) does."""
    x = np.concatenate([np.linspace(-95, 95, 1901), np.linspace(85, 105, 2001),
                        [88.7, 88.8, 91, 91.9, 92, -91, 1e30, -1e30, np.inf, -np.inf, 0.0]])
    x = x.astype(np.float32)
    got = getattr(tp.special, name)(tp.tensor(x))
    want = getattr(torch.special, name)(torch.tensor(x))
    assert got.dtype == tp.float32
    ours, theirs = got.numpy(), want.numpy()
    np.testing.assert_array_equal(np.isinf(ours), np.isinf(theirs))
    np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))
    np.testing.assert_array_equal(ours == 0, theirs == 0)
    np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=1e-44, equal_nan=True)
    ints = tp.tensor([[89, 90, 91, -91]], dtype=tp.int32)
    _same(getattr(tp.special, name)(ints),
          getattr(torch.special, name)(torch.tensor([[89, 90, 91, -91]], dtype=torch.int32)))
    for v in (90.0, -91.0, 100.5):      # (0-dim)
        _same(getattr(tp.special, name)(tp.tensor(v)), getattr(torch.special, name)(torch.tensor(v)))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "strided"])
def test_batch_norm_half_statistics_round_as_pytorch(dtype, layout):
    """A half input whose parameters share its dtype: PyTorch keeps the statistics in
    that dtype (the mean and rstd it normalizes with are half values; bfloat16 rounds its
    sum of squares and its momentum too, and the strided loop updates in double), so the
    running statistics and the output equal PyTorch's bit for bit. They were one rounding
    apart (instance_norm's running mean of a bfloat16 input, fuzz seed 3006967). A float16
    value may still be one float16 rounding apart: PyTorch's output is a fused multiply-add
    and its strided mean a reduction of its own order."""
    rng = np.random.default_rng(1)
    for _ in range(10):
        x = (rng.standard_normal((3, 40, 3, 5)) * 3 + 1).astype(np.float32)
        params = [rng.standard_normal(40).astype(np.float32) for _ in range(3)]
        params.append(rng.random(40).astype(np.float32))
        results = []
        for lib in (tp, torch):
            d = getattr(lib, dtype)
            t = lib.tensor(x).to(d)
            if layout == "channels_last":
                t = t.contiguous(memory_format=lib.channels_last)
            elif layout == "strided":
                t = lib.tensor(x.transpose(0, 1, 3, 2).copy()).to(d).transpose(2, 3)
            w, b, rm, rv = (lib.tensor(p).to(d) for p in params)
            y = lib.nn.functional.batch_norm(t, rm, rv, None if layout == "channels_last"
                                             else w, b, True, 0.1, 1e-5)
            results.append([v.float().numpy() for v in (y, rm, rv)])
        for ours, theirs in zip(*results):
            if dtype == "bfloat16":
                np.testing.assert_array_equal(ours, theirs)
            else:
                np.testing.assert_allclose(ours, theirs, rtol=2 ** -10, atol=0)


def test_instance_norm_running_statistics_of_bfloat16_input_equal_pytorch():
    """instance_norm computes its running statistics through batch norm in the
    parameters' dtype: bfloat16 ones round as PyTorch's kernel rounds (fuzz seed 3006967)."""
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((2, 3, 2, 2)) * 3).astype(np.float32)
    params = [rng.standard_normal(3).astype(np.float32) for _ in range(3)]
    results = []
    for lib in (tp, torch):
        running_mean = lib.tensor(params[0])
        running_var = lib.tensor(np.abs(params[1])).to(lib.bfloat16)
        w = lib.tensor(params[2]).to(lib.bfloat16)
        y = lib.nn.functional.instance_norm(lib.tensor(x).to(lib.bfloat16), running_mean,
                                            running_var, w, w, use_input_stats=True,
                                            momentum=0.2)
        results.append([v.float().numpy() for v in (y, running_mean, running_var)])
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)


def _cancelling_batch(shape, rng):
    """(x, grad) float32 of `shape` (N, C, ...) whose per-channel sums of grad and of
    grad * (x - mean) cancel between images: image n + N/2 - 1 repeats image n's input
    with the opposite gradient, leaving the last image's small gradient as the total. One
    gradient value per image and channel (the rest 0), so each image's plane adds up
    exactly in any order, and PyTorch's sums (per image in float, across images in
    double) are exact: the float32 total across images is off by ~6e-8 of the 1e15s."""
    n = shape[0]
    half = (n - 1) // 2
    x = rng.standard_normal(shape) * 1e15
    x[half:2 * half] = x[:half]
    g = np.zeros(shape)
    first = (slice(None), slice(None)) + (0,) * (len(shape) - 2)
    g[first] = rng.standard_normal(shape[:2])
    g[half:2 * half] = -g[:half]
    g[2 * half:] *= 1e-6
    return x.astype(np.float32), g.astype(np.float32)


@pytest.mark.parametrize("shape", [(33, 3, 2, 2), (33, 32, 2, 2)])
@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("input_grad", [True, False])
def test_batch_norm_weight_and_bias_grads_of_cancelling_sums_as_pytorch(shape, train,
                                                                        input_grad):
    """Batch norm's grad_weight = sum(grad * (x - mean)) * invstd and grad_bias =
    sum(grad) over (N, H, W): PyTorch's CPU kernel adds each image's float sum into a
    double, so sums of huge values that cancel between images keep their digits. They
    were summed in float32 throughout (the fuzzer's 1e30 eval-mode input, seed 4029939:
    grad_weight 6e-5 off; here 1e-1), and the eval-mode backward was composed of ops
    that sum grad * xhat, not PyTorch's kernel. The (33, 32, 2, 2) case also runs
    channels_last (the NHWC kernel), against PyTorch's contiguous result: PyTorch's own
    channels-last kernel (which 2-D inputs take too) sums each thread's rows in float,
    no more accurate than a float32 sum."""
    rng = np.random.default_rng(4029939)
    x, g = _cancelling_batch(shape, rng)
    c = shape[1]
    stats = [rng.standard_normal(c).astype(np.float32), (rng.random(c) + 0.5).astype(np.float32)]
    params = [rng.standard_normal(c).astype(np.float32) for _ in range(2)]
    layouts = ["contiguous", "channels_last"] if len(shape) == 4 and c >= 32 else ["contiguous"]
    for layout in layouts:
        grads = []
        for lib in (tp, torch):
            xt = lib.tensor(x)
            if layout == "channels_last" and lib is tp:
                xt = xt.contiguous(memory_format=lib.channels_last)
            xt.requires_grad_(input_grad)
            w, b = (lib.tensor(p, requires_grad=True) for p in params)
            rm, rv = (lib.tensor(s) for s in stats)
            y = lib.nn.functional.batch_norm(xt, rm, rv, w, b, training=train, eps=1e-3)
            y.backward(lib.tensor(g))
            grads.append((w.grad, b.grad))
        (w_ours, b_ours), (w_theirs, b_theirs) = grads
        _same(w_ours, w_theirs, rtol=1e-6)
        _same(b_ours, b_theirs, rtol=1e-6)


@pytest.mark.parametrize("self_dtype,other_dtype", [("float32", "float16"),
                                                    ("float64", "float64")])
@pytest.mark.parametrize("y", [[0.3, -2.0, 0.0, float("-inf"), 1e4, -0.0, float("inf")],
                               [0.3, float("nan"), -2.0]])
def test_xlogy_self_gradient_where_a_zero_grad_meets_a_nan_log(self_dtype, other_dtype, y):
    """xlogy's self gradient is PyTorch's xlogy(grad, other), masked where self == 0 and
    other <= 0: a zero grad (the element masked by a later in-place clamp_) gives 0 even
    where log(other) is NaN (other = -inf, other < 0), and NaN only where other is NaN.
    It was grad * log(other) = 0 * NaN = NaN (fuzz seed 5034820: a float16 other with
    -inf, promoted to float32), and the log of a float16 other ran in float16."""
    x = np.array([[0.7], [0.0], [-1.3]])
    y = np.array([y])
    w = np.array([[0.5, -1.0, 2.0, 1.5, -0.7, 0.25, 3.0][:y.shape[1]]] * 3)
    grads = []
    for lib in (tp, torch):
        a = lib.tensor(x, dtype=getattr(lib, self_dtype), requires_grad=True)
        b = lib.tensor(y, dtype=getattr(lib, other_dtype), requires_grad=True)
        v = lib.xlogy(a, b)
        v.clamp_(-1, 1)         # in place on a non-leaf: its backward zeroes the NaNs
        ((a * 2.0).sum() + (v * lib.tensor(w, dtype=v.dtype)).sum()).backward()
        grads.append((a.grad, b.grad))
    (ga, gb), (ta, tb) = grads
    _same(ga, ta, rtol=1e-6)
    _same(gb, tb, rtol=1e-3)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matrix_exp_gradient_of_a_gradient_far_larger_than_the_matrix(dtype):
    """matrix_exp's gradient is the upper-right block of exp([[A^T, G], [0, A^T]]),
    linear in G. A G of norm far above A's (the gradient through exp_ of a matrix_exp:
    ~1e23 with |A| ~ 5, fuzz seed 5001573) set the scaling-and-squaring count of the
    whole block, and exp(A^T / 2^77) squared 77 times lost every digit: 1e84 in
    float64, inf in float32, for an exact value of 1e22..5e24. PyTorch's kernel loses
    them as well (4.5e21 for -3.49e22 there), so the reference is PyTorch's gradient of
    G / 2^k (a G of unit size, where PyTorch is accurate) times 2^k: the same value
    exactly, by linearity."""
    a = np.array([[1.3301, -0.4468, 1.1292, -0.2816], [2.7120, -0.5102, -2.3055, -0.7968],
                  [-0.8847, 1.1130, 4.4910, 0.7251], [2.8848, -0.6571, -0.5250, 1.8963]])
    g = np.random.default_rng(5001573).uniform(-1, 1, (2, 4, 4)) * np.exp(np.array(
        [[[1.0, 2.0, 9.0, 53.0]] * 4, [[0.5, 1.0, 1.5, 2.0]] * 4]))
    k = 2.0 ** np.floor(np.log2(np.abs(g).max((-2, -1), keepdims=True)))
    a = np.stack([a, a * 0.5])
    ta = torch.tensor(a, requires_grad=True)
    (want,) = torch.autograd.grad(torch.linalg.matrix_exp(ta), ta, torch.tensor(g / k))
    want = want * torch.tensor(k)
    x = tp.tensor(a, dtype=getattr(tp, dtype), requires_grad=True)
    tp.linalg.matrix_exp(x).backward(tp.tensor(g, dtype=getattr(tp, dtype)))
    _same(x.grad, want, rtol=1e-4 if dtype == "float32" else 1e-10)
