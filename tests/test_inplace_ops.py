"""In-place ops: the kernels, the version counter they bump, their autograd, and the
views of a tensor written in place, each against PyTorch (and the general code a
shortcut stands in for).

- The in-place add_/sub_/mul_/div_ kernels skip rules.binary_inplace when `other` has
  self's sizes or is 0-dim on self's device (a wrapped number), the cast check when the
  result type is self's, and the overlap checks when nothing can overlap (no stride 0 in
  self, no storage shared with `other`); add_/sub_ write a one-element self back from a
  fresh result instead of through out=.
- After an in-place kernel the versions of exactly the tensors it wrote are bumped
  (`kernel_selection.bump_written`; `kernel_selection.bumping` around a lone kernel); a
  view shares its base's counter.
- A view made before an in-place op on its base follows the base's new history. A view
  made in no_grad mode, an output of a multi-output view op, and a view of either refuse
  an in-place write (or their use after their base was written), as PyTorch's do.

No timings here: benchmarks/bench_add_overhead.py measures the speed.
"""
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.dispatch import explain
from tensorplay.dispatch.kernel_selection import bump_written, bumping
from tensorplay.errors import DTypeError, ShapeError, TensorPlayError
from tensorplay.kernel_support.overlap import check_inplace_overlap

from torch_twins import numel, raises_like_torch


DTYPES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int32", "int64"]


def pair(values, dtype):
    return (tp.tensor(values, dtype=getattr(tp, dtype)),
            torch.tensor(values, dtype=getattr(torch, dtype)))


def _as_numpy(t):
    if t.dtype == torch.bfloat16:
        return t.float().numpy()
    return t.numpy()


def same_values(got, want):
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert tuple(got.shape) == tuple(want.shape) and got.stride() == want.stride()
    g = got.float().numpy() if got.dtype is tp.bfloat16 else got.numpy()
    np.testing.assert_array_equal(g, _as_numpy(want.detach()))


# ---- the kernels ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (1,), (1, 1), (2,), (2, 3)])
@pytest.mark.parametrize("op", ["add_", "sub_"])
def test_inplace_add_sub_match_torch(dtype, shape, op):
    values = np.arange(1, 1 + numel(shape)).reshape(shape) * 7 % 11
    for other_dtype, alpha in [(dtype, 1), (dtype, 3), ("int8", 1), ("float64", 1)]:
        if op == "sub_" and dtype == "uint8" and alpha != 1:
            continue
        a, at = pair(values.tolist(), dtype)
        b, bt = pair((values + 100).tolist(), other_dtype)
        try:
            want = getattr(at, op)(bt, alpha=alpha)
        except RuntimeError:
            with pytest.raises(DTypeError):
                getattr(a, op)(b, alpha=alpha)
            assert a._version == 0
            continue
        got = getattr(a, op)(b, alpha=alpha)
        assert got is a
        same_values(a, want)
        assert a._version == at._version == 1


@pytest.mark.parametrize("dtype", DTYPES + ["bool"])
@pytest.mark.parametrize("shape", [(), (1,), (2, 3)])
def test_inplace_with_a_python_number_or_a_0_dim_tensor_matches_torch(dtype, shape):
    # a wrapped number (0-dim) fits self without rules.binary_inplace
    values = (np.arange(1, 1 + numel(shape)).reshape(shape) % 3).tolist()
    others = [2, 1.5, True, ("tensor", 3, "int64"), ("tensor", 0.5, "float64"),
              ("tensor", 2, dtype)]
    for op in ("add_", "sub_", "mul_"):
        for other in others:
            a, at = pair(values, dtype)
            if isinstance(other, tuple):
                _, value, other_dtype = other
                b, bt = pair(value, other_dtype)
            else:
                b = bt = other
            try:
                getattr(at, op)(bt)
            except RuntimeError:
                with pytest.raises(RuntimeError):
                    getattr(a, op)(b)
                assert a._version == 0
                continue
            getattr(a, op)(b)
            same_values(a, at)
            assert a._version == at._version == 1


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("self_shape, other_shape", [((2, 3), (2, 3)), ((2, 3), (3,)),
                                                     ((1,), (1,)), ((), ()), ((3,), (1,))])
