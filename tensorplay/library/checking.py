"""`tp.library.opcheck`: does a custom op keep the promises its registrations make?

    tp.library.opcheck(rmsnorm, (x, w))
    # {'test_schema': 'SUCCESS', 'test_autograd_registration': 'SUCCESS',
    #  'test_gradcheck': 'SUCCESS', 'test_faketensor': 'SUCCESS', 'test_vmap': 'SUCCESS',
    #  'test_devices': 'SUCCESS'}

PyTorch's opcheck runs the op on sample arguments under checks that each compare one
registration with what the kernels really do; so does this one (`args`: one sample; call
it once per sample you care about):

    test_schema                 the schema is truthful: an argument not declared mutated
                                (`mutates_args`, `Tensor(a!)`) keeps its values and
                                version; no output aliases an input
    test_autograd_registration  with inputs that require grad the result has a grad_fn
                                that computes (not the one that raises: no formula)
    test_gradcheck              gradcheck and gradgradcheck of the derivative, in float64
    test_faketensor             the fake (meta) kernel gives the real kernel's shapes,
                                dtypes and strides' rank
    test_vmap                   vmap over a batch of two examples equals a loop of calls
    test_devices                the cuda kernel (Triton; the interpreter here) agrees
                                with the cpu kernel

A check that does not apply (no differentiable input, no cuda kernel) is reported as
"SKIPPED: why". `dtypes`: run the value checks (schema, fake, vmap, devices) again with
the floating tensors of `args` in each dtype. The result is a dict check -> "SUCCESS" or
the exception; with `raise_exception=True` (the default) the first failure raises an
`OpCheckError` that names the check and why.
"""
from __future__ import annotations

import numpy as np

from tensorplay.errors import TensorPlayError

__all__ = ["opcheck", "OpCheckError", "DEFAULT_TEST_UTILS"]

DEFAULT_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_gradcheck",
                      "test_faketensor", "test_vmap", "test_devices")


class OpCheckError(TensorPlayError):
    """One of opcheck's checks failed: the message names it and says why."""


class _Skip(Exception):
    pass


def _is_tensor(x):
    return getattr(x, "_impl", None) is not None


def _map(fn, args):
    """`fn` on every tensor of `args` (tensor lists included)."""
    out = []
    for a in args:
        if _is_tensor(a):
            out.append(fn(a))
        elif isinstance(a, (list, tuple)) and any(_is_tensor(t) for t in a):
            out.append(type(a)(fn(t) if _is_tensor(t) else t for t in a))
        else:
            out.append(a)
    return out


def _clone(t):
    return t.detach().clone()


def _outputs(result):
    items = result if isinstance(result, (tuple, list)) else (result,)
    return [o for o in items if _is_tensor(o)]


def _values(t):
    return t.detach().cpu().numpy()


def _describe(t):
    return f"{t.dtype.name}{list(t.shape)}"


# ---- the checks -----------------------------------------------------------------------
def _test_schema(op, args, kwargs):
    schema = op.handle.schema
    names = schema.arg_names
    mutable = {names[i] for i in schema.mutable_positions}
    given = _map(_clone, args)
    given_kwargs = dict(zip(kwargs, _map(_clone, list(kwargs.values()))))
    before = {}
    for name, value in _named_tensors(op, given, given_kwargs):
        before[name] = (value, _values(value).copy(), value._version)
    result = op(*given, **given_kwargs)
    for name, (t, values, version) in before.items():
        changed = not np.array_equal(_values(t), values, equal_nan=True)
        if changed and name.split("[")[0] not in mutable:
            raise OpCheckError(
                f"{op.qualname} wrote argument '{name}' but its schema does not declare "
                f"it mutated (`{schema.text}`): add it to mutates_args (Tensor(a!))")
        if name.split("[")[0] in mutable and changed and t._version == version:
            raise OpCheckError(f"{op.qualname} wrote argument '{name}' without bumping its "
                               f"version counter")
    for i, o in enumerate(_outputs(result)):
        for name, (t, _, _) in before.items():
            if o._impl.storage is t._impl.storage:
                raise OpCheckError(
                    f"{op.qualname}: output {i} aliases argument '{name}' (shares its "
                    f"memory); a custom op must return new tensors (clone the input)")


def _named_tensors(op, args, kwargs):
    names = op.handle.schema.arg_names
    positional = [n for n in names if n not in op._kwarg_only]
    pairs = list(zip(positional, args)) + list(kwargs.items())
    for name, value in pairs:
        if _is_tensor(value):
            yield name, value
        elif isinstance(value, (list, tuple)):
            for j, t in enumerate(value):
                if _is_tensor(t):
                    yield f"{name}[{j}]", t


