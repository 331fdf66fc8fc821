"""Which tensors an op's backward saves, in one program per root cause that the
differential fuzzer (tests/fuzzing) found: after `y = op(x)`, an in-place change of a
tensor the backward saved makes backward raise, of one it did not save does not. So the
set an op saves is visible, and must be PyTorch's.

Each program runs in both libraries (`lib` is tensorplay or torch) and must end alike.
The causes: a formula read a tensor PyTorch's does not (or the other way round), a
composite saved through other nodes than PyTorch's formula, the codegen skipped saving
where PyTorch's rule saves, an in-place op saved its input instead of its result.
The operator database's sweep of the same contract: tests/test_saved_tensors_match_torch.py.
"""
import numpy as np
import pytest
import torch

import tensorplay as tp

from saved_tensors import raises_in_both


# ---- out-of-place ops: one program per root cause, and the outcome it must have ------
RAISES, FREE = "raises", "free"


def _raises_or_free(lib, program):
    try:
        program(lib).backward()
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e), e
        return RAISES
    return FREE


def _t(lib, values, grad=False):
    return lib.tensor(values, dtype=lib.float64, requires_grad=grad)


# ---- the codegen's save rule: PyTorch skips a saved input only when a single formula,
# of a single input, reads it; tensor2 of addcdiv is read by two formulas.
def addcdiv_tensor2(lib):
    a, b, c = _t(lib, [1., 2.], True), _t(lib, [3., 4.]), _t(lib, [5., 6.])
    y = lib.addcdiv(a, b, c)
    with lib.no_grad():
        c.add_(1)
    return y.sum()


# ---- sizes-only formulas: topk/sort, cumsum, repeat_interleave keep no input.
def topk_self(lib):
    x = _t(lib, [1., 3., 2.], True)
    values, _ = lib.topk(x, 2)
    with lib.no_grad():
        x.add_(1.5)
    return values.sum()


def cumsum_self(lib):
    x = _t(lib, [1., 3., 2.], True)
    y = lib.cumsum(x, 0)
    with lib.no_grad():
        x.mul_(2)
    return y.sum()


def repeat_interleave_repeats(lib):
    x, r = _t(lib, [1., 3.], True), lib.tensor([2, 1])
    y = lib.repeat_interleave(x, r)
    r.add_(1)
    return y.sum()


# ---- formulas that read the tensor itself, as PyTorch's do.
def gather_self(lib):
    x = _t(lib, [[1., 3.], [2., 4.]], True)
    y = lib.gather(x, 1, lib.tensor([[0], [1]]))
    with lib.no_grad():
        x.add_(1)
    return y.sum()


def take_along_dim_indices(lib):
    x, i = _t(lib, [[1., 3.], [2., 4.]], True), lib.tensor([[0], [1]])
    y = lib.take_along_dim(x, i, dim=1)
    i.zero_()
    return y.sum()


# ---- ops that differentiate with a formula of their own over a composite forward.
def pow_scalar_result(lib):
    x = _t(lib, [1., 2.], True)
    y = x ** 2
    with lib.no_grad():
        y.add_(1)
    return y.sum()


def mse_loss_target(lib):
    x, target = _t(lib, [1., 2.], True), _t(lib, [0., 5.])
    loss = lib.nn.functional.mse_loss(x, target)
    target.add_(1)
    return loss


def smooth_l1_beta_0_target(lib):
    x, target = _t(lib, [1., 2.], True), _t(lib, [0., 5.])
    loss = lib.nn.functional.smooth_l1_loss(x, target, beta=0.0)
    target.add_(1)
    return loss


def std_mean_std(lib):
    x = lib.tensor([[1., 2., 4.], [0., 3., 3.]], requires_grad=True)
    std, mean = lib.std_mean(x, [1])
    with lib.no_grad():
        std.add_(1)
    return std.sum() + mean.sum()


def dist_other(lib):
    x, other = _t(lib, [1., 2.], True), _t(lib, [0., 5.])
    y = lib.dist(x, other, 3)
    other.add_(1)
    return y


def pairwise_distance_result(lib):
    x, other = _t(lib, [[1., 2.]], True), _t(lib, [[0., 5.]])
    y = lib.nn.functional.pairwise_distance(x, other, p=1.0)
    with lib.no_grad():
        y.neg_()
    return y.sum()