def test_inplace_mul_matches_torch(dtype, self_shape, other_shape):
    for other_dtype in (dtype, "int64", "float32"):
        a, at = pair((np.arange(numel(self_shape)).reshape(self_shape) % 5).tolist(), dtype)
        b, bt = pair((np.arange(numel(other_shape)).reshape(other_shape) % 3 + 1).tolist(),
                     other_dtype)
        try:
            at.mul_(bt)
        except RuntimeError:
            with pytest.raises(DTypeError, match=r"mul_\(\): result type"):
                a.mul_(b)
            continue
        a.mul_(b)
        same_values(a, at)
    x, xt = tp.arange(4.0), torch.arange(4.0)
    with pytest.raises(RuntimeError):
        xt[:3].mul_(xt[1:])
    with pytest.raises(TensorPlayError, match="single memory location"):
        x[:3].mul_(x[1:])
    x.mul_(x)
    xt.mul_(xt)
    same_values(x, xt)


@pytest.mark.parametrize("dtype", DTYPES + ["bool"])
def test_inplace_div_matches_torch(dtype):
    for self_shape, other_shape in [((2, 3), (2, 3)), ((2, 3), (3,)), ((1,), (1,)), ((), ()),
                                    ((3,), ())]:
        for other_dtype in (dtype, "int64", "float64"):
            values = (np.arange(numel(self_shape)).reshape(self_shape) % 5 - 2).tolist()
            a, at = pair(values, dtype)
            b, bt = pair((np.arange(numel(other_shape)).reshape(other_shape) % 3 - 1).tolist(),
                         other_dtype)          # zeros among them: inf and nan, no warning
            try:
                at.div_(bt)
            except RuntimeError:
                with pytest.raises(DTypeError, match=r"div_\(\): result type"):
                    a.div_(b)
                assert a._version == 0
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                a.div_(b)
            same_values(a, at)
            assert a._version == at._version == 1


def test_inplace_div_keeps_the_callers_error_state_for_what_it_does_not_ignore():
    # x / 0 is inf whatever the state (PyTorch's rule); the caller's over="raise" still
    # holds, for the division and for the write back into a half self
    with np.errstate(divide="raise", invalid="raise"):
        x = tp.tensor([1.0, 0.0]).div_(tp.zeros(2))
    assert x.tolist()[0] == float("inf") and np.isnan(x.tolist()[1])
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            tp.tensor([1e38, 1.0]).div_(tp.tensor([1e-3, 1.0]))
        with pytest.raises(FloatingPointError):
            tp.tensor([60000.0], dtype=tp.float16).div_(0.5)


def test_inplace_div_overlap_and_numbers_match_torch():
    x, xt = tp.arange(1.0, 5.0), torch.arange(1.0, 5.0)
    with pytest.raises(RuntimeError):
        xt[:3].div_(xt[1:])
    with pytest.raises(TensorPlayError, match="single memory location"):
        x[:3].div_(x[1:])
    for other in (2, 0.5, 0, True):
        x.div_(other)
        xt.div_(other)
        same_values(x, xt)
    h, ht = pair([1.0, 3.0], "float16")
    h.div_(0.1)                               # a half self takes the float32 0-dim rule
    ht.div_(0.1)
    same_values(h, ht)


def test_a_0_dim_other_on_another_device_takes_the_general_checks():
    with pytest.raises(RuntimeError, match="expected all tensors to be on the same device"):
        tp.ones(3).add_(tp.tensor(1.0, device="meta"))
    with pytest.raises(RuntimeError, match="expected all tensors to be on the same device"):
        tp.ones(3).mul_(tp.tensor(2.0, device="meta"))


@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
def test_one_element_inplace_overflows_as_torch(dtype):
    big = {"float16": 60000.0, "float32": 3e38, "int8": 100}[dtype]
    a, at = pair([big], dtype)
    b, bt = pair([big], dtype)
    with np.errstate(over="ignore"):
        a.add_(b)
    at.add_(bt)
    same_values(a, at)


