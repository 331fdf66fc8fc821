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
