"""The Meta backend as a whole: every op of ops.yaml runs on `device="meta"` and gives what
a real run gives (shape, dtype, strides, aliasing), and whole models built on meta report
PyTorch's shapes without allocating their parameters.

What counts as "runs on meta" (the walk, test_every_op_runs_on_meta):
    - the op has a Meta kernel of its own: a `meta:` shape rule in ops.yaml, or
    - it has none but is a Composite decomposition (as PyTorch's CompositeImplicit ops are)
      that a sample of the operator database (tests/opinfo) really ran on meta: the call
      reached the op (recorded) and either returned, or raised the DataDependentError
      PyTorch's meta refuses the same call with (nonzero, masked_select, unique, equal,
      item(): their output is decided by values a meta tensor does not have).

    test_every_op_runs_on_meta      the walk over ops.yaml; lists every op without a way
    test_meta_matches_cpu_and_torch  per database entry, the samples that reach each of its
                                    overloads (and its in-place variant): meta vs CPU (shape,
                                    dtype, strides, which input an output is or views, at
                                    which offset) and vs PyTorch's meta (shape and dtype,
                                    strides for views; where PyTorch's meta disagrees with
                                    PyTorch's CPU, the CPU is the oracle)
    test_meta_all_samples           (slow) the same over every sample and every dtype
    test_data_dependent_ops_refuse  typed errors where PyTorch refuses too
    test_factories_on_meta          tp.rand/arange/eye/... on meta: PyTorch's shapes and
                                    dtypes, no values computed, the generator untouched
    test_models_on_meta / test_to_empty_materialises  DigitsCNN, nn.LSTM, nn.TransformerEncoder
    test_layers_on_meta             each nn layer with a `device=` argument, built on meta
"""
from __future__ import annotations

import dataclasses

import pytest
import torch

import tensorplay as tp
from opinfo import op_db
from opinfo.core import TORCH_DTYPE, record_calls, to_torch, yaml_ops
from tensorplay import nn
from tensorplay.dispatch.dispatcher import dispatcher
from tensorplay.dispatch.keys import DispatchKey
from tensorplay.errors import DataDependentError, DeviceError, TensorPlayError
from tensorplay.train.models import CharTransformer, DigitsCNN


def _to_meta(t):
    return tp.empty_strided(tuple(t.shape), t.stride(), dtype=t.dtype, device="meta")


def _flat(value):
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flat(v)]
    return [value]


def _strides(t):
    """Strides where they mean something: dims of size 1 may have any stride, and an empty
    tensor has no layout at all (PyTorch's own comparisons skip them the same way)."""
    if t.numel() == 0:
        return ()
    return tuple(st for size, st in zip(t.shape, t.stride()) if size != 1)


# ---- one sample, three runs ---------------------------------------------------------------
def _compare_tensor(where, meta, cpu, meta_inputs, cpu_inputs):
    """`meta` (a meta result) against `cpu` (the CPU result of the same sample)."""
    problems = []
    if not isinstance(meta, tp.Tensor) or meta.device.type != "meta":
        return [f"{where}: on the CPU a tensor, on meta {meta!r}"]
    if tuple(meta.shape) != tuple(cpu.shape) or meta.dtype != cpu.dtype:
        return [f"{where}: meta {meta.dtype.name}{list(meta.shape)}, CPU "
                f"{cpu.dtype.name}{list(cpu.shape)}"]
    if _strides(meta) != _strides(cpu):
        problems.append(f"{where}: meta strides {meta.stride()}, CPU {cpu.stride()}")
    for i, (m_in, c_in) in enumerate(zip(meta_inputs, cpu_inputs)):
        if (cpu is c_in) != (meta is m_in):
            problems.append(f"{where}: on the CPU the result is input {i} itself: "
                            f"{cpu is c_in}, on meta: {meta is m_in}")
        shares = cpu._impl.storage is c_in._impl.storage
        if shares != (meta._impl.storage is m_in._impl.storage):
            problems.append(f"{where}: on the CPU the result is a view of input {i}: {shares}"
                            f", on meta: {not shares}")
        elif shares and meta.storage_offset() - m_in.storage_offset() != \
                cpu.storage_offset() - c_in.storage_offset():
            problems.append(f"{where}: view offset {meta.storage_offset()} on meta, "
                            f"{cpu.storage_offset()} on the CPU")
    return problems