def test_one_element_self_as_both_operands_and_as_a_strided_view():
    a, at = tp.tensor([3.0]), torch.tensor([3.0])
    a.add_(a, alpha=2)
    at.add_(at, alpha=2)
    same_values(a, at)
    x, xt = tp.arange(6.0).reshape(2, 3), torch.arange(6.0).reshape(2, 3)
    x[1:, 2:].add_(x[:1, :1])          # one element each, same storage, no overlap
    xt[1:, 2:].add_(xt[:1, :1])
    same_values(x, xt)
    x[:, 1].add_(tp.ones(1))           # broadcast into a column (stride 3)
    xt[:, 1].add_(torch.ones(1))
    same_values(x, xt)
    assert x._version == xt._version == 2


def test_bool_inplace_add_and_refused_sub():
    a, at = pair([True, False], "bool")
    b, bt = pair([True, True], "bool")
    a.add_(b)
    at.add_(bt)
    same_values(a, at)
    with pytest.raises(RuntimeError):
        at.sub_(bt)
    with pytest.raises(DTypeError):
        a.sub_(b)
    c, ct = pair([True], "bool")
    c.add_(tp.tensor([False]))
    ct.add_(torch.tensor([False]))
    same_values(c, ct)


def test_integer_self_refuses_a_float_result():
    for shape in [(1,), (3,)]:
        a = tp.ones(shape, dtype=tp.int64)
        with pytest.raises(RuntimeError):
            torch.ones(shape, dtype=torch.int64).add_(torch.ones(shape))
        with pytest.raises(DTypeError, match=r"add_\(\): result type float32 can't be cast to "
                                             r"the desired output type int64"):
            a.add_(tp.ones(shape))
        with pytest.raises(DTypeError, match="alpha"):
            a.add_(tp.ones(shape, dtype=tp.int64), alpha=0.5)
        assert a._version == 0 and a.tolist() == [1] * shape[0]


@pytest.mark.parametrize("self_shape, other_shape", [((3,), (2, 3)), ((1,), (2,)), ((), (1,)),
                                                       ((2, 3), (2,)), ((1,), (1, 1))])
def test_broadcast_that_does_not_fit_self_is_refused_as_torch(self_shape, other_shape):
    with pytest.raises(RuntimeError):
        torch.ones(self_shape).add_(torch.ones(other_shape))
    a = tp.ones(self_shape)
    with pytest.raises(ShapeError, match=r"add_\(\): .*shape"):
        a.add_(tp.ones(other_shape))
    assert a._version == 0


def test_overlap_errors_match_torch_and_the_general_check():
    cases = [
        ("partial", lambda m, x: x[:3].add_(x[1:])),
        ("internal", lambda m, x: x[:2].view(1, 2).expand(3, 2).add_(m.ones(2))),
        ("internal, one element wide", lambda m, x: x[:1].expand(3).sub_(m.ones(1))),
        ("full: fine", lambda m, x: x.add_(x)),
        ("disjoint, one storage: fine", lambda m, x: x[:2].add_(x[2:])),
        ("other expanded: fine", lambda m, x: x.add_(x[:1].expand(4))),
        ("one element, partial", lambda m, x: x[1:2].add_(x[:2].view(2, 1)[1:].view(1))),
    ]
    for name, fn in cases:
        x, xt = tp.arange(4.0), torch.arange(4.0)
        try:
            fn(torch, xt)
        except RuntimeError as e:
            assert "single memory location" in str(e), name
            with pytest.raises(TensorPlayError, match="single memory location"):
                fn(tp, x)
            assert x._version == 0
        else:
            fn(tp, x)
            same_values(x, xt)