def sinc_self(lib):
    x = _t(lib, [0.5, 2.], True)
    y = lib.sinc(x)
    with lib.no_grad():
        x.add_(1)
    return y.sum()


def prelu_self(lib):
    x, w = _t(lib, [[-1., 2.]]), _t(lib, [0.25], True)
    y = lib.nn.functional.prelu(x, w)
    x.add_(1)
    return y.sum()


def linalg_vector_norm_self(lib):
    x = lib.tensor([[1., -2.]], requires_grad=True)
    y = lib.linalg.vector_norm(x, dtype=lib.float64)
    with lib.no_grad():
        x.add_(1)
    return y


def cov_fweights(lib):
    x, fw = lib.tensor([[1., 2., 4.]], requires_grad=True), lib.tensor([1, 2, 1])
    y = lib.cov(x, fweights=fw)
    fw.fill_(2)
    return y


# ---- batch norm saves the running stats (which its kernel updates without a version
# bump), group norm and nll_loss save a copy of a strided input.
def batch_norm_eval_running_var(lib):
    x = _t(lib, [[1., 2.], [3., 5.]], True)
    rm, rv = _t(lib, [0., 1.]), _t(lib, [1., 2.])
    y = lib.nn.functional.batch_norm(x, rm, rv, training=False)
    rv.add_(1)
    return y.sum()


def batch_norm_train_twice(lib):
    x = _t(lib, [[1., 2.], [3., 5.]], True)
    rm, rv = _t(lib, [0., 1.]), _t(lib, [1., 2.])
    y = lib.nn.functional.batch_norm(x, rm, rv, training=True)
    lib.nn.functional.batch_norm(x, rm, rv, training=True)
    return (y * y).sum()


def group_norm_strided_input(lib):
    x = lib.arange(16.).reshape(2, 2, 4)[..., ::2].detach().requires_grad_(True)
    y = lib.nn.functional.group_norm(x, 1)
    with lib.no_grad():
        x.mul_(2)
    return (y * y).sum()


def nll_loss_3d_strided_input(lib):
    x = lib.arange(24.).reshape(2, 3, 4)[..., ::2].detach().requires_grad_(True)
    y = lib.nn.functional.nll_loss(x, lib.tensor([[0, 1], [2, 0]]))
    with lib.no_grad():
        x.exp_()
    return y


PROGRAMS = [
    (addcdiv_tensor2, RAISES), (topk_self, FREE), (cumsum_self, FREE),
    (repeat_interleave_repeats, FREE), (gather_self, RAISES), (take_along_dim_indices, FREE),
    (pow_scalar_result, FREE), (mse_loss_target, RAISES), (smooth_l1_beta_0_target, FREE),
    (std_mean_std, RAISES), (dist_other, RAISES), (pairwise_distance_result, RAISES),
    (sinc_self, RAISES), (prelu_self, RAISES),
    (linalg_vector_norm_self, RAISES), (cov_fweights, RAISES), (batch_norm_eval_running_var, RAISES),
    (batch_norm_train_twice, FREE), (group_norm_strided_input, FREE),
    (nll_loss_3d_strided_input, FREE),
]


@pytest.mark.parametrize("program, expected", PROGRAMS, ids=[p.__name__ for p, _ in PROGRAMS])
def test_backward_raises_as_torch_after_an_inplace_change(program, expected):
    assert _raises_or_free(torch, program) == expected, "the program no longer shows the case"
    assert _raises_or_free(tp, program) == expected


# ---- cross_entropy, pad and group norm: the inputs their rules save ------------------
def _cross_entropy(shape):
    def make(lib):
        x = lib.ones(*shape, dtype=lib.float64, requires_grad=True)
        t = lib.zeros(shape[0], dtype=lib.int64)
        return [x], lib.nn.functional.cross_entropy(x, t, reduction="none")
    return make


@pytest.mark.parametrize("shape", [(4, 5), (0, 3)])   # seeds 36282, 17931
def test_cross_entropy_does_not_save_its_input(shape):
    def change(xs):
        xs[0][0:1].fill_(7)
    tp_raised, torch_raised = raises_in_both(_cross_entropy(shape), change)
    assert tp_raised == torch_raised