def _same_shape_and_dtype(meta, expected):
    return isinstance(expected, torch.Tensor) and \
        tuple(meta.shape) == tuple(expected.shape) and TORCH_DTYPE[meta.dtype] == expected.dtype


def _compare_torch(where, op, meta, expected, on_cpu):
    """`meta` against PyTorch's meta result `expected`; `on_cpu` is PyTorch's CPU result
    of the same output, the oracle where PyTorch's meta disagrees with it (half-precision
    batch/layer norm statistics, threshold_backward of mixed dtypes)."""
    if not isinstance(expected, torch.Tensor) or not isinstance(meta, tp.Tensor):
        return []
    if not _same_shape_and_dtype(meta, expected) and not _same_shape_and_dtype(meta, on_cpu):
        return [f"{where}: meta {meta.dtype.name}{list(meta.shape)}, PyTorch's meta "
                f"{expected.dtype}{list(expected.shape)}"]
    # Strides are PyTorch's contract for views only; elsewhere each backend picks its
    # own layout (TensorPlay's kernels return contiguous results), compared with the CPU.
    if (op.is_view or op.view_like) and (
            _strides(meta) != _strides(expected) and expected.numel() > 0):
        return [f"{where}: view strides {meta.stride()}, PyTorch's meta {expected.stride()}"]
    return []


def _torch_call(op, args, inplace):
    """PyTorch's result for `args` (the sample's input, args and kwargs in PyTorch), or
    the exception it raises."""
    try:
        if inplace:
            return getattr(args[0], op.inplace)(*args[1], **args[2]), None
        return op.ref(args[0], *args[1], **args[2]), None
    except Exception as e:  # noqa: BLE001 - any refusal, compared with ours
        return None, e


def _on_meta(value):
    """The sample's value for a run on meta: its tensors as meta tensors with the same
    strides, and its device arguments (the sample's own device, `cpu`) as `meta`."""
    if isinstance(value, tp.Tensor):
        return _to_meta(value)
    if isinstance(value, tp.device) and value.type == "cpu":
        return tp.device("meta")
    if isinstance(value, str) and value == "cpu":
        return "meta"
    if isinstance(value, (tuple, list)):
        return type(value)(_on_meta(v) for v in value)
    if isinstance(value, dict):
        return {k: _on_meta(v) for k, v in value.items()}
    return value


def _meta_sample(sample):
    return dataclasses.replace(sample, input=_on_meta(sample.input),
                               args=_on_meta(sample.args), kwargs=_on_meta(sample.kwargs))


def _call(op, sample, inplace):
    return op.call_inplace(sample) if inplace else op.call(sample)


def run_on_meta(op, sample, inplace=False):
    """Run `sample` (of the op, or of its in-place variant) on meta, on the CPU and in
    PyTorch on meta.

    Returns (overloads that ran on meta, problems). The overloads count only when the
    meta run returned what the CPU run returns, or refused with a DataDependentError as
    PyTorch's meta refuses the call."""
    meta = _meta_sample(sample)
    torch_meta = _meta_sample(sample)   # its own: in-place views change their input
    torch_cpu = _torch_call(op, to_torch((sample.input, sample.args, sample.kwargs)), inplace)
    error = None
    with record_calls() as reached:
        try:
            actual = _call(op, meta, inplace)
        except Exception as e:  # noqa: BLE001 - judged below
            error = e
    reached = set(reached)
    expected, torch_error = _torch_call(op, to_torch((torch_meta.input, torch_meta.args,
                                                      torch_meta.kwargs)), inplace)
    if isinstance(error, DataDependentError):
        if torch_error is None:
            return set(), [f"{sample!r}: DataDependentError on meta ({error}), but PyTorch's "
                           f"meta gives a result"]
        return reached, []
    if error is not None:
        try:
            _call(op, sample, inplace)
            refused_on_cpu = False
        except Exception:  # noqa: BLE001 - bad input for this dtype: both backends refuse
            refused_on_cpu = True
        typed = isinstance(error, TensorPlayError)
        # A sample marked meta=False reads a value (a Scalar given as a tensor): a typed
        # refusal is what meta can do.
        if typed and (refused_on_cpu or not sample.meta):
            return set(), []
        return set(), [f"{sample!r}: {type(error).__name__} on meta: {error}"]
    cpu = _call(op, sample, inplace)
    m_inputs, c_inputs = meta.tensors(), sample.tensors()
    problems = []
    for i, (m, c) in enumerate(zip(_flat(actual), _flat(cpu))):
        if isinstance(c, tp.Tensor):
            problems += _compare_tensor(f"{sample!r} output {i}", m, c, m_inputs, c_inputs)
    if op.mutates_input or inplace:   # in-place views (t_, unsqueeze_) change their input
        problems += _compare_tensor(f"{sample!r} input after the call", meta.input,
                                    sample.input, [], [])
    if torch_error is None:
        on_cpu = _flat(torch_cpu[0]) + [None] * len(_flat(expected))
        for i, (m, e) in enumerate(zip(_flat(actual), _flat(expected))):
            problems += _compare_torch(f"{sample!r} output {i}", op, m, e, on_cpu[i])
    return (set() if problems else reached), problems