def test_the_overlap_shortcut_skips_only_what_the_general_check_lets_through():
    # no stride 0 in self and no storage shared with other: check_inplace_overlap passes
    rng = np.random.default_rng(1)
    base = tp.arange(24.0)
    for _ in range(300):
        sizes = tuple(int(s) for s in rng.integers(1, 4, int(rng.integers(1, 3))))
        strides = tuple(int(s) for s in rng.integers(0, 4, len(sizes)))
        offset = int(rng.integers(0, 4))
        self = base.as_strided(sizes, strides, offset)
        other = tp.ones(sizes)
        if 0 not in self._impl.strides:
            check_inplace_overlap("add_", self, ("other", other))   # must not raise
        other_view = base.as_strided(sizes, tuple(int(s) for s in rng.integers(0, 4, len(sizes))),
                                     int(rng.integers(0, 4)))
        try:
            check_inplace_overlap("add_", self, ("other", other_view))
            general = None
        except TensorPlayError as e:
            general = str(e)
        before = base.clone()
        try:
            self.add_(other_view)
            fast = None
        except TensorPlayError as e:
            fast = str(e)
        assert fast == general
        if fast is not None:
            assert base.tolist() == before.tolist()


def test_mixed_dtype_inplace_takes_the_cast_path_as_torch():
    for self_dtype, other_dtype in [("float32", "float64"), ("float16", "float32"),
                                    ("int32", "int64"), ("float32", "int64"),
                                    ("int8", "uint8")]:
        for shape in [(1,), (3,)]:
            vals = (np.arange(numel(shape)) + 1.25).tolist()
            a, at = pair(vals, self_dtype)
            b, bt = pair(vals, other_dtype)
            a.add_(b, alpha=2)
            at.add_(bt, alpha=2)
            same_values(a, at)


# ---- version counters and autograd ---------------------------------------------------
def test_inplace_on_a_view_bumps_the_base_and_its_other_views():
    x, xt = tp.zeros(2, 3), torch.zeros(2, 3)
    row, rowt = x[0], xt[0]
    flat, flatt = x.view(6), xt.view(6)
    row.add_(tp.ones(3))
    rowt.add_(torch.ones(3))
    flat.sub_(tp.ones(6))
    flatt.sub_(torch.ones(6))
    for t, tt in [(x, xt), (row, rowt), (flat, flatt)]:
        assert t._version == tt._version == 2
        same_values(t, tt)


def test_inference_tensors_are_not_bumped():
    with tp.inference_mode():
        a = tp.ones(1)
        a.add_(tp.ones(1))
        assert a._impl.version.value == 0
    assert a.tolist() == [2.0]


def test_the_bump_touches_exactly_the_written_positions():
    def kernel(*args):
        return args
    t0, t1 = tp.ones(1), tp.ones(1)
    for written in [(0,), (1,), (0, 1)]:
        bump = bumping(kernel, written)
        assert bump.__wrapped__ is kernel
        before = (t0._version, t1._version)
        assert bump(t0, t1) == (t0, t1)
        bumped = (t0._version - before[0], t1._version - before[1])
        assert bumped == tuple(int(i in written) for i in range(2))
    before = t0._version
    assert bumping(kernel, (0, 1))(t0, None) == (t0, None)   # an optional one not given
    assert t0._version == before + 1
    with tp.inference_mode():
        i = tp.ones(1)
    bump_written((i,), (0,))                # an inference tensor keeps no versions
    assert i._impl.version.value == 0


def test_the_registry_and_a_lone_kernel_bump_alike():
    """An in-place op's backend slot bumps what it wrote, whether it is the registry
    (a constrained kernel) or the lone kernel itself (wrapped by `bumping`)."""
    from tensorplay.dispatch.dispatcher import OpSchema, dispatcher
    from tensorplay.dispatch.keys import DispatchKey
    versions = []
    for constrained in (True, False):
        name = f"test.write_first_{constrained}"
        op = dispatcher.define(OpSchema(name, f"{name}(Tensor(a!) self, Tensor other)",
                                        ("self", "other"), (0, 1), mutable_positions=(0,)))
        tp.library.Library("CPU", f"TestBump{constrained}").impl(
            name, lambda self, other: self, name="write",
            dtypes={tp.float32} if constrained else None)
        slot = op.resolved[DispatchKey.CPU]
        assert (slot is op.slot_registry(DispatchKey.CPU)) is constrained
        x, other = tp.ones(2), tp.ones(2)
        view = x[1:]
        assert op.call(x._impl.keys | other._impl.keys, x, other) is x
        versions.append((x._version, view._version, other._version))
    assert versions == [(1, 1, 0), (1, 1, 0)]


