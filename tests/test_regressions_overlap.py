"""In-place writes into memory that overlaps (tensorplay/kernel_support/overlap.py), against torch.

Each case runs the same code with `m` = torch and `m` = tensorplay: it must raise in both
or in neither, and where it runs, leave the same values. Cases are grouped by the rule
they pin: internal overlap (an expanded tensor written to), partial overlap of an input
with the written tensor, copy_'s own rules, `x[...] = v`, the op-by-op table of which
in-place op checks what, the autograd of views over overlapping memory, and writes whose
result would depend on the order of the writes.
"""
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import TensorPlayError
from tensorplay.kernel_support import overlap
from torch_twins import raises_like_torch


def expanded(m, *shape, dtype="float32"):
    """A tensor of `shape` whose first dims all read one row: stride 0, internal overlap."""
    return m.arange(shape[-1]).to(getattr(m, dtype)).expand(*shape)


def rows(m, n=6, dtype="float32"):
    return m.arange(n * 4).to(getattr(m, dtype)).reshape(n, 4)


def _values(result):
    if isinstance(result, (tuple, list)):
        return [_values(r) for r in result]
    if result is None:
        return None
    return np.asarray(result.detach().tolist())


def _outcome(m, case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # PyTorch warns on index_put_ into expanded
        try:
            return "ok", _values(case(m))
        except TensorPlayError as e:
            return "raises", str(e)
        except RuntimeError as e:
            if m is tp:
                raise                       # TensorPlay raises its typed errors only
            return "raises", str(e)


def check(case, values=True):
    (want, want_values), (got, got_values) = _outcome(torch, case), _outcome(tp, case)
    assert got == want, f"PyTorch {want} ({want_values if want == 'raises' else ''}), " \
                        f"TensorPlay {got} ({got_values if got == 'raises' else ''})"
    if got == "ok" and values:
        for g, w in zip(_values_list(got_values), _values_list(want_values)):
            np.testing.assert_allclose(g, w, rtol=1e-6)


def _values_list(v):
    return v if isinstance(v, list) else [v]


# ---- internal overlap: has_internal_overlap is YES only with a stride-0 dim of size > 1
INTERNAL = {
    "add_ into expanded": lambda m: expanded(m, 3, 4).add_(1),
    "mul_ into expanded": lambda m: expanded(m, 3, 4).mul_(expanded(m, 3, 4)),
    "neg_ into expanded": lambda m: expanded(m, 3, 4).neg_(),
    "clamp_ into expanded": lambda m: expanded(m, 3, 4).clamp_(0, 1),
    "copy_ into expanded": lambda m: expanded(m, 3, 4).copy_(m.ones(4)),
    "exp_ into expanded, empty": lambda m: m.zeros(0).expand(2, 0).exp_(),
    "mul_ into expanded, empty": lambda m: m.zeros(0, 3).expand(2, 0, 3).mul_(2),
    "add_ into expanded, empty, by itself": lambda m: (lambda x: x.add_(x))(
        m.zeros(0).expand(2, 0)),
    "copy_ into expanded, empty": lambda m: m.zeros(0, 4).expand(3, 0, 4).copy_(m.ones(4)),
    "add_ into a size-1 dim of stride 0": lambda m: m.zeros(1, 4).expand(1, 4).add_(1),
    "nan_to_num_ into expanded float": lambda m: expanded(m, 3, 4).nan_to_num_(),
}


@pytest.mark.parametrize("name", list(INTERNAL))
def test_internal_overlap(name):
    check(INTERNAL[name])


def test_too_hard_overlap_is_allowed():
    # elements that share memory without a stride of 0: PyTorch cannot tell cheaply and
    # lets the write through (its values depend on the write order: only the outcome here)
    check(lambda m: m.zeros(6).as_strided((3, 3), (1, 1)).add_(1), values=False)
    # an expanded input is not dense either: no partial overlap to refuse
    check(lambda m: (lambda b: b[:3].add_(b[0].expand(3, 4)))(rows(m)), values=False)
    impl = tp.zeros(6).as_strided((3, 3), (1, 1))._impl
    assert overlap.has_internal_overlap(impl) is overlap.TOO_HARD


# ---- partial overlap of an input with the written tensor (TensorIterator's rule) ------
PARTIAL = {
    "x[:3] += x[1:]": lambda m: (lambda b: b[:3].add_(b[1:4]))(rows(m)),
    "x *= x[1:] (broadcast row)": lambda m: (lambda b: b[:1].mul_(b[1:2]))(rows(m)),
    "x += x": lambda m: (lambda b: b.add_(b))(rows(m)),
    "x += a second view of all of x": lambda m: (lambda b: b[0:3].add_(b[0:3]))(rows(m)),
    "x += x.t() (same memory, other strides)": lambda m: (lambda b: b.add_(b.t()))(
        m.arange(16.).reshape(4, 4)),
    "x += disjoint rows of x": lambda m: (lambda b: b[:2].add_(b[3:5]))(rows(m)),
    "lerp_ with a partial weight": lambda m: (lambda b: b[:2].lerp_(b[1:3], 0.5))(rows(m)),
    "addcmul_ with a partial tensor1": lambda m: (lambda b: b[:2].addcmul_(b[1:3], b[4:6]))(
        rows(m)),
}


@pytest.mark.parametrize("name", list(PARTIAL))
def test_partial_overlap(name):
    check(PARTIAL[name])


# ---- copy_: its own data is nothing to copy; src must broadcast to self's very shape ----
COPY = {
    "expanded x.copy_(x)": lambda m: (lambda x: x.copy_(x))(expanded(m, 3, 4)),
    "expanded x.copy_(same view)": lambda m: (lambda x: x.copy_(x[...]))(expanded(m, 3, 4)),
    "[3].copy_([1, 3])": lambda m: m.zeros(3).copy_(m.ones(1, 3)),
    "[].copy_([1])": lambda m: m.zeros(()).copy_(m.ones(1)),
    "[0, 3].copy_([1, 0, 3])": lambda m: m.zeros(0, 3).copy_(m.ones(1, 0, 3)),
    "[2, 3].copy_([3])": lambda m: m.zeros(2, 3).copy_(m.arange(3.)),
    "[2, 3].copy_([1, 3])": lambda m: m.zeros(2, 3).copy_(m.arange(3.).reshape(1, 3)),
    "[2, 3].copy_(int64 [3])": lambda m: m.zeros(2, 3).copy_(m.arange(3)),
}


@pytest.mark.parametrize("name", list(COPY))
def test_copy(name):
    check(COPY[name])


def test_copy_shape_error_names_both_shapes():
    with pytest.raises(TensorPlayError, match=r"output with shape \[3\] doesn't match the "
                                              r"broadcast shape \[1, 3\]"):
        tp.zeros(3).copy_(tp.ones(1, 3))


# ---- x[index] = value ------------------------------------------------------------------
def _set(index, value):
    def case(m):
        x = rows(m)
        v = value(m, x) if callable(value) else value
        x[index(m, x) if callable(index) else index] = v
        return x
    return case


def _set_expanded(index, value):
    def case(m):
        x = expanded(m, 3, 4)
        x[index(m, x) if callable(index) else index] = value(m, x) if callable(value) else value
        return x
    return case


SETITEM = {
    "expanded[::2] = 7": _set_expanded(slice(None, None, 2), 7),
    "expanded[...] = 7": _set_expanded(Ellipsis, 7),
    "expanded[0] = 7 (a dense row)": _set_expanded(0, 7),
    "expanded(2, 2)[0] = 7": lambda m: m.zeros(()).expand(2, 2).__setitem__(0, 7),
    "expanded[::2] = tensor(7)": _set_expanded(slice(None, None, 2), lambda m, x: m.tensor(7.)),
    "expanded[::2] = ones(4)": _set_expanded(slice(None, None, 2), lambda m, x: m.ones(4)),
    "expanded[...] = itself": _set_expanded(Ellipsis, lambda m, x: x),
    "expanded[mask] = 7": _set_expanded(lambda m, x: m.ones(3, 4, dtype=m.bool), 7),
    "expanded[idx] = 7": _set_expanded(lambda m, x: m.tensor([0]), 7),
    "x[1:] = x[0]": _set(slice(1, None), lambda m, x: x[0]),
    "x[0:2] = x[1] (a row read first)": _set(slice(0, 2), lambda m, x: x[1]),
    "x[0:2] = x[1:2] (expanded value)": _set(slice(0, 2), lambda m, x: x[1:2]),
    "x[0:2] = x[None, 1:3]": _set(slice(0, 2), lambda m, x: x[None, 1:3]),
    "x[...] = x[None]": _set(Ellipsis, lambda m, x: x[None]),
    "x[1:3] = ones(1, 1, 2, 4)": _set(slice(1, 3), lambda m, x: m.ones(1, 1, 2, 4)),
    "x[idx] = x[0, 0]": _set(lambda m, x: m.tensor([1]), lambda m, x: x[0, 0]),
    "x[mask] = x[0, 0] (a masked fill)": _set(lambda m, x: x > 2, lambda m, x: x[0, 0]),
    "x[mask, idx] = x[0, 0]": _set(lambda m, x: (x[:, 0] > 2, m.tensor([1])),
                                   lambda m, x: x[0, 0]),
    "x[idx] = rows of x": _set(lambda m, x: m.tensor([0, 1]), lambda m, x: x[1:3]),
    "x[idx] = ones(1, 2, 4)": _set(lambda m, x: m.tensor([0, 1]), lambda m, x: m.ones(1, 2, 4)),
    "x[mask] = ones(1, 1, 1)": _set(lambda m, x: x > 5, lambda m, x: m.ones(1, 1, 1)),
}


@pytest.mark.parametrize("name", list(SETITEM))
def test_setitem(name):
    check(SETITEM[name])


# ---- which in-place op checks what (PyTorch's meta functions, op by op) ---------------
def _index(m):
    return m.tensor([0, 2])


OPS = {
    # internal overlap refused
    "cumsum_ of stride-0": lambda m: m.zeros(1).expand(5).cumsum_(0),
    "cumprod_ expanded": lambda m: expanded(m, 3, 4).cumprod_(1),
    "cumsum_ expanded, empty": lambda m: m.zeros(0).expand(3, 0).cumsum_(0),
    "addmm_ expanded": lambda m: expanded(m, 3, 4).addmm_(m.ones(3, 2), m.ones(2, 4)),
    "addmv_ expanded": lambda m: m.zeros(1).expand(3).addmv_(m.ones(3, 2), m.ones(2)),
    "baddbmm_ expanded": lambda m: expanded(m, 2, 3, 4).baddbmm_(m.ones(2, 3, 2),
                                                                 m.ones(2, 2, 4)),
    "scatter_ value expanded": lambda m: expanded(m, 3, 4).scatter_(
        0, m.zeros(2, 4, dtype=m.int64), 1.),
    "scatter_ empty index expanded": lambda m: expanded(m, 3, 4).scatter_(
        0, m.zeros(0, 4, dtype=m.int64), 3., reduce="multiply"),
    "scatter_add_ expanded": lambda m: expanded(m, 3, 4).scatter_add_(
        0, m.zeros(2, 4, dtype=m.int64), m.ones(2, 4)),
    "scatter_reduce_ expanded": lambda m: expanded(m, 3, 4).scatter_reduce_(
        0, m.zeros(0, 4, dtype=m.int64), m.ones(0, 4), "amax", include_self=False),
    "index_add_ expanded, empty index": lambda m: expanded(m, 3, 4).index_add_(
        0, m.zeros(0, dtype=m.int64), m.ones(0, 4), alpha=0.5),
    "index_copy_ expanded": lambda m: expanded(m, 3, 4).index_copy_(1, m.tensor([0, 1, 2]),
                                                                    m.ones(3, 3)),
    "masked_scatter_ expanded": lambda m: expanded(m, 3, 4).masked_scatter_(
        m.ones(3, 4, dtype=m.bool), m.ones(12)),
    "fill_(tensor) expanded": lambda m: expanded(m, 3, 4).fill_(m.tensor(1.)),
    # nothing refused: one value written
    "fill_ expanded": lambda m: expanded(m, 3, 4).fill_(1),
    "zero_ expanded": lambda m: expanded(m, 3, 4).zero_(),
    "masked_fill_ expanded": lambda m: expanded(m, 3, 4).masked_fill_(
        m.ones(3, 4, dtype=m.bool), 1.),
    "index_fill_ expanded": lambda m: expanded(m, 3, 4).index_fill_(0, m.tensor([0]), 1.),
    "index_put_ expanded": lambda m: expanded(m, 3, 4).index_put_((_index(m),), m.ones(4)),
    "tril_ expanded": lambda m: expanded(m, 3, 4).tril_(),
    "nan_to_num_ int expanded": lambda m: expanded(m, 3, 4, dtype="int8").nan_to_num_(),
    "nan_to_num_ bool expanded": lambda m: expanded(m, 3, 4, dtype="bool").nan_to_num_(),
    "fill_(a view of self)": lambda m: (lambda x: x[:2].fill_(x[1, 1]))(rows(m)),
    # inputs that share the written tensor's memory
    "index_add_ source = self": lambda m: (lambda b: b[0:2].index_add_(0, m.tensor([0, 1]),
                                                                       b[0:2]))(rows(m)),
    "index_copy_ source partial": lambda m: (lambda b: b[0:2].index_copy_(
        0, m.tensor([0, 1]), b[1:3]))(rows(m)),
    "scatter_ src partial": lambda m: (lambda b: b[0:2].scatter_(
        0, m.zeros(2, 4, dtype=m.int64), b[1:3]))(rows(m)),
    "scatter_ src disjoint": lambda m: (lambda b: b[0:2].scatter_(
        0, m.zeros(2, 4, dtype=m.int64), b[3:5]))(rows(m)),
    "index_fill_ index from self": lambda m: (lambda b: b[0:2].index_fill_(1, b[1, :2], 0))(
        m.arange(24).reshape(6, 4) % 2),
    "index_add_ index from self": lambda m: (lambda b: b[0:2].index_add_(
        1, b[0, :2], m.ones(2, 2, dtype=m.int64)))(m.arange(24).reshape(6, 4) % 2),
    "masked_fill_ mask partial": lambda m: (lambda b: b[0:2].masked_fill_(b[1:3], True))(
        m.ones(6, 4, dtype=m.bool)),
    "masked_fill_ mask = self": lambda m: (lambda b: b[0:2].masked_fill_(b[0:2], True))(
        m.ones(6, 4, dtype=m.bool)),
    "masked_scatter_ source partial": lambda m: (lambda b: b[0:2].masked_scatter_(
        m.ones(2, 4, dtype=m.bool), b[1:3].reshape(-1)))(rows(m)),
    "index_put_ accumulate, value from self": lambda m: (lambda b: b.index_put_(
        (b > 2,), b[0, 0], accumulate=True))(m.arange(12.).reshape(3, 4)),
    "addmm_ mat1 partial": lambda m: (lambda b: b[0:2, :2].addmm_(b[1:3, :2], m.ones(2, 2)))(
        rows(m)),
}


# Writes PyTorch lets into an expanded tensor whose values depend on the order its loops
# write in (each element reads what an earlier one wrote): no contract, the outcome only.
ORDER_DEPENDENT = {"addmv_ expanded", "baddbmm_ expanded", "tril_ expanded"}


@pytest.mark.parametrize("name", list(OPS))
def test_inplace_op_checks(name):
    check(OPS[name], values=name not in ORDER_DEPENDENT)


@pytest.mark.parametrize("op", ["normal_", "uniform_", "exponential_", "bernoulli_"])
def test_random_fills_refuse_expanded(op):
    check(lambda m: getattr(expanded(m, 3, 4), op)(), values=False)


# ---- autograd of views over overlapping memory -----------------------------------------
def _expanded_leaf(m):
    return m.arange(4.).to(m.float64).expand(3, 4).detach().requires_grad_()


def test_view_regenerated_over_expanded_base_shares_the_slot_gradient():
    # a view of an expanded leaf, written in place under no_grad: its new history is the
    # base's window (PyTorch's AsStridedBackward0), whose slots several elements share
    def run(m):
        base = _expanded_leaf(m)
        view = base[-2:]
        with m.no_grad():
            view.copy_(view)
        w0, w1 = m.arange(12.).reshape(3, 4), m.arange(8.).reshape(2, 4) * 10
        ((base * w0.to(m.float64)).sum() + (view * w1.to(m.float64)).sum()).backward()
        return base.grad

    np.testing.assert_allclose(_values(run(tp)), _values(run(torch)))


# the real views of a complex expanded leaf, rebuilt after a write under no_grad (fuzz
# seed 1014114): view_as_real of the base itself is replayed (PyTorch's view_func, each
# element its own gradient), any other view is the base's window whose slot gradient is
# shared out, and a window's real gradient goes back into the complex base's parts
_COMPLEX_VIEWS = {
    "view_as_real": lambda m, b: m.view_as_real(b),
    "view_as_real_of_a_row": lambda m, b: m.view_as_real(b[-1]),
    "view_as_real_of_a_slice": lambda m, b: m.view_as_real(b[:]),
    "real": lambda m, b: b.real,
    "imag_of_a_row": lambda m, b: b[-1].imag,
}


@pytest.mark.parametrize("view", list(_COMPLEX_VIEWS))
def test_real_view_regenerated_over_expanded_complex_base(view):
    def run(m):
        parts = m.arange(8.).reshape(1, 4, 2).to(m.float32)
        base = m.view_as_complex(parts).expand(3, 4).detach().requires_grad_()
        v = _COMPLEX_VIEWS[view](m, base)
        with m.no_grad():
            base[-1][::2] = 7
        w = m.arange(float(v.numel())).reshape(v.shape).to(m.float32) - 3
        ((m.view_as_real(base) * 0.5).sum() + (v * w).sum()).backward()
        return base.grad

    np.testing.assert_allclose(_values(run(tp)), _values(run(torch)), rtol=1e-6)


def test_copyslices_backward_refuses_an_expanded_view():
    # `v2[mask] = 7` into an expanded view of a tensor that needs a gradient: PyTorch's
    # CopySlices copies the gradient back through the view's window, an expanded one
    def case(m, needs_grad):
        leaf = m.arange(12.).reshape(3, 4).requires_grad_()
        v1 = m.floor(leaf) if needs_grad else leaf.detach().clone()
        v2 = v1.expand(2, 3, 4)
        w = m.tensor(7., requires_grad=True)
        v2[v2 > 4] = w
        (v2 * 2).sum().backward()
        return w.grad

    check(lambda m: case(m, True))
    check(lambda m: case(m, False))


# ---- in-place writes whose result would depend on the order of the writes ------------
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
    result = raises_like_torch(lambda m: fn(m, "cpu").tolist())
    if result is not None:
        assert result[0] == result[1]