def _differentiable(args):
    return [i for i, a in enumerate(args) if _is_tensor(a) and
            (a.dtype.is_floating_point or a.dtype.is_complex)]


def _test_autograd_registration(op, args, kwargs):
    from tensorplay.autograd.not_implemented import NotImplementedBackward
    positions = _differentiable(args)
    if not positions:
        raise _Skip("no floating tensor argument")
    given = _map(_clone, args)
    for i in positions:
        given[i].requires_grad_(True)
    result = op(*given, **kwargs)
    outs = [o for o in _outputs(result) if o.dtype.is_floating_point or o.dtype.is_complex]
    if not outs:
        raise _Skip("no floating output")
    for i, o in enumerate(outs):
        if o.grad_fn is None:
            raise OpCheckError(f"{op.qualname}: output {i} has no grad_fn although its inputs "
                               f"require grad (the result was detached)")
        if isinstance(o.grad_fn, NotImplementedBackward):
            raise OpCheckError(f"{op.qualname} has no autograd formula: give derivatives= "
                               f"or call register_autograd")


def _test_gradcheck(op, args, kwargs):
    import tensorplay as tp
    from tensorplay.autograd.not_implemented import NotImplementedBackward
    positions = _differentiable(args)
    if not positions:
        raise _Skip("no floating tensor argument")
    if op.handle.schema.mutable_positions:
        raise _Skip("the op mutates its inputs")
    base = _map(_clone, args)
    inputs = []
    for i in positions:
        dtype = tp.complex128 if base[i].dtype.is_complex else tp.float64
        inputs.append(base[i].to(dtype).requires_grad_(True))

    def func(*diff):
        call = list(base)
        for i, d in zip(positions, diff):
            call[i] = d
        return op(*call, **kwargs)

    probe = _outputs(func(*inputs))
    if any(isinstance(o.grad_fn, NotImplementedBackward) for o in probe):
        raise _Skip("no autograd formula (test_autograd_registration reports it)")
    try:
        tp.autograd.gradcheck(func, tuple(inputs))
    except Exception as e:
        raise OpCheckError(f"{op.qualname}: gradcheck failed, the derivative does not match "
                           f"finite differences: {e}") from e
    try:
        tp.autograd.gradgradcheck(func, tuple(inputs))
    except Exception as e:
        raise OpCheckError(f"{op.qualname}: gradgradcheck failed (the backward's own "
                           f"derivative): {e}") from e


def _test_faketensor(op, args, kwargs):
    from tensorplay.dispatch.keys import DispatchKey
    if op.handle.slot_registry(DispatchKey.Meta) is None:
        raise OpCheckError(f"{op.qualname} has no fake kernel: register one with "
                           f"register_fake (it gives the outputs' shapes and dtypes)")
    real = _outputs(op(*_map(_clone, args), **kwargs))
    fake = _outputs(op(*_map(lambda t: t.detach().to("meta"), args), **kwargs))
    if len(real) != len(fake):
        raise OpCheckError(f"{op.qualname}: the fake kernel returns {len(fake)} tensors, the "
                           f"real kernel {len(real)}")
    for i, (r, f) in enumerate(zip(real, fake)):
        if tuple(r.shape) != tuple(f.shape) or r.dtype is not f.dtype:
            raise OpCheckError(f"{op.qualname}: output {i}: the fake kernel gives "
                               f"{_describe(f)}, the real kernel {_describe(r)}")
        if str(f.device) != "meta":
            raise OpCheckError(f"{op.qualname}: output {i} of the fake kernel is on "
                               f"{f.device}, not meta")


def _example(t, k):
    """Example k of a batch built from sample `t`: the sample, then a changed copy."""
    if k == 0 or not (t.dtype.is_floating_point or t.dtype.is_complex):
        return _clone(t)
    return _clone(t) * 0.5 + 0.25


def _test_vmap(op, args, kwargs):
    import tensorplay as tp
    if op.handle.schema.mutable_positions:
        raise _Skip("the op mutates its inputs")
    positions = [i for i, a in enumerate(args) if _is_tensor(a)]
    if not positions:
        raise _Skip("no tensor argument")
    batches = list(args)
    for i in positions:
        batches[i] = tp.stack([_example(args[i], 0), _example(args[i], 1)])
    in_dims = tuple(0 if i in positions else None for i in range(len(args)))
    batched = tp.vmap(lambda *a: op(*a, **kwargs), in_dims=in_dims)(*batches)
    for k in range(2):
        call = list(args)
        for i in positions:
            call[i] = _example(args[i], k)
        expected = _outputs(op(*call, **kwargs))
        got = _outputs(batched)
        for j, (e, g) in enumerate(zip(expected, got)):
            try:
                tp.testing.assert_close(g[k], e)
            except AssertionError as err:
                raise OpCheckError(f"{op.qualname}: under vmap, output {j} of example {k} "
                                   f"differs from a call on that example alone: {err}") from err


