"""Tangents the OpInfo sweep cannot check against PyTorch's forward mode, checked against
central finite differences in float64 instead: where PyTorch's tangent is not the
derivative (triangular_solve, cholesky_inverse: KNOWN in test_forward_ad_ops.py) and
ops PyTorch gives no forward formula (the fused backward ops forward-over-reverse runs
into, the CTC loss)."""
from __future__ import annotations

import pytest

import tensorplay as tp
import tensorplay.autograd.forward_ad as fw
from tensorplay._generated import functional as F

D = tp.float64


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def assert_tangents_match_differences(f, primals, checked=None):
    """f's tangents at `primals` along random directions equal (f(x + h v) - f(x - h v)) / 2h
    for the outputs listed in `checked` (all by default)."""
    tp.manual_seed(0)
    tangents = [tp.randn(*p.shape, dtype=D) for p in primals]
    with fw.dual_level():
        outs = _outputs(f(*[fw.make_dual(p, t) for p, t in zip(primals, tangents)]))
        got = [fw.unpack_dual(o).tangent for o in outs]
    h = 1e-6
    plus = _outputs(f(*[p + h * t for p, t in zip(primals, tangents)]))
    minus = _outputs(f(*[p - h * t for p, t in zip(primals, tangents)]))
    for i in checked if checked is not None else range(len(outs)):
        expected = (plus[i] - minus[i]) / (2 * h)
        assert got[i] is not None, f"output {i} has no tangent"
        assert float((got[i] - expected).abs().max()) < 1e-6, f"output {i}"


def _well_conditioned(n):
    return tp.randn(n, n, dtype=D) + n * tp.eye(n, dtype=D)


@pytest.mark.parametrize("upper, transpose, unitriangular",
                         [(True, False, False), (False, True, False), (True, True, True)])
def test_triangular_solve_reads_one_triangle(upper, transpose, unitriangular):
    tp.manual_seed(1)
    A, b = _well_conditioned(3), tp.randn(3, 2, dtype=D)
    assert_tangents_match_differences(
        lambda b, A: tp.triangular_solve(b, A, upper, transpose, unitriangular), [b, A])


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_inverse(upper):
    tp.manual_seed(2)
    factor = _well_conditioned(3)
    factor = factor.triu() if upper else factor.tril()
    assert_tangents_match_differences(
        lambda f: tp.cholesky_inverse(f.triu() if upper else f.tril(), upper), [factor])


def test_layer_norm_backward():
    tp.manual_seed(3)
    x, w, b = tp.randn(3, 4, 5, dtype=D), tp.randn(4, 5, dtype=D), tp.randn(4, 5, dtype=D)

    def backward(grad, x, w):
        _, mean, rstd = F.native_layer_norm(x, [4, 5], w, b, 1e-5)
        return F.native_layer_norm_backward(grad, x, [4, 5], mean, rstd, w, b,
                                            [True, True, True])
    assert_tangents_match_differences(backward, [tp.randn(3, 4, 5, dtype=D), x, w])


def test_rms_norm_backward():
    tp.manual_seed(4)
    x, w = tp.randn(3, 4, 5, dtype=D), tp.randn(5, dtype=D)

    def backward(grad, x, w):
        _, rstd = F._fused_rms_norm(x, [5], w, 1e-5)
        return F._fused_rms_norm_backward(grad, x, [5], rstd, w, [True, True])
    assert_tangents_match_differences(backward, [tp.randn(3, 4, 5, dtype=D), x, w])


def test_ctc_loss_through_log_softmax():
    tp.manual_seed(5)
    targets = tp.tensor([[1, 2], [3, 3]])
    assert_tangents_match_differences(
        lambda x: F._ctc_loss(x.log_softmax(2), targets, [6, 5], [2, 2], 0, False),
        [tp.randn(6, 2, 4, dtype=D)], checked=[0])


@pytest.mark.parametrize("fused", ["op", "function"])
def test_lstm_sequence(fused):
    """The fused LSTM recurrence, as the op and as nn.LSTM's autograd Function (its jvp):
    output, h_n and c_n (the workspace has no tangent)."""
    from tensorplay.nn.modules._rnn_fused import LSTMSequence
    tp.manual_seed(6)
    run = F._lstm_sequence if fused == "op" else LSTMSequence.apply
    primals = [tp.randn(4, 2, 12, dtype=D), tp.randn(2, 3, dtype=D), tp.randn(2, 3, dtype=D),
               tp.randn(12, 3, dtype=D)]
    assert_tangents_match_differences(run, primals, checked=[0, 1, 2])


@pytest.mark.parametrize("fused", ["op", "function"])
@pytest.mark.parametrize("bias", [True, False])
def test_gru_sequence(fused, bias):
    """The fused GRU recurrence, as the op and as nn.GRU's autograd Function: output and
    h_n (the workspace has no tangent), with and without b_hh."""
    from tensorplay.nn.modules._rnn_fused import GRUSequence
    tp.manual_seed(7)
    run = F._gru_sequence if fused == "op" else GRUSequence.apply
    primals = [tp.randn(4, 2, 9, dtype=D), tp.randn(2, 3, dtype=D), tp.randn(9, 3, dtype=D)]
    if bias:
        primals.append(tp.randn(9, dtype=D))
        assert_tangents_match_differences(run, primals, checked=[0, 1])
    else:
        assert_tangents_match_differences(lambda *a: run(*a, None), primals, checked=[0, 1])
