"""More regression tests for silent wrong results and error gaps (issue 12), each checked
against torch."""
import numpy as np
import pytest
import torch

import tensorplay as tp


def _raises_like_torch(fn):
    """Run fn(torch) and fn(tp): both raise (tp a TensorPlay typed error) or both return
    equal results."""
    try:
        want = fn(torch)
    except Exception:          # noqa: BLE001 - torch's errors are untyped RuntimeErrors
        with pytest.raises(tp.errors.TensorPlayError):
            fn(tp)
        return None
    got = fn(tp)
    return got, want


# ---- NaN in selection ops: values as torch's, each index points at its value -----------
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


# ---- float32 scans keep a double intermediate, as torch's CPU kernels -----------------
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


# ---- results keep their inputs' layout (clone's preserve_format, TensorIterator) ------
_LAYOUTS = {
    "transposed": lambda t: t.transpose(0, 2),
    "permuted": lambda t: t.permute(1, 2, 0),
    "last_two": lambda t: t.transpose(1, 2),
    "sliced": lambda t: t.transpose(0, 2)[::2],            # not dense: dense in its order
    "size_one": lambda t: t[:, :1].permute(2, 1, 0),
    "expanded": lambda t: t[:1].expand(3, 3, 4),
}
_OPS = {
    "clone": lambda m, x: x.clone(),
    "exp": lambda m, x: x.exp(),
    "neg": lambda m, x: -x,
    "sigmoid": lambda m, x: m.sigmoid(x),
    "add_self": lambda m, x: x + x,
    "mul_scalar": lambda m, x: x * 3,
    "lt": lambda m, x: x < x * 2,
    "where": lambda m, x: m.where(x > 0, x, -x),
    "add_contiguous": lambda m, x: x + x.contiguous(),
    "contiguous_add": lambda m, x: x.contiguous() + x,
    "broadcast": lambda m, x: x + m.ones(x.shape[-1]),
}


@pytest.mark.parametrize("layout", list(_LAYOUTS))
@pytest.mark.parametrize("op", list(_OPS))
def test_result_strides_follow_the_inputs_like_torch(op, layout):
    data = np.arange(48, dtype=np.float32).reshape(2, 6, 4) - 20
    t = _OPS[op](torch, _LAYOUTS[layout](torch.tensor(data).reshape(2, 6, 4)[:, :3]))
    p = _OPS[op](tp, _LAYOUTS[layout](tp.tensor(data).reshape(2, 6, 4)[:, :3]))
    assert p.stride() == t.stride()
    assert p.is_contiguous() == t.is_contiguous()
    np.testing.assert_allclose(np.asarray(p.tolist()), t.numpy(), rtol=1e-6)


def test_contiguous_of_a_transposed_clone_copies_like_torch():
    def run(m):
        y = m.arange(6.0).reshape(2, 3).t().clone()
        z = y.contiguous()
        r = y.reshape(6)
        return (z.data_ptr() == y.data_ptr(), z.stride(), r.data_ptr() == y.data_ptr(),
                y.clone(memory_format=m.contiguous_format).stride())

    assert run(tp) == run(torch)


@pytest.mark.parametrize("fmt", ["contiguous_format", "preserve_format", "channels_last"])
def test_clone_memory_format_like_torch(fmt):
    data = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)

    def run(m):
        x = m.tensor(data).permute(0, 2, 3, 1).transpose(1, 2)
        x.requires_grad_()
        y = x.clone(memory_format=getattr(m, fmt))
        (y * y).sum().backward()
        return y.stride(), y.tolist(), x.grad.tolist()

    assert run(tp) == run(torch)
    with pytest.raises(tp.errors.ShapeError, match="rank 4"):
        tp.ones(3).clone(memory_format=tp.channels_last)


