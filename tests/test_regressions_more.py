"""More regression tests for silent wrong results and error gaps (issue 12), each checked
against torch."""
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