def test_cross_entropy_double_backward_without_its_input():
    # The gradient goes back to the input through the saved (differentiable) probabilities.
    values = [[0.5, -1.0, 2.0, 0.0], [1.5, 0.25, -0.5, 3.0], [0.0, 0.0, 1.0, -2.0]]
    results = []
    for lib in (tp, torch):
        x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
        loss = lib.nn.functional.cross_entropy(x, lib.tensor([2, 0, 3]))
        (g,) = lib.autograd.grad(loss, x, create_graph=True)
        (h,) = lib.autograd.grad((g * g).sum() + (g.sum(1) ** 2).sum(), x)
        results.append((g.detach().tolist(), h.tolist()))
    for a, b in zip(results[0], results[1]):
        for row_a, row_b in zip(a, b):
            assert row_a == pytest.approx(row_b, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])   # seeds 28031, 80045
def test_pad_saves_self_for_reflect_and_replicate_only(mode):
    def make(lib):
        x = lib.ones(2, 5, requires_grad=True)
        return [x], lib.nn.functional.pad(x, (2, 1), mode=mode)

    def change(xs):
        xs[0].fill_(2)
    tp_raised, torch_raised = raises_in_both(make, change)
    assert tp_raised == torch_raised


def test_native_group_norm_saves_a_strided_input_itself():
    # seed 90017: PyTorch's kernel refuses a strided input (TensorPlay takes it); its rule
    # saves the input, so the reference is a node that does (tests/opinfo).
    from opinfo.db_normalization import _ref_native_group_norm

    def make(lib):
        x = lib.ones(2, 6, 2, 4, dtype=lib.float64)[..., ::2].detach().requires_grad_()
        args = (None, None, 2, 6, 4, 3, 1e-5)
        out = (tp.native_group_norm(x, *args) if lib is tp
               else _ref_native_group_norm(x, *args))[0]
        return [x], out

    def change(xs):
        xs[0].fill_(2)
    assert raises_in_both(make, change) == (True, True)


# ---- cat, stack, hstack keep sizes, not their inputs ---------------------------------
@pytest.mark.parametrize("op", ["cat", "stack", "hstack"])
def test_cat_keeps_sizes_not_inputs_so_a_later_inplace_change_is_fine(op):
    def run(m):
        a = m.tensor([1.0, 2.0], requires_grad=True)
        b = a * 1
        c = getattr(m, op)([b, b.double()])
        b.mul_(2)
        (c * m.arange(4.0, dtype=m.float64).reshape(c.shape)).sum().backward()
        return a.grad.tolist(), str(c.dtype)[-7:]

    assert run(tp) == run(torch)


# ---- in-place ops and views ----------------------------------------------------------
VALUES = [-1.0, 0.0, 2.0, float("nan"), -3.0]


def _inplace_activation(lib, name):
    """An in-place activation: TensorPlay's function, PyTorch's aten op (torch has no
    public function for most of these in-place forms)."""
    fn = getattr(tp, name) if lib is tp else getattr(torch.ops.aten, name)
    return fn


def _gradients_or_raises(run):
    """'raises' when backward refuses a modified saved tensor, else the gradient."""
    try:
        return run()
    except RuntimeError as err:
        assert "modified by an inplace operation" in str(err), err
        if isinstance(err, tp.errors.TensorPlayError):
            assert isinstance(err, tp.errors.AutogradError)
        return "raises"


@pytest.mark.parametrize("name, args", [("elu_", ()), ("elu_", (1.5, 2.0, 0.5)),
                                        ("celu_", (0.5,)), ("selu_", ()),
                                        ("leaky_relu_", (0.2,)), ("leaky_relu_", (0.0,))])
@pytest.mark.parametrize("write_after", [False, True])
def test_inplace_activation_saves_its_result(name, args, write_after):
    """elu_, celu_, selu_ and leaky_relu_ save their result (PyTorch's EluBackward1,
    LeakyReluBackward1): a write into it afterwards makes backward raise; without one,
    the gradient computed from the result is PyTorch's (nan and 0 included)."""
    def run(lib):
        x = lib.tensor(VALUES, dtype=lib.float64, requires_grad=True)
        y = _inplace_activation(lib, name)(x.clone(), *args)
        if write_after:
            with lib.no_grad():
                y.mul_(1)
        y.backward(lib.ones(len(VALUES), dtype=lib.float64))
        return x.grad.tolist()

    got, want = _gradients_or_raises(lambda: run(tp)), _gradients_or_raises(lambda: run(torch))
    assert (got == "raises") == (want == "raises") == write_after
    if not write_after:
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("name, args", [("elu_", (-1.0,)), ("celu_", (-1.0,)),
                                        ("leaky_relu_", (-0.5,))])