# ---- errors: raised iff torch raises, as TensorPlay typed errors ----------------------
_ERROR_CASES = {
    "argmax_bool": lambda m: m.argmax(m.tensor([True, False])),
    "argmin_bool_dim": lambda m: m.tensor([True, False]).argmin(0),
    "topk_bool": lambda m: m.topk(m.tensor([True, False]), 1),
    "kthvalue_bool": lambda m: m.kthvalue(m.tensor([True, False]), 1),
    "median_bool": lambda m: m.median(m.tensor([True, False])),
    "median_dim_bool": lambda m: m.median(m.tensor([True, False]), 0),
    "pow_bool_bool": lambda m: m.pow(m.tensor([True, False]), m.tensor([True, True])),
    "pow_bool_int": lambda m: m.pow(m.tensor([True, False]), 2),
    "clamp_bool_tensor_bounds": lambda m: m.clamp(m.tensor([True, False]), m.tensor(False),
                                                  m.tensor(True)),
    "clamp_bool_number_bounds": lambda m: m.clamp(m.tensor([True, False]), 0, 1),
    "mode_bool": lambda m: m.mode(m.tensor([True, False, True])),
    "sort_bool": lambda m: m.sort(m.tensor([True, False, True])),
    "narrow_0dim": lambda m: m.tensor(2.0).narrow(0, 0, 1),
    "unflatten_0dim": lambda m: m.tensor(2.0).unflatten(0, [1]),
    "topk_0dim_k0": lambda m: m.topk(m.tensor(0.9), 0),
    "topk_0dim_k1": lambda m: m.topk(m.tensor(0.9), 1),
    "isub_broadcast_larger": lambda m: m.zeros(3).sub_(m.ones(3)[None]),
    "iadd_broadcast_larger": lambda m: m.zeros(3).add_(m.ones(2, 3)),
    "imul_broadcast_larger": lambda m: m.zeros(3).mul_(m.ones(1, 3)),
    "idiv_broadcast_larger": lambda m: m.zeros(3).div_(m.ones(1, 1, 3)),
    "iadd_broadcast_fits": lambda m: m.zeros(2, 3).add_(m.ones(1, 3)),
    "addcmul_bool_operand": lambda m: m.addcmul(m.tensor([1.0, 2.0]), m.tensor([True, False]),
                                                m.tensor([2.0, 3.0])),
    "addcmul_int_with_bools": lambda m: m.addcmul(m.tensor([1, 2]), m.tensor([True, False]),
                                                  m.tensor([True, True])),
    "addcmul_all_bool": lambda m: m.addcmul(m.tensor([True]), m.tensor([True]),
                                            m.tensor([False])),
    "addcdiv_bool_divisor": lambda m: m.addcdiv(m.tensor([1.0, 2.0]), m.tensor([1.0, 2.0]),
                                                m.tensor([True, False])),
    "median_of_nothing": lambda m: m.median(m.ones(0, 3)),
    "median_of_no_ints": lambda m: m.median(m.ones(0, dtype=m.int64)),
    "avg_pool2d_int64": lambda m: m.nn.functional.avg_pool2d(
        3 - m.arange(16).reshape(1, 1, 4, 4), 3, 1, 1),
    "avg_pool2d_int64_no_pad_count": lambda m: m.nn.functional.avg_pool2d(
        3 - m.arange(16).reshape(1, 1, 4, 4), 3, 1, 1, count_include_pad=False),
    "avg_pool2d_int32": lambda m: m.nn.functional.avg_pool2d(
        m.arange(16, dtype=m.int32).reshape(1, 1, 4, 4), 2),
}


@pytest.mark.parametrize("case", list(_ERROR_CASES))
def test_errors_like_torch(case):
    result = _raises_like_torch(_ERROR_CASES[case])
    if result is not None:
        got, want = result
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g.tolist()), np.asarray(w.tolist()))
            assert str(g.dtype)[-5:] == str(w.dtype)[-5:]


# ---- gradients and flags that differed from torch ----------------------------------------
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


def test_copy_of_a_float_requiring_grad_into_ints_does_not_require_grad():
    def run(m):
        a = m.zeros(3, dtype=m.int64)
        a.copy_(m.tensor([1.5, 2.0, -3.7], requires_grad=True))
        return a.requires_grad, a.is_leaf, a.tolist()

    assert run(tp) == run(torch)


def test_empty_list_index_is_an_int64_index():
    def run(m):
        x = m.arange(6.0).reshape(2, 3)
        y = x[[]]
        x[[]] = 5.0
        return tuple(y.shape), str(y.dtype)[-7:], tuple(x[:, []].shape), x.sum().item()

    assert run(tp) == run(torch)


# ---- in-place writes whose result would depend on the order of the writes -------------
_OVERLAP_CASES = {
    "add_into_expanded": lambda m, d: m.zeros(1, 3, device=d).expand(2, 3).add_(1),
    "exp_into_expanded": lambda m, d: m.zeros(1, 3, device=d).expand(2, 3).exp_(),
    "copy_into_expanded": lambda m, d: m.zeros(1, 3, device=d).expand(2, 3).copy_(
        m.ones(2, 3, device=d)),
    "fill_expanded": lambda m, d: m.zeros(1, 3, device=d).expand(2, 3).fill_(1),
    "mul_partial": lambda m, d: (lambda x: x[:3].mul_(x[1:]))(m.arange(4.0, device=d)),
    "mul_partial_other_side": lambda m, d: (lambda x: x[1:].mul_(x[:3]))(
        m.arange(4.0, device=d)),
    "copy_partial": lambda m, d: (lambda x: x[:3].copy_(x[1:]))(m.arange(4.0, device=d)),
    "addcmul_partial": lambda m, d: (lambda x: x[:3].addcmul_(x[1:], x[1:]))(
        m.arange(4.0, device=d)),
    "add_itself": lambda m, d: (lambda x: x.add_(x))(m.arange(4.0, device=d)),
    "not_dense_is_allowed": lambda m, d: (lambda x: x[:, :2].add_(x[:, 1:]))(
        m.arange(6.0, device=d).reshape(2, 3)),
}


@pytest.mark.parametrize("case", list(_OVERLAP_CASES))
def test_overlapping_inplace_writes_like_torch(case):
    fn = _OVERLAP_CASES[case]
    result = _raises_like_torch(lambda m: fn(m, "cpu").tolist())
    if result is not None:
        assert result[0] == result[1]