def test_inplace_with_requires_grad_matches_torch():
    a, at = tp.arange(3.0).requires_grad_(), torch.arange(3.0).requires_grad_()
    w, wt = tp.tensor([2.0]).requires_grad_(), torch.tensor([2.0]).requires_grad_()
    y, yt = a * 2, at * 2
    y.add_(w, alpha=3)
    yt.add_(wt, alpha=3)
    y.sub_(a)
    yt.sub_(at)
    assert type(y.grad_fn).__name__ == type(yt.grad_fn).__name__ == "SubBackward0"
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    same_values(a.grad, at.grad)
    same_values(w.grad, wt.grad)
    with pytest.raises(RuntimeError):
        torch.ones(1, requires_grad=True).add_(torch.ones(1))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                           "in an in-place operation"):
        tp.ones(1, requires_grad=True).add_(tp.ones(1))


def test_a_saved_tensor_written_in_place_is_caught_as_torch():
    a, at = tp.ones(1).requires_grad_(), torch.ones(1).requires_grad_()
    y, yt = a * 1, at * 1
    z, zt = y * y, yt * yt                      # saves y
    y.add_(tp.ones(1))
    yt.add_(torch.ones(1))
    with pytest.raises(RuntimeError):
        zt.sum().backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_inplace_is_the_same_while_explain_listens():
    a, b = tp.ones(1), tp.full((1,), 2.0)
    with explain(file=False) as ex:
        a.add_(b)
    assert "version   self: version now 1" in ex.text
    assert a.tolist() == [3.0] and a._version == 1


# ---- a view made before an in-place op on its base follows the base's new history ----
def _modify_base(kind, m, base, w):
    if kind == "add_":
        base.add_(w)
    elif kind == "mul_":
        base.add_(1.0)
        base.mul_(w)
    elif kind == "copy_":
        base.copy_(w)
    elif kind == "setitem":
        base[:2] = w[1:] * 2
    elif kind == "iadd":
        base += w
    elif kind == "twice":
        base += w
        base.mul_(m.tensor(2.0))


@pytest.mark.parametrize("kind", ["add_", "mul_", "copy_", "setitem", "iadd", "twice"])
def test_view_made_before_inplace_on_base_gets_the_new_history(kind):
    def run(m):
        base = m.zeros(3)
        view = base[1:]
        w = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        _modify_base(kind, m, base, w)
        flags = (view.requires_grad, view.is_leaf, view.grad_fn is None)
        ((view * 10).sum() + w.sum()).backward()
        return flags, view.tolist(), w.grad.tolist()

    assert run(tp) == run(torch)


def test_view_of_view_and_view_with_history_follow_the_base():
    def run(m):
        w = m.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        base = w * 1
        v = base[1:].view(3, 1)       # has history (view of a tensor that requires grad)
        plain = m.zeros(4)
        pv = plain.view(2, 2)[1]      # no history until plain changes
        base.mul_(w)
        plain.copy_(w * 3)
        ((v * 10).sum() + (pv * 100).sum()).backward()
        return w.grad.tolist()

    assert run(tp) == run(torch)


# ---- views that refuse an in-place write: made in no_grad mode, outputs of multi-output ops ---
def test_view_made_in_no_grad_mode_reports_and_refuses_like_torch():
    def nograd_view(m):
        w = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        base = w * 1
        with m.no_grad():
            v = base[1:]
        return base, v

    def use(m):
        base, v = nograd_view(m)
        out = (v * 10).sum()          # requires grad (through the base), no edge to w
        return v.requires_grad, v.is_leaf, out.requires_grad

    assert use(tp) == use(torch)

    def indirect(m):
        base, v = nograd_view(m)
        base.mul_(2)
        return v.grad_fn

    def direct(m):
        base, v = nograd_view(m)
        v.mul_(2)

    for fn in (indirect, direct):
        with pytest.raises(RuntimeError, match="created in no_grad mode"):
            fn(torch)
        with pytest.raises(tp.errors.TensorPlayError, match="created in no_grad mode"):
            fn(tp)