def _sample_dtype(op):
    # The dtype in which every declared overload is reached (test_ops.py's choice).
    return tp.float32 if tp.float32 in op.dtypes else op.dtypes[-1]


_covering = {}


def covering_runs(op):
    """Samples of `op` in order until each of its declared overloads has run on meta (most
    entries: one sample). Returns (overloads reached, problems); computed once per entry,
    shared by the walk and the per-entry test."""
    key = id(op)
    if key not in _covering:
        wanted = set(op.overloads)
        reached, problems = set(), []
        for sample in op.sample_inputs("cpu", _sample_dtype(op)):
            for inplace in (False, True) if op.inplace else (False,):
                ran, found = run_on_meta(op, sample, inplace)
                reached |= ran
                problems += found
            if wanted <= reached:
                break
        _covering[key] = (reached, problems)
    return _covering[key]


# ---- (1) the walk -------------------------------------------------------------------------
def _has_meta_kernel(handle):
    return handle._has_backend_kernel(DispatchKey.Meta)


def test_every_op_runs_on_meta():
    ran_on_meta = set()
    for op in op_db:
        ran_on_meta |= covering_runs(op)[0]
    missing = []
    for name, entry in yaml_ops().items():
        if entry.derived_from is not None:
            continue           # alias_of / copy_of: tests/test_aliases.py runs them on meta
        if {key for key, _ in entry.dispatch} == {"Sparse"}:
            continue           # sparse inputs only: a meta tensor is strided
        handle = dispatcher.find(name)
        if _has_meta_kernel(handle):
            continue
        if handle.kernels[DispatchKey.Composite] is None:
            missing.append(f"{name}: no Meta kernel and no Composite decomposition")
        elif name not in ran_on_meta:
            missing.append(f"{name}: Composite, but no database sample ran it on meta")
    assert not missing, "ops without a way to run on meta:\n  " + "\n  ".join(missing)


def test_run_on_meta_can_fail():
    """The proof the walk relies on can fail: a meta result that differs from the CPU's, or
    a DataDependentError where PyTorch's meta gives a result, is a problem and earns the
    op no credit."""
    entry = next(o for o in op_db if o.full_name == "clone")
    sample = next(s for s in entry.sample_inputs("cpu", tp.float32) if s.input.dim() == 2)

    def flattened_on_meta(x, **kwargs):
        out = tp.clone(x, **kwargs)
        return out.reshape(-1) if x.device.type == "meta" else out

    def refused_on_meta(x, **kwargs):
        if x.device.type == "meta":
            raise DataDependentError("clone(): made up", op="clone", arg="self")
        return tp.clone(x, **kwargs)

    for wrong in (flattened_on_meta, refused_on_meta):
        reached, problems = run_on_meta(dataclasses.replace(entry, op=wrong), sample)
        assert not reached and problems, wrong.__name__
    assert run_on_meta(entry, sample) == ({"clone"}, [])


# ---- (2) the operator database ------------------------------------------------------------
@pytest.mark.parametrize("op", [pytest.param(op, id=op.full_name) for op in op_db])
def test_meta_matches_cpu_and_torch(op):
    reached, problems = covering_runs(op)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.parametrize("op", [pytest.param(op, id=op.full_name) for op in op_db])
def test_meta_all_samples(op):
    problems = []
    for dtype in op.dtypes:
        for sample in op.sample_inputs("cpu", dtype):
            for inplace in (False, True) if op.inplace else (False,):
                problems += run_on_meta(op, sample, inplace)[1]
    assert not problems, "\n".join(problems)


# ---- data-dependent outputs ---------------------------------------------------------------
def _meta(*shape, dtype=tp.float32):
    return tp.empty(*shape, dtype=dtype, device="meta")


def _torch_meta(*shape, dtype=torch.float32):
    return torch.empty(*shape, dtype=dtype, device="meta")