def test_inplace_activation_with_negative_slope_refuses_backward(name, args):
    """The result's sign no longer tells the branch: PyTorch refuses the backward."""
    x = tp.tensor(VALUES, dtype=tp.float64, requires_grad=True)
    y = _inplace_activation(tp, name)(x.clone(), *args)
    with pytest.raises(tp.errors.AutogradError, match="negative slope"):
        y.sum().backward()
    tx = torch.tensor(VALUES, dtype=torch.float64, requires_grad=True)
    ty = _inplace_activation(torch, name)(tx.clone(), *args)
    with pytest.raises(RuntimeError, match="negative slope"):
        ty.sum().backward()


@pytest.mark.parametrize("written", ["self", "other"])
def test_kron_does_not_save_views_of_its_operands(written):
    """PyTorch's kron multiplies `_unsafe_view`s of its operands (own version counters):
    writing into an operand after kron does not make backward raise, and the gradient
    reads the written values."""
    def run(lib):
        a = lib.tensor([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], dtype=lib.float64,
                       requires_grad=True)
        b = lib.tensor([[2.0, 1.0], [-3.0, 0.25], [1.5, -0.5]], dtype=lib.float64,
                       requires_grad=True)
        y = lib.kron(a, b)
        with lib.no_grad():
            (a if written == "self" else b)[::2] = 7
        y.backward(lib.ones(tuple(y.shape), dtype=lib.float64))
        return a.grad.tolist(), b.grad.tolist()

    got, want = _gradients_or_raises(lambda: run(tp)), _gradients_or_raises(lambda: run(torch))
    assert got != "raises" and want != "raises"
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_unsafe_view_has_its_own_version_counter():
    x = tp.ones(2, 3)
    y = tp._generated.functional._unsafe_view(x, [3, 2])
    tx = torch.ones(2, 3)
    ty = torch.ops.aten._unsafe_view(tx, [3, 2])
    x.add_(1)
    tx.add_(1)
    assert (y._version, x._version) == (ty._version, tx._version) == (0, 1)
    assert y.tolist() == ty.tolist()      # the same memory


def _sdpa_inputs(lib, rng_seed=0):
    rng = np.random.default_rng(rng_seed)
    q, k, v = (lib.tensor(rng.standard_normal(shape), dtype=lib.float64, requires_grad=True)
               for shape in ((2, 3, 4), (2, 2, 4), (2, 2, 4)))
    mask = lib.tensor([[True, False], [False, False], [True, True]])   # row 1: all masked
    return q, k, v, mask


@pytest.mark.parametrize("written", ["query", "key", "attn_mask", "value", None])
def test_sdpa_saves_what_pytorch_math_path_saves(written):
    """PyTorch's math sdpa (3-D inputs) multiplies scaled copies of query and key, and
    turns a bool mask into a float one: writing into query, key or the mask afterwards
    does not make backward raise; writing into value (saved by the last matmul) does.
    A fully masked row gets a 0 output and 0 gradients (its `_safe_softmax`)."""
    def run(lib):
        q, k, v, mask = _sdpa_inputs(lib)
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        target = {"query": q, "key": k, "value": v, "attn_mask": mask}.get(written)
        if target is not None:
            with lib.no_grad():
                target[0] = True if target.dtype == lib.bool else 7.0
        out.backward(lib.ones(tuple(out.shape), dtype=lib.float64))
        return [t.grad.tolist() for t in (q, k, v)]

    got, want = _gradients_or_raises(lambda: run(tp)), _gradients_or_raises(lambda: run(torch))
    assert (got == "raises") == (want == "raises") == (written == "value")
    if got != "raises":
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("write_after", [False, True])
def test_square__backward_runs_and_ignores_later_writes(write_after):
    """square_ saves a copy of the original self, as PyTorch's (pow_(2)) does: written as
    mul_(self, self) it would save self as `other` and then overwrite it, and its backward
    would always raise."""
    def run(lib):
        x = lib.tensor([2.0, -3.0, 0.5], dtype=lib.float64, requires_grad=True)
        y = x.clone().square_()
        if write_after:
            with lib.no_grad():
                y.add_(1)
        y.sum().backward()
        return x.grad.tolist()

    assert run(tp) == run(torch) == [4.0, -6.0, 1.0]