@pytest.mark.parametrize("op", ["split", "split_sizes", "chunk", "unbind", "tensor_split"])
@pytest.mark.parametrize("indirect", [False, True])
def test_inplace_on_outputs_of_multi_output_view_ops(op, indirect):
    pieces = {"split": lambda b: b.split(2), "split_sizes": lambda b: b.split([1, 3]),
              "chunk": lambda b: b.chunk(2), "unbind": lambda b: b.unbind(),
              "tensor_split": lambda b: b.tensor_split(2)}[op]

    def run(m):
        w = m.ones(4, requires_grad=True)
        base = w * 1
        first = pieces(base)[0]
        if indirect:
            base.mul_(2)
            return (first * 3).sum().item()
        first.mul_(2)
        base.sum().backward()
        return w.grad.tolist()

    result = raises_like_torch(run)
    if result is not None:
        assert result[0] == result[1]


def test_view_of_a_split_output_refuses_after_its_base_changed():
    """A view of a split output is a multi-output view too (PyTorch's
    propagate_creation_meta): after a write into the base, using it raises (fuzz
    seed 41871)."""
    def run(lib):
        x = lib.ones(3, 4, dtype=lib.float64, requires_grad=True)
        a, b, c = lib.split(x, [1, 1, 2], 1)
        view = b[..., :1]
        with lib.no_grad():
            c.add_(1)
        return view.unflatten(0, (1, -1))

    with pytest.raises(RuntimeError, match="output of a function that returns multiple"):
        run(torch)
    with pytest.raises(TensorPlayError, match="output of a function that returns multiple"):
        run(tp)


def test_view_of_a_no_grad_view_refuses_in_place():
    """A view of a view made in no_grad mode is a no_grad view too (the same
    propagate_creation_meta): an in-place write into it raises."""
    for lib, error in ((torch, RuntimeError), (tp, TensorPlayError)):
        y = lib.ones(3, 4, requires_grad=True).clone()
        with lib.no_grad():
            v = y[1:]
        with pytest.raises(error, match="no_grad mode"):
            v[0:1].mul_(2)


# ---- in-place view ops on a view -----------------------------------------------------
def _view_op_programs(lib):
    """(name, leaf gradient) of three programs that change a view's geometry in place."""
    out = []
    a = lib.arange(6.0, requires_grad=True)
    v = (a * 1).view(2, 3)
    v.transpose_(0, 1)                                       # then read through the view
    (v * lib.arange(6.0).view(3, 2)).sum().backward()
    out.append(("transpose_ then read", a.grad))
    a = lib.arange(6.0, requires_grad=True)
    b = a * 1
    v = b.view(2, 3)
    v.unsqueeze_(0)
    b.mul_(2)                                                # the base written afterwards
    (v * lib.arange(6.0).view(1, 2, 3)).sum().backward()
    out.append(("unsqueeze_ then the base written", a.grad))
    a = lib.arange(6.0, requires_grad=True)
    b = a * 1
    v = b.view(2, 3)
    v.t_()
    v.mul_(lib.arange(6.0).view(3, 2))                      # the view written afterwards
    (b * lib.arange(6.0)).sum().backward()
    out.append(("t_ then the view written", a.grad))
    return out


def test_an_in_place_view_op_on_a_view_keeps_its_bases_history():
    """transpose_ (unsqueeze_, t_, ...) on a view changes the view's shape and strides but
    no value: the view's history is the op's node, and the base keeps its own (it used to
    get a CopySlices node, whose region was the view's new shape: backward then failed)."""
    for (name, ours), (_, theirs) in zip(_view_op_programs(tp), _view_op_programs(torch)):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=name)