DATA_DEPENDENT = [
    ("nonzero", "self", lambda m: m.nonzero()),
    ("nonzero", "self", lambda m: m.nonzero(as_tuple=True)),
    ("nonzero", "self", lambda m: m.argwhere()),
    ("masked_select", "mask", lambda m: m.masked_select(m > 0)),
    ("_unique2", "self", lambda m: m.unique()),
    ("unique_dim", "self", lambda m: m.unique(dim=1)),
    ("equal", "self", lambda m: m.equal(m)),
    ("item", "self", lambda m: m.sum().item()),
    ("item", "self", lambda m: m.allclose(m)),
    ("tolist", "self", lambda m: m.tolist()),
]


@pytest.mark.parametrize("op, arg, call", DATA_DEPENDENT, ids=[f"{i}-{c[0]}" for i, c in
                                                              enumerate(DATA_DEPENDENT)])
def test_data_dependent_ops_refuse(op, arg, call):
    with pytest.raises(Exception):
        call(_torch_meta(3, 4))
    with pytest.raises(DataDependentError, match=rf"^{op}\(\).*'{arg}'") as info:
        call(_meta(3, 4))
    assert info.value.op == op and info.value.arg == arg
    assert isinstance(info.value, NotImplementedError)   # as PyTorch's refusal


def test_data_dependent_rules_still_check_their_input():
    with pytest.raises(tp.errors.DTypeError, match=r"masked_select\(\).*'mask'"):
        tp.masked_select(_meta(3, 4), _meta(3, 4))
    with pytest.raises(tp.errors.DimError, match=r"unique_dim\(\)"):
        tp.unique(_meta(3, 4), dim=2)
    # ... and, as validators of the CPU kernels, never refuse real data.
    x = tp.tensor([[1.0, 0.0], [2.0, 2.0]])
    assert tp.nonzero(x).tolist() == torch.nonzero(torch.tensor(x.tolist())).tolist()
    assert tp.masked_select(x, x > 0).tolist() == [1.0, 2.0, 2.0]


def test_copy_out_of_meta_refuses():
    with pytest.raises(NotImplementedError):
        _torch_meta(2, 3).to("cpu")
    for call in (lambda m: m.to("cpu"), lambda m: m.cpu(), lambda m: m.to("cpu", tp.int32)):
        with pytest.raises(DeviceError, match=r"_to_copy\(\): cannot copy out of a meta tensor"):
            call(_meta(2, 3))
    m = _meta(2, 3)
    assert m.to("meta") is m
    moved = tp.ones(2, 3).to("meta", tp.float64)
    assert moved.device.type == "meta" and moved.dtype == tp.float64


def test_fill_with_a_tensor_value():
    """fill_.Tensor never reads its value, so it runs on meta; and, as PyTorch's, the
    gradient reaches the value."""
    out = _meta(2, 3).fill_(tp.empty((), device="meta"))
    assert out.device.type == "meta" and tuple(out.shape) == (2, 3)
    value, t_value = tp.tensor(2.5, requires_grad=True), torch.tensor(2.5, requires_grad=True)
    filled, t_filled = tp.zeros(2, 3).fill_(value), torch.zeros(2, 3).fill_(t_value)
    (filled * filled).sum().backward()
    (t_filled * t_filled).sum().backward()
    assert filled.tolist() == t_filled.tolist() and value.grad.item() == t_value.grad.item()


# ---- factories ----------------------------------------------------------------------------
FACTORIES = [
    ("empty", lambda lib, d: lib.empty(2, 3, device=d)),
    ("zeros", lambda lib, d: lib.zeros(2, 3, dtype=lib.int32, device=d)),
    ("full", lambda lib, d: lib.full((2, 3), 1.5, device=d)),
    ("arange", lambda lib, d: lib.arange(5, device=d)),
    ("arange float", lambda lib, d: lib.arange(0, 1, 0.1, device=d)),
    ("linspace", lambda lib, d: lib.linspace(0, 1, 7, device=d)),
    ("logspace", lambda lib, d: lib.logspace(0, 1, 7, device=d)),
    ("eye", lambda lib, d: lib.eye(3, 5, device=d)),
    ("rand", lambda lib, d: lib.rand(2, 3, device=d)),
    ("randn", lambda lib, d: lib.randn(2, 3, dtype=lib.float64, device=d)),
    ("randint", lambda lib, d: lib.randint(0, 5, (2, 3), device=d)),
    ("randperm", lambda lib, d: lib.randperm(7, device=d)),
    ("rand_like", lambda lib, d: lib.rand_like(lib.empty(2, 3, device=d))),
    ("randn_like", lambda lib, d: lib.randn_like(lib.empty(2, 3, device=d))),
    ("randint_like", lambda lib, d: lib.randint_like(lib.empty(2, 3, device=d), 4)),
    ("tensor", lambda lib, d: lib.tensor([[1, 2]], device=d)),
]


