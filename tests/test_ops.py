"""Generic op tests: every entry of the operator database (tests/opinfo) against PyTorch.

    test_database_covers_ops_yaml     every ops.yaml overload has an entry
    test_declared_overloads_are_called  an entry's samples really reach its overloads
    test_forward                      values, dtype and shape vs PyTorch; method == function
    test_out_is_written_or_rejected   `out=` writes the result into out, or raises; never ignored
    test_inplace                      in-place == out-of-place, returns self, bumps _version
    test_aliasing_matches_torch       an output aliases its input exactly when PyTorch's
                                      does: storage, offset, strides, version, write-through
    test_meta                         device="meta" gives PyTorch's shape and dtype
    test_errors / test_meta_errors    bad input raises the declared typed error
    test_grad_matches_torch / test_gradcheck / test_gradgradcheck

Ids read `test_forward[cpu-add.scalar-int8]`: device, entry, dtype.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import TensorPlayError
from opinfo import op_db
from opinfo.core import (
    DEFAULT_TOLERANCES, assert_close, autograd_status, available_devices, make_tensor,
    record_calls, rng_for, to_torch, yaml_ops,
)

DEVICES = available_devices()

# ops.yaml overloads with no database entry, each with the reason. Only pure aliases or
# conversions whose behaviour is tested elsewhere belong here.
NOT_IN_DATABASE = {
    # sparse inputs only (the database's samples are dense): tests/test_sparse.py
    **{name: "sparse only: tests/test_sparse.py" for name in (
        "smm", "hspmm", "dsmm", "sspaddmm", "indices_copy", "values_copy")},
}


# On `cuda` every kernel launch costs milliseconds when the Triton interpreter runs it
# (no GPU), so a plain `pytest` runs the database there in a reduced form: values and
# in-place forms in float32 and one integer dtype (integer kernels are other code),
# typed errors, and float32 gradients against PyTorch. The rest of the cuda sweep
# carries the `slow` mark: the other dtypes (the tests in tests/triton_backend/ check the half paths),
# float64 gradcheck/gradgradcheck, aliasing (decided by the device-independent view
# ops) and the checks that do not depend on the device (`out=`, overload coverage).
# `pytest -m slow` runs it, `pytest -m ""` runs everything. Meta tests convert their
# samples to the meta device, so they run once, from the cpu samples.
DEVICE_INDEPENDENT = {"test_meta", "test_meta_errors"}
SLOW_ON_CUDA = {"test_declared_overloads_are_called", "test_out_is_written_or_rejected",
                "test_aliasing_matches_torch", "test_gradcheck", "test_gradgradcheck"}


def _cuda_dtypes(op, test):
    """The dtypes the reduced cuda run tests `op` in."""
    first = tp.float32 if tp.float32 in op.dtypes else op.dtypes[0]
    if test not in ("test_forward", "test_inplace"):
        return (first,)
    integer = next((d for d in (tp.int64, tp.int32, tp.uint8) if d in op.dtypes), first)
    return (first, integer)


def _marks(op, test, device="cpu", dtype=None):
    reason = op.xfails.get(test)
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    if device == "cuda" and (test in SLOW_ON_CUDA or
                             dtype is not None and dtype not in _cuda_dtypes(op, test)):
        marks.append(pytest.mark.slow)
    return marks


def _devices(test):
    return [d for d in DEVICES if d == "cpu" or test not in DEVICE_INDEPENDENT]


def _params(test, select=lambda op: True):
    """(device, op, dtype) for every entry `select` keeps and every dtype it supports."""
    return [pytest.param(device, op, dtype, id=f"{device}-{op.full_name}-{dtype.name}",
                         marks=_marks(op, test, device, dtype))
            for device in _devices(test) for op in op_db if select(op) for dtype in op.dtypes]


def _op_params(test, select=lambda op: True):
    return [pytest.param(device, op, id=f"{device}-{op.full_name}",
                         marks=_marks(op, test, device))
            for device in _devices(test) for op in op_db if select(op)]


@contextmanager
def checking(sample):
    """Failures name the sample that caused them."""
    try:
        yield
    except AssertionError as e:
        raise AssertionError(f"sample {sample!r}:\n{e}") from None
    except Exception as e:  # noqa: BLE001 - reported with the sample, then re-raised
        raise AssertionError(f"sample {sample!r} raised {type(e).__name__}: {e}") from e


def _flat(value):
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flat(v)]
    return [value]


# ---- coverage ---------------------------------------------------------------------------
def test_database_covers_ops_yaml():
    declared = {name for op in op_db for name in op.overloads}
    # ops.yaml's alias_of / copy_of entries run their target's kernels: tests/test_aliases.py
    in_yaml = {name for name, e in yaml_ops().items() if e.derived_from is None}
    missing = sorted(in_yaml - declared - set(NOT_IN_DATABASE))
    assert not missing, f"ops.yaml overloads with no OpInfo in tests/opinfo: {missing}"
    unknown = sorted(declared - in_yaml)
    assert not unknown, f"OpInfo entries name overloads that ops.yaml lacks: {unknown}"
    stale = sorted(set(NOT_IN_DATABASE) & declared)
    assert not stale, f"NOT_IN_DATABASE lists overloads that do have an entry: {stale}"


@pytest.mark.parametrize("device, op", _op_params("test_declared_overloads_are_called"))
def test_declared_overloads_are_called(device, op):
    dtype = tp.float32 if tp.float32 in op.dtypes else op.dtypes[-1]
    with record_calls() as called:
        for sample in op.sample_inputs(device, dtype):
            op.call(sample)
        for sample in op.sample_inputs(device, dtype) if op.inplace else ():
            try:
                op.call_inplace(sample)
            except TensorPlayError:
                pass   # samples the in-place form rejects (test_inplace checks them)
    missing = sorted(set(op.overloads) - called)
    assert not missing, f"{op.full_name}: no sample reaches {missing} (called: {sorted(called)})"


# ---- forward ----------------------------------------------------------------------------
@pytest.mark.parametrize("device, op, dtype", _params("test_forward"))
def test_forward(device, op, dtype):
    tol = op.tolerance(dtype)
    for sample in op.sample_inputs(device, dtype):
        with checking(sample):
            expected = op.reference(sample)   # first: the op may write into its input
            actual = op.call(sample)
            assert_close(actual, expected, tol, check_device=device)
    if op.method is None or op.mutates_input:
        return
    for sample in op.sample_inputs(device, dtype):
        with checking(sample):
            assert_close(op.method(sample.input, *sample.args, **sample.kwargs),
                         op.reference(sample), tol, where="method variant")


@pytest.mark.parametrize("device, op", _op_params("test_out_is_written_or_rejected",
                                                  lambda op: not op.supports_out))
def test_out_is_written_or_rejected(device, op):
    """`out=` (PyTorch's keyword) is never ignored: the result is written into `out` and
    `out` returned, or (views, in-place ops, helpers without it) the call is an error."""
    sample = op.sample_inputs(device, op.dtypes[-1])[0]
    with tp.no_grad():
        expected = op.op(sample.input, *sample.args, **sample.kwargs)
        results = expected if isinstance(expected, tuple) else (expected,)
        if not all(isinstance(r, tp.Tensor) for r in results):
            return
        outs = tuple(tp.empty(0, dtype=r.dtype, device=r.device) for r in results)
        out = outs if isinstance(expected, tuple) else outs[0]
        try:
            got = op.op(sample.input, *sample.args, out=out, **sample.kwargs)
        except (TypeError, TensorPlayError):
            return
        again = op.op(sample.input, *sample.args, **sample.kwargs)
    assert all(g is o for g, o in zip(got, outs)) if isinstance(expected, tuple) else got is out
    for o, r, r2 in zip(outs, results, again if isinstance(again, tuple) else (again,)):
        assert o.shape == r.shape and o.dtype == r.dtype
        first, second, written = (t.cpu().numpy() for t in (r, r2, o))
        if np.array_equal(first, second, equal_nan=first.dtype.kind in "fc"):   # not random
            assert np.array_equal(written, first, equal_nan=first.dtype.kind in "fc")


# ---- in-place ---------------------------------------------------------------------------
def _overlapping(t):
    return any(st == 0 and s > 1 for s, st in zip(t.shape, t.stride()))


def _torch_inplace(op, sample):
    """PyTorch's in-place variant on a copy: (its input afterwards, whether it bumped the
    version counter), or (None, None) if PyTorch refused the call."""
    t_x, t_args, t_kwargs = to_torch((sample.input, sample.args, sample.kwargs))
    version = t_x._version
    try:
        if op.mutates_input:
            op.ref(t_x, *t_args, **t_kwargs)
        else:
            getattr(t_x, op.inplace)(*t_args, **t_kwargs)
    except Exception:  # noqa: BLE001 - any refusal: TensorPlay must refuse too
        return None, None
    return t_x, t_x._version > version


@pytest.mark.parametrize("device, op, dtype",
                         _params("test_inplace",
                                 lambda op: op.inplace is not None or op.mutates_input))
def test_inplace(device, op, dtype):
    """The in-place form against PyTorch's in-place form; where both run, it also equals
    the out-of-place op (when the dtypes agree), returns its input unmoved and bumps the
    version counter (when PyTorch's does); where PyTorch refuses, it raises a typed error."""
    tol = op.tolerance(dtype)
    call = op.call if op.mutates_input else op.call_inplace
    for sample in op.sample_inputs(device, dtype):
        x = sample.input
        if _overlapping(x):
            continue   # writing into an expanded tensor: PyTorch refuses, for its own reasons
        with checking(sample):
            torch_x, torch_bumped = _torch_inplace(op, sample)
            if torch_x is None:
                with pytest.raises(TensorPlayError):
                    call(sample)
                continue
            out_of_place = None if op.mutates_input else op.call(sample)
            version, ptr, strides = x._version, x.data_ptr(), x.stride()
            result = call(sample)
            assert result is x, "the in-place op must return its input"
            if torch_bumped:
                assert x._version > version, "the in-place op must bump the version counter"
            else:
                assert x._version == version, "PyTorch does not bump the version here"
            assert x.data_ptr() == ptr, "the input moved"
            if op.is_view:   # an in-place view op (`t_`): new strides, PyTorch's
                assert x.stride() == tuple(torch_x.stride()), "strides differ from PyTorch's"
            else:
                assert x.stride() == strides, "the input moved"
            assert_close(x, torch_x, tol, where="input after the in-place op")
            if out_of_place is not None and out_of_place.dtype is x.dtype:
                assert_close(x, to_torch(out_of_place), tol, where="in-place vs out-of-place")


# ---- aliasing (views) -------------------------------------------------------------------
def _storage_ptr(t):
    return t.untyped_storage().data_ptr()


@pytest.mark.parametrize("device, op, dtype",
                         _params("test_aliasing_matches_torch", lambda op: not op.mutates_input))
def test_aliasing_matches_torch(device, op, dtype):
    rng = rng_for("aliasing", op.full_name, dtype)
    for sample in op.sample_inputs(device, dtype):
        x = sample.input
        with checking(sample):
            expected, torch_x = op.reference_with_input(sample)
            if torch_x.untyped_storage().nbytes() == 0:
                continue   # nothing to alias
            actual = op.call(sample)
            for i, (out, t_out) in enumerate(zip(_flat(actual), _flat(expected))):
                if not isinstance(t_out, torch.Tensor):
                    continue
                torch_alias = _storage_ptr(t_out) == _storage_ptr(torch_x)
                tp_alias = out.untyped_storage() is x.untyped_storage()
                assert tp_alias == torch_alias, \
                    f"output {i}: aliases its input in TensorPlay: {tp_alias}, in PyTorch: " \
                    f"{torch_alias}"
                if not tp_alias:
                    continue
                assert out.stride() == tuple(t_out.stride()), \
                    f"output {i}: strides {out.stride()}, PyTorch {tuple(t_out.stride())}"
                assert out.storage_offset() == t_out.storage_offset(), \
                    f"output {i}: storage offset {out.storage_offset()}, PyTorch " \
                    f"{t_out.storage_offset()}"
                # (offsets count elements; a view of another dtype, view_as_real, has
                # elements of another size)
                assert out.data_ptr() - out.storage_offset() * out.element_size() == \
                    x.data_ptr() - x.storage_offset() * x.element_size()
                if out.numel() == 0 or _overlapping(out):
                    continue
                # A write through the view is seen by the base, and bumps the shared counter
                # (not `_unsafe_view`'s: it aliases with a counter of its own, in both).
                values = make_tensor(out.shape, out.dtype, device, rng=rng)
                version, torch_version = x._version, torch_x._version
                out.copy_(values)
                t_out.copy_(to_torch(values))
                shared = x._version > version and out._version == x._version
                assert shared == (torch_x._version > torch_version), \
                    f"output {i} shares its input's version counter: {shared}, in PyTorch: " \
                    f"{not shared}"
                assert_close(x, torch_x, where=f"input after writing through output {i}")


# ---- Meta -------------------------------------------------------------------------------
def _to_meta(t):
    return tp.empty_strided(tuple(t.shape), t.stride(), dtype=t.dtype, device="meta")


@pytest.mark.parametrize("device, op, dtype", _params("test_meta", lambda op: op.supports_meta))
def test_meta(device, op, dtype):
    for sample in op.sample_inputs(device, dtype):
        if not sample.meta:
            continue
        with checking(sample):
            expected = op.reference(sample)
            actual = op.call(sample.map_tensors(_to_meta))
            for i, (out, exp) in enumerate(zip(_flat(actual), _flat(expected))):
                assert out.device.type == "meta", f"output {i} is on {out.device}"
                assert tuple(out.shape) == tuple(exp.shape), \
                    f"output {i}: meta shape {list(out.shape)}, PyTorch {list(exp.shape)}"
                assert to_torch(out.dtype) == exp.dtype, \
                    f"output {i}: meta dtype {out.dtype.name}, PyTorch {exp.dtype}"


# ---- errors -----------------------------------------------------------------------------
def _check_error(op, err, sample, info):
    e = info.value
    name = op.inplace if err.inplace else op.name
    assert isinstance(e, TensorPlayError), \
        f"{type(e).__name__} is not a tensorplay.errors type: {e}"
    assert f"{name}(" in str(e), f"the message does not name the op '{name}': {e}"
    # (`.op` may carry the call, as tensorplay/cuda.py's "to('cuda')" does.)
    assert e.op is not None and e.op.split(".")[0].split("(")[0] == name, \
        f"the error's op is {e.op!r}, expected {name!r}"
    if err.arg is not None:
        assert e.arg == err.arg, f"the error blames argument {e.arg!r}, expected {err.arg!r}"
        assert f"'{err.arg}'" in str(e), f"the message does not name argument '{err.arg}': {e}"


def _call_error_input(op, err, sample):
    if err.inplace:
        return op.call_inplace(sample)
    return op.call(sample)


@pytest.mark.parametrize("device, op", _op_params("test_errors",
                                                  lambda op: op.error_inputs_func is not None))
def test_errors(device, op):
    for err in op.error_inputs(device):
        sample = err.sample
        if err.torch_raises:
            with checking(sample), pytest.raises(Exception):
                t = to_torch(sample.input), to_torch(sample.args), to_torch(sample.kwargs)
                if err.inplace:
                    getattr(t[0], op.inplace)(*t[1], **t[2])
                else:
                    op.ref(t[0], *t[1], **t[2])
        with pytest.raises(err.error_type, match=err.error_regex) as info:
            _call_error_input(op, err, sample)
        _check_error(op, err, sample, info)


@pytest.mark.parametrize("device, op", _op_params(
    "test_meta_errors", lambda op: op.error_inputs_func is not None and op.supports_meta))
def test_meta_errors(device, op):
    for err in op.error_inputs(device):
        if not err.meta:
            continue
        sample = err.sample.map_tensors(_to_meta)
        with pytest.raises(err.error_type, match=err.error_regex) as info:
            _call_error_input(op, err, sample)
        _check_error(op, err, sample, info)


# ---- gradients --------------------------------------------------------------------------
AUTOGRAD_READY, AUTOGRAD_REASON = autograd_status()
needs_autograd = pytest.mark.skipif(not AUTOGRAD_READY, reason=AUTOGRAD_REASON)


def _grad_params():
    return [p for p in _params("test_grad_matches_torch",
                               lambda op: op.supports_autograd and not op.mutates_input)
            if p.values[2] in p.values[1].grad_dtypes]


@needs_autograd
@pytest.mark.parametrize("device, op, dtype", _grad_params())
def test_grad_matches_torch(device, op, dtype):
    rng = rng_for("grad", op.full_name, dtype)
    for sample in op.sample_inputs(device, dtype, requires_grad=True):
        leaves = [t for t in sample.tensors() if t.requires_grad]
        if not leaves:
            continue
        with checking(sample):
            t_sample = to_torch((sample.input, sample.args, sample.kwargs))
            t_leaves = [t for t in _flat(list(t_sample[:2]) + list(t_sample[2].values()))
                        if isinstance(t, torch.Tensor) and t.requires_grad]
            try:
                t_result = op.ref(t_sample[0], *t_sample[1], **t_sample[2])
            except RuntimeError as e:
                if "Autograd not support dtype" not in str(e):
                    raise
                continue   # e.g. sum(x, dtype=int32): no gradient in PyTorch either
            t_outs = [o for o in _flat(t_result)
                      if isinstance(o, torch.Tensor) and o.requires_grad]
            outs = [o for o in _flat(op.call(sample))
                    if isinstance(o, tp.Tensor) and o.dtype.is_differentiable]
            if not t_outs:
                continue
            # a real loss: a complex output enters through its parts (view_as_real)
            outs = [tp.view_as_real(o) if o.is_complex() else o for o in outs]
            # (resolve_conj: PyTorch returns some results, ifft of a real input, as a lazy
            # conjugate, which view_as_real refuses)
            t_outs = [torch.view_as_real(o.resolve_conj()) if o.is_complex() else o
                      for o in t_outs]
            grads = [make_tensor(o.shape, o.dtype, device, rng=rng) for o in outs[:len(t_outs)]]
            loss = sum((o * g).sum() for o, g in zip(outs, grads))
            t_loss = sum((o * to_torch(g)).sum() for o, g in zip(t_outs, grads))
            loss.backward()
            t_loss.backward()
            for i, (leaf, t_leaf) in enumerate(zip(leaves, t_leaves)):
                if t_leaf.grad is None:
                    assert leaf.grad is None or not np.any(leaf.grad.cpu().numpy()), \
                        f"input {i}: PyTorch has no gradient, TensorPlay's is non-zero"
                    continue
                assert leaf.grad is not None, f"input {i}: no gradient"
                # The sample's dtype sets the tolerance: a float64 input mixed into a float32
                # op has its gradient computed (and summed) in float32.
                assert_close(leaf.grad, t_leaf.grad,
                             op.tolerance(dtype) or DEFAULT_TOLERANCES[dtype],
                             where=f"gradient of input {i}")


def _gradcheck_fns():
    try:
        from tensorplay.autograd import gradcheck, gradgradcheck
    except ImportError as e:
        return None, None, f"tensorplay.autograd has no gradcheck yet ({e})"
    return gradcheck, gradgradcheck, ""


_DOUBLE = (tp.float64, tp.complex128)


def _run_gradcheck(op, device, second_order, fast_mode=False):
    gradcheck, gradgradcheck, reason = _gradcheck_fns()
    if gradcheck is None:
        pytest.skip(reason)
    check = gradgradcheck if second_order else gradcheck
    if fast_mode:
        tp.manual_seed(0)   # fast mode's random directions: the same ones every run
    checked = 0
    dtypes = [d for d in _DOUBLE if d in op.dtypes] or [tp.float64]
    for sample in (s for d in dtypes for s in op.sample_inputs(device, d, requires_grad=True)):
        leaves = [t for t in sample.tensors() if t.requires_grad]
        # Finite differences need a smooth point, distinct elements to nudge (not an
        # expanded tensor) and float64 outputs (a float16 result rounds the nudge away).
        if not sample.grad or not leaves or any(t.numel() == 0 or _overlapping(t)
                                                for t in leaves):
            continue
        try:
            outs = _flat(op.call(sample))
        except tp.errors.AutogradError:
            continue    # sum(x, dtype=int32) of a recorded x: PyTorch refuses it too
        if not any(isinstance(o, tp.Tensor) and o.dtype in _DOUBLE for o in outs):
            continue

        def fn(*inputs, sample=sample, leaves=leaves):
            swap = {id(t): new for t, new in zip(leaves, inputs)}
            s = sample.map_tensors(lambda t: swap.get(id(t), t))
            return tuple(o for o in _flat(op.call(s))
                         if isinstance(o, tp.Tensor) and o.dtype in _DOUBLE)

        with checking(sample):
            assert check(fn, tuple(leaves), fast_mode=fast_mode), f"{check.__name__} failed"
        checked += 1
    assert checked, "no sample is fit for finite differences"


@needs_autograd
@pytest.mark.parametrize("device, op", _op_params(
    "test_gradcheck", lambda op: op.supports_autograd and op.gradcheck
    and tp.float64 in op.dtypes and not op.mutates_input))
def test_gradcheck(device, op):
    _run_gradcheck(op, device, second_order=False)


# gradgradcheck's whole Jacobians (two evaluations of the first derivative per element of
# every input and grad_output) were a quarter of the suite's time. A plain `pytest` runs it
# in fast mode: per input and output one number each way, v^T J u for random u and v (the
# same forward, backward and double-backward code; PyTorch's own test suite checks second
# derivatives this way by default, its slow-gradcheck job the whole Jacobians). The whole
# Jacobians, which name the wrong element, carry the `slow` mark. test_gradcheck keeps the
# whole first-order Jacobians in the default run.
GRADGRAD_MODES = [pytest.param(True, id="fast"), pytest.param(False, id="full",
                                                              marks=pytest.mark.slow)]


@needs_autograd
@pytest.mark.parametrize("fast_mode", GRADGRAD_MODES)
@pytest.mark.parametrize("device, op", _op_params(
    "test_gradgradcheck", lambda op: op.supports_autograd and op.supports_gradgrad
    and op.gradcheck and tp.float64 in op.dtypes and not op.mutates_input))
def test_gradgradcheck(device, op, fast_mode):
    _run_gradcheck(op, device, second_order=True, fast_mode=fast_mode)