def _test_devices(op, args, kwargs):
    import tensorplay as tp
    from tensorplay import _cuda_state
    from tensorplay.dispatch.keys import DispatchKey
    if op.handle.slot_registry(DispatchKey.CUDA) is None:
        raise _Skip("no cuda kernel")
    if not _cuda_state.is_usable():
        raise _Skip("no cuda device (a GPU or TRITON_INTERPRET=1)")
    on_cpu = _map(_clone, args)
    on_cuda = _map(lambda t: t.detach().to("cuda"), args)
    expected = _outputs(op(*on_cpu, **kwargs))
    got = _outputs(op(*on_cuda, **kwargs))
    for j, (e, g) in enumerate(zip(expected, got)):
        if str(g.device).split(":")[0] != "cuda":
            raise OpCheckError(f"{op.qualname}: output {j} of the cuda kernel is on {g.device}")
        try:
            tp.testing.assert_close(g.cpu(), e)
        except AssertionError as err:
            raise OpCheckError(f"{op.qualname}: output {j}: the cuda kernel disagrees with "
                               f"the cpu kernel: {err}") from err


class _BuiltinOp:
    """An op of ops.yaml (`tp.ops.mul.Tensor`) as the checks see a custom op: its handle,
    its name, called with every argument (the schema's defaults are the front door's)."""

    def __init__(self, overload):
        self.overload = overload
        self.handle = overload.handle
        self.qualname = overload.name
        self._kwarg_only = set()

    def __call__(self, *args, **kwargs):
        return self.overload(*args, **kwargs)


CHECKS = {
    "test_schema": _test_schema,
    "test_autograd_registration": _test_autograd_registration,
    "test_gradcheck": _test_gradcheck,
    "test_faketensor": _test_faketensor,
    "test_vmap": _test_vmap,
    "test_devices": _test_devices,
}
# the checks of values, repeated for each of `dtypes`
VALUE_CHECKS = ("test_schema", "test_faketensor", "test_vmap", "test_devices")


def _in_dtype(args, dtype):
    return _map(lambda t: t.detach().to(dtype) if t.dtype.is_floating_point else t, args)


def opcheck(op, args, kwargs=None, *, test_utils=DEFAULT_TEST_UTILS, raise_exception=True,
            atol=None, rtol=None, dtypes=None):
    """Run the checks `test_utils` (names of CHECKS) of custom op `op` (or an op of
    ops.yaml, `tp.ops.mul.Tensor`, given every argument) on `args`/`kwargs`;
    returns {check: "SUCCESS" | "SKIPPED: why" | the exception}. `raise_exception`:
    raise the first failure as an OpCheckError instead. (`atol`/`rtol` are PyTorch's
    arguments, unused by its checks too.)"""
    from tensorplay.dispatch.python_key import OpOverload
    from tensorplay.library.custom_ops import _op
    op = _BuiltinOp(op) if isinstance(op, OpOverload) else _op(op)
    kwargs = dict(kwargs or {})
    if isinstance(test_utils, str):
        test_utils = (test_utils,)
    unknown = [t for t in test_utils if t not in CHECKS]
    if unknown:
        raise ValueError(f"opcheck(): unknown test_utils {unknown}; choose from "
                         f"{list(CHECKS)}")
    runs = [(name, args, name) for name in test_utils]
    for dtype in dtypes or ():
        runs += [(f"{name}[{dtype.name}]", _in_dtype(args, dtype), name)
                 for name in test_utils if name in VALUE_CHECKS]
    results = {}
    for label, sample, name in runs:
        try:
            CHECKS[name](op, list(sample), kwargs)
            results[label] = "SUCCESS"
        except _Skip as skip:
            results[label] = f"SKIPPED: {skip}"
        except Exception as e:
            error = e if isinstance(e, OpCheckError) else \
                OpCheckError(f"{op.qualname}: {name} raised {type(e).__name__}: {e}")
            if error is not e:
                error.__cause__ = e
            if raise_exception:
                raise OpCheckError(f"opcheck({op.qualname}): {label} failed: {error}") \
                    from error
            results[label] = error
    return results