@pytest.mark.parametrize("make", [pytest.param(f, id=name) for name, f in FACTORIES])
def test_factories_on_meta(make):
    expected = make(torch, "meta")
    tp.manual_seed(7)
    before = tp.rand(3).tolist()
    tp.manual_seed(7)
    actual = make(tp, "meta")
    assert actual.device.type == "meta" and actual._impl.storage.data is None
    assert tuple(actual.shape) == tuple(expected.shape)
    assert TORCH_DTYPE[actual.dtype] == expected.dtype
    # As in PyTorch, nothing is drawn for a meta tensor: the generator is where it was.
    assert tp.rand(3).tolist() == before


def test_a_huge_factory_on_meta_computes_nothing():
    assert tp.eye(10**6, device="meta").shape == (10**6, 10**6)
    assert tp.randn(10**6, 10**6, device="meta").shape == (10**6, 10**6)


# ---- (3) models ---------------------------------------------------------------------------
def _torch_digits_cnn(device):
    n = torch.nn
    return n.Sequential(
        n.Conv2d(1, 16, 3, padding=1, device=device), n.BatchNorm2d(16, device=device),
        n.ReLU(), n.Conv2d(16, 32, 3, padding=1, device=device),
        n.BatchNorm2d(32, device=device), n.ReLU(), n.MaxPool2d(2), n.Flatten(),
        n.Dropout(0.25), n.Linear(512, 10, device=device))


def _lstm(lib, device):
    return lib.nn.LSTM(5, 7, num_layers=2, batch_first=True, bidirectional=True,
                       device=device)


def _encoder(lib, device):
    layer = lib.nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0,
                                           batch_first=True, device=device)
    return lib.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)


MODELS = {
    # name: (TensorPlay model on a device, PyTorch's, input shape, input dtype)
    "digits_cnn": (lambda d: DigitsCNN(device=d), _torch_digits_cnn, (4, 1, 8, 8)),
    "lstm": (lambda d: _lstm(tp, d), lambda d: _lstm(torch, d), (3, 6, 5)),
    "transformer_encoder": (lambda d: _encoder(tp, d), lambda d: _encoder(torch, d),
                            (2, 9, 16)),
}


def _shapes(value):
    return [tuple(t.shape) for t in _flat(value)]


@pytest.mark.parametrize("name", list(MODELS))
def test_models_on_meta(name):
    build, build_torch, shape = MODELS[name]
    model, reference = build("meta"), build_torch("meta")
    params = dict(model.named_parameters())
    assert {k: tuple(p.shape) for k, p in params.items()} == \
        {k: tuple(p.shape) for k, p in reference.named_parameters()}
    for t in list(params.values()) + list(model.buffers()):
        assert t.device.type == "meta" and t._impl.storage.data is None
    out = model(tp.empty(*shape, device="meta"))
    expected = reference(torch.empty(*shape, device="meta"))
    assert all(t.device.type == "meta" for t in _flat(out))
    assert _shapes(out) == _shapes(expected)
    assert [TORCH_DTYPE[t.dtype] for t in _flat(out)] == [t.dtype for t in _flat(expected)]