SDPA_CASES = {
    # name: (query shape, key/value shape, kwargs); 4-D ones take PyTorch's fused kernel
    "3d": ((2, 3, 4), (2, 2, 4), {}),
    "4d fused": ((1, 2, 3, 4), (1, 2, 2, 4), {}),
    "4d fused float mask": ((1, 2, 3, 4), (1, 2, 2, 4), {"attn_mask": "float"}),
    "4d fused bool mask": ((1, 2, 3, 4), (1, 2, 2, 4), {"attn_mask": "bool"}),
    "4d fused gqa": ((1, 4, 3, 4), (1, 2, 2, 4), {"enable_gqa": True}),
    "4d math (batch broadcast)": ((2, 2, 3, 4), (1, 2, 2, 4), {}),
}


@pytest.mark.parametrize("case", list(SDPA_CASES))
@pytest.mark.parametrize("written", ["query", "key", "value", "attn_mask", "output"])
def test_sdpa_write_after_call_raises_as_in_pytorch(case, written):
    q_shape, kv_shape, kwargs = SDPA_CASES[case]

    def run(lib):
        rng = np.random.default_rng(1)
        q = lib.tensor(rng.standard_normal(q_shape), dtype=lib.float64, requires_grad=True)
        k, v = (lib.tensor(rng.standard_normal(kv_shape), dtype=lib.float64,
                           requires_grad=True) for _ in range(2))
        kw = dict(kwargs)
        mask = None
        if kw.get("attn_mask") == "float":
            mask = kw["attn_mask"] = lib.zeros(q_shape[-2], kv_shape[-2], dtype=lib.float64)
        elif kw.get("attn_mask") == "bool":
            mask = kw["attn_mask"] = lib.ones(q_shape[-2], kv_shape[-2], dtype=lib.bool)
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, **kw)
        target = {"query": q, "key": k, "value": v, "attn_mask": mask, "output": out}[written]
        if target is not None:
            with lib.no_grad():
                target.logical_not_() if target.dtype == lib.bool else target.add_(1)
        out.sum().backward()
        return [t.grad.tolist() for t in (q, k, v)]

    got, want = _gradients_or_raises(lambda: run(tp)), _gradients_or_raises(lambda: run(torch))
    assert (got == "raises") == (want == "raises")
    if got != "raises":
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


# ---- linear ops whose backward needs only the input's sizes (fuzz seeds 912090, 923400):
# an in-place write to the input after the call leaves backward working, and the gradient
# is PyTorch's. Each program: (loss, leaves).
def _leaf(lib, shape, seed=0, strided=False):
    values = np.random.default_rng(seed).standard_normal(shape)
    if strided:     # every other element of a wider storage, as the fuzzer's layouts
        wide = np.repeat(values, 2, axis=-1)
        return lib.tensor(wide, dtype=lib.float64)[..., ::2].detach().requires_grad_()
    return lib.tensor(values, dtype=lib.float64, requires_grad=True)


def _weighted(lib, y):
    return (y * lib.arange(y.numel(), dtype=y.dtype).reshape(y.shape)).sum()


def adaptive_avg_pool1d_to_1(lib):
    # PyTorch's adaptive pooling to an output of 1s is a mean, which saves nothing
    x = _leaf(lib, (1, 2, 7), strided=True)
    y = lib.adaptive_avg_pool1d(x, [1])
    with lib.no_grad():
        x.zero_()
    return _weighted(lib, y), [x]


def functional_adaptive_avg_pools_to_1(lib):
    F = lib.nn.functional
    x2, x3, x1 = _leaf(lib, (2, 3, 4, 5), 1), _leaf(lib, (2, 2, 3, 4), 2), _leaf(lib, (2, 5), 3)
    ys = [F.adaptive_avg_pool2d(x2, 1), F.adaptive_avg_pool2d(x2, (1, 1)),
          F.adaptive_avg_pool3d(x3, 1), F.adaptive_avg_pool1d(x1, 1)]
    with lib.no_grad():
        for x in (x2, x3, x1):
            x.mul_(3)
    return sum(_weighted(lib, y) for y in ys), [x2, x3, x1]