# name: (constructor arguments, the forward's input shapes; an int64 input for Embedding)
LAYERS = {
    "Linear": ((3, 4), [(2, 3)]),
    "Bilinear": ((3, 4, 5), [(2, 3), (2, 4)]),
    "Conv1d": ((3, 4, 3), [(2, 3, 10)]),
    "Conv2d": ((3, 4, 3), [(2, 3, 8, 8)]),
    "Conv3d": ((2, 4, 3), [(1, 2, 5, 5, 5)]),
    "ConvTranspose1d": ((3, 4, 3), [(2, 3, 5)]),
    "ConvTranspose2d": ((3, 4, 3), [(2, 3, 5, 5)]),
    "Embedding": ((10, 4), [(2, 3)]),
    "RNN": ((5, 7), [(3, 4, 5)]),
    "GRU": ((5, 7), [(3, 4, 5)]),
    "RNNCell": ((5, 7), [(3, 5)]),
    "LSTMCell": ((5, 7), [(3, 5)]),
    "GRUCell": ((5, 7), [(3, 5)]),
    "PReLU": ((), [(2, 3)]),
    "BatchNorm1d": ((3,), [(4, 3)]),
    "InstanceNorm2d": ((3,), [(2, 3, 4, 4)]),
    "LayerNorm": ((6,), [(2, 6)]),
    "GroupNorm": ((2, 6), [(2, 6, 3)]),
    "RMSNorm": ((6,), [(2, 6)]),
    "MultiheadAttention": ((8, 2), [(5, 2, 8)] * 3),
    "TransformerDecoderLayer": ((8, 2, 16), [(5, 2, 8)] * 2),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_layers_on_meta(name):
    """Each layer built with device="meta" has PyTorch's parameters and output shapes."""
    args, shapes = LAYERS[name]
    layer = getattr(nn, name)(*args, device="meta")
    reference = getattr(torch.nn, name)(*args, device="meta")
    assert {k: tuple(p.shape) for k, p in layer.named_parameters()} == \
        {k: tuple(p.shape) for k, p in reference.named_parameters()}
    assert all(t.device.type == "meta" for t in list(layer.parameters()) + list(layer.buffers()))
    dtype = tp.int64 if name == "Embedding" else tp.float32
    out = layer(*[tp.empty(*s, dtype=dtype, device="meta") for s in shapes])
    expected = reference(*[torch.empty(*s, dtype=TORCH_DTYPE[dtype], device="meta")
                           for s in shapes])
    assert _shapes(out) == _shapes(expected)


def test_models_built_under_a_meta_default_device():
    """`with tp.device("meta")` builds a model whose constructor takes no `device=`, as
    `with torch.device("meta")` does."""
    with torch.device("meta"):
        reference = torch.nn.Embedding(30, 64)
    with tp.device("meta"):
        model = CharTransformer(vocab_size=30, context=16)
        assert tp.zeros(1).device.type == "meta"
    assert tp.zeros(1).device.type == "cpu"
    assert model.token.weight.device.type == "meta"
    assert tuple(model.token.weight.shape) == tuple(reference.weight.shape)
    assert all(p._impl.storage.data is None for p in model.parameters())
    out = model(tp.zeros(2, 10, dtype=tp.int64, device="meta"))
    assert out.device.type == "meta" and tuple(out.shape) == (2, 10, 30)


def test_module_to_refuses_meta():
    model = DigitsCNN(device="meta")
    with pytest.raises(NotImplementedError):
        _torch_digits_cnn("meta").to("cpu")
    with pytest.raises(DeviceError, match=r"to_empty"):
        model.to("cpu")


@pytest.mark.parametrize("name", list(MODELS))
def test_to_empty_materialises(name):
    build, _, shape = MODELS[name]
    model = build("meta")
    before = {k: (p, tuple(p.shape), p.dtype, p.requires_grad)
              for k, p in model.named_parameters()}
    buffers = {k: (tuple(b.shape), b.dtype) for k, b in model.named_buffers()}
    assert model.to_empty(device="cpu") is model
    for k, p in model.named_parameters():
        param, sizes, dtype, requires_grad = before[k]
        assert p is param, f"{k}: to_empty must keep the Parameter (optimizers hold it)"
        assert p.device.type == "cpu" and p._impl.storage.data is not None
        assert (tuple(p.shape), p.dtype, p.requires_grad) == (sizes, dtype, requires_grad)
    assert {k: (tuple(b.shape), b.dtype) for k, b in model.named_buffers()} == buffers
    assert all(b.device.type == "cpu" for b in model.buffers())
    # The values are uninitialised: load real ones, and the model computes what the same
    # model built on the CPU computes.
    tp.manual_seed(0)
    source = build("cpu")
    model.load_state_dict(source.state_dict())
    model.eval()
    source.eval()
    x = tp.randn(*shape)
    for got, want in zip(_flat(model(x)), _flat(source(x))):
        assert got.device.type == "cpu"
        assert got.tolist() == want.tolist()


def test_to_empty_without_recurse_moves_only_the_module_itself():
    model = nn.Sequential(nn.Linear(2, 3, device="meta"))
    model.register_buffer("scale", tp.empty(3, device="meta"))
    model.to_empty(device="cpu", recurse=False)
    assert model.scale.device.type == "cpu"
    assert model[0].weight.device.type == "meta"