def stft_input(lib):
    x, w = _leaf(lib, (2, 48), 4), lib.hann_window(8, dtype=lib.float64)
    y = lib.stft(x, 8, window=w, center=False, return_complex=True)
    with lib.no_grad():
        x[::2] = 7
    return _weighted(lib, lib.view_as_real(y)), [x]


def unfold_and_as_strided_input(lib):
    # their backward reads the input's geometry only (PyTorch saves TensorGeometry(self))
    x = _leaf(lib, (3, 8), 5, strided=True)
    # (used before the write: a view used after it gets its history from the write)
    y = x.unfold(1, 3, 2) * 2
    z = x.as_strided((2, 3), (1, 2), 1) * 2
    with lib.no_grad():
        x.mul_(2)
    return _weighted(lib, y) + _weighted(lib, z), [x]


def zeros_like_other(lib):
    # `other: zeros_like(other)`: PyTorch saves other's sizes and type, not other
    a, b, c = _leaf(lib, (4,), 6), _leaf(lib, (4,), 7), _leaf(lib, (4,), 8)
    y = lib.copysign(a.detach(), b) + lib.nextafter(a.detach(), c)
    d = a.detach().clone()
    d.lt_(b)
    with lib.no_grad():
        b.add_(1)
        c.add_(1)
    return _weighted(lib, y) + _weighted(lib, d), [b, c]


def matmul_vector_or_matrix_times_a_stack(lib):
    # PyTorch folds other^T to rows (a copy where they do not merge): bmm saved other
    v, m = _leaf(lib, (4,), 9), _leaf(lib, (3, 4), 10)
    stack, strided = _leaf(lib, (2, 4, 5), 11), _leaf(lib, (2, 4, 5), 12, strided=True)
    y = lib.matmul(v, strided) + lib.matmul(m, stack).sum(-2)
    with lib.no_grad():
        stack.mul_(2)
        strided.mul_(2)
    return _weighted(lib, y), [v, m, stack, strided]


SAVES_NOTHING = [adaptive_avg_pool1d_to_1, functional_adaptive_avg_pools_to_1, stft_input,
                 unfold_and_as_strided_input, zeros_like_other,
                 matmul_vector_or_matrix_times_a_stack]


@pytest.mark.parametrize("program", SAVES_NOTHING, ids=[p.__name__ for p in SAVES_NOTHING])
def test_sizes_only_backward_works_after_an_inplace_write_with_torch_gradients(program):
    grads = []
    for lib in (torch, tp):
        loss, leaves = program(lib)
        loss.backward()         # raised "modified by an inplace operation" before
        grads.append([None if x.grad is None else np.asarray(x.grad.tolist())
                      for x in leaves])
    for ours, theirs in zip(grads[1], grads[0]):
        assert (ours is None) == (theirs is None)
        if theirs is not None:
            np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-11)


# ---- flash attention saves query, key, value, output and logsumexp, as PyTorch's CPU op
# (_scaled_dot_product_flash_attention_for_cpu) does: the fuzzer's twin, a math reference,
# saves them too (tests/opinfo/db_attention.py's _SavesLikeFlash; seeds 903286, 935862).
@pytest.mark.parametrize("changed", [0, 1, 2, 3, 4])
def test_flash_attention_saves_what_pytorchs_cpu_kernel_saves(changed):
    def make(lib):
        q, k, v = (_leaf(lib, (2, 1, n, 4), seed) for seed, n in ((0, 5), (1, 3), (2, 3)))
        mask = lib.tensor(np.random.default_rng(3).standard_normal((5, 3)), dtype=lib.float64)
        if lib is tp:
            out, lse = tp._scaled_dot_product_flash_attention(q, k, v, attn_mask=mask,
                                                              scale=0.4)[:2]
        else:
            out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                q, k, v, attn_mask=mask, scale=0.4)
        return [q, k, v, out, lse], out

    def change(tensors):
        tensors[changed].add_(1)
    assert raises_in_both(make, change) == (True, True)
