"""The Python key: tensor subclasses with __tensorplay_dispatch__ and dispatch modes.

PyTorch is the oracle for values, gradients and FLOP counts; the op logs are checked
line by line, since they are what a student reads."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode as TorchFlopCounterMode

import tensorplay as tp
from tensorplay.dispatch.keys import DispatchKey
from tensorplay.dispatch.python_key import PYTHON_BIT, active_modes
from tensorplay.dispatch.tls import local_keys
from tensorplay.errors import ArgumentError, TensorPlayError
from tensorplay.utils.dispatch_mode import FlopCounterMode, LoggingMode, TensorPlayDispatchMode
from tensorplay.utils.logging_tensor import LoggingTensor, capture_logs


def _data(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def ops_of(lines):
    """`$2: float32[2] = tp.ops.mul.Tensor($0, $1)` -> 'mul.Tensor'."""
    return [line.split("tp.ops.", 1)[1].split("(", 1)[0] for line in lines]


# ---- LoggingTensor ---------------------------------------------------------------------
def test_logging_tensor_logs_the_ops_below_autograd_in_order():
    rng = np.random.default_rng(0)
    xs, ws = _data(rng, 2, 3), _data(rng, 3, 4)
    x = LoggingTensor(tp.tensor(xs), requires_grad=True)
    w = LoggingTensor(tp.tensor(ws))
    with capture_logs() as logs:
        y = x.mm(w).relu().sum()
        y.backward()
    assert logs[:3] == [
        "$2: float32[2, 4] = tp.ops.mm.default($0, $1)",
        "$3: float32[2, 4] = tp.ops.relu.default($2)",
        "$4: float32[] = tp.ops.sum.default($3, None)",
    ]
    # backward: the seed (clone + fill_ make it a LoggingTensor), sum's expand, relu's
    # threshold_backward, mm's grad of self, then AccumulateGrad's copy into .grad
    assert ops_of(logs[3:]) == ["clone.default", "fill_.Scalar", "expand.default",
                                "threshold_backward.default", "transpose.int", "mm.default",
                                "clone.default"]
    # autograd ran above, on the LoggingTensors
    assert type(y) is LoggingTensor and y.grad_fn.name() == "SumBackward0"
    assert type(x.grad) is LoggingTensor
    tx = torch.tensor(xs, requires_grad=True)
    tx.mm(torch.tensor(ws)).relu().sum().backward()
    np.testing.assert_allclose(x.grad.elem.numpy(), tx.grad.numpy(), rtol=1e-6)


def test_composite_ops_decompose_above_the_python_key():
    # matmul is a decomposition that runs above autograd: the handler sees its mm
    a = LoggingTensor(tp.ones(2, 3))
    b = LoggingTensor(tp.ones(3, 2))
    with capture_logs() as logs:
        c = a @ b
    assert ops_of(logs) == ["mm.default"]
    assert type(c) is LoggingTensor and c.elem.tolist() == [[3.0, 3.0], [3.0, 3.0]]


def test_mixed_arguments_and_the_result_class():
    x = LoggingTensor(tp.tensor([1.0, 2.0]))
    with capture_logs() as logs:
        y = x + tp.tensor([10.0, 20.0])          # a plain tensor joins in
    assert type(y) is LoggingTensor and y.elem.tolist() == [11.0, 22.0]
    assert logs == ["$2: float32[2] = tp.ops.add.Tensor($0, $1, 1)"]
    z = tp.tensor([1.0]) * 2                      # no LoggingTensor: no log, plain result
    assert type(z) is tp.Tensor


def test_inplace_op_returns_its_tensor_and_bumps_the_version():
    x = LoggingTensor(tp.ones(3))
    with capture_logs() as logs:
        r = x.add_(1)
    assert r is x and x._version == 1
    assert logs == ["$0: float32[3] = tp.ops.add_.Tensor($0, $1, 1)"]
    assert x.elem.tolist() == [2.0, 2.0, 2.0]
    m = LoggingTensor(tp.ones(2, 3))
    m.t_()                                        # the wrapper follows its inner metadata
    assert m.shape == (3, 2) and m.stride() == m.elem.stride()


def test_inplace_through_a_view_of_a_subclass_tensor_reaches_the_base_gradient():
    a = LoggingTensor(tp.ones(4), requires_grad=True)
    with capture_logs() as logs:
        b = a.clone()
        v = b[:2]
        v.mul_(3)
        b.sum().backward()
    assert ops_of(logs)[:3] == ["clone.default", "slice.Tensor", "mul_.Tensor"]
    assert v._impl.base is b._impl and v._version == b._version == 1
    ta = torch.ones(4, requires_grad=True)
    tb = ta.clone()
    tb[:2].mul_(3)
    tb.sum().backward()
    assert a.grad.elem.tolist() == ta.grad.tolist() == [3.0, 3.0, 1.0, 1.0]


def test_detach_keeps_the_subclass():
    x = LoggingTensor(tp.tensor([1.0, 2.0]), requires_grad=True)
    d = (x * 2).detach()
    assert type(d) is LoggingTensor and not d.requires_grad and d.grad_fn is None
    assert d.elem.tolist() == [2.0, 4.0]


def test_a_saved_subclass_tensor_modified_in_place_is_caught():
    w = LoggingTensor(tp.ones(3), requires_grad=True)
    with tp.no_grad():
        v = LoggingTensor(tp.ones(3), requires_grad=True)
    y = (w * v).sum()
    with tp.no_grad():
        v.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_double_backward_through_a_saved_subclass_output():
    xs = np.array([0.3, -0.7], np.float32)
    x = LoggingTensor(tp.tensor(xs), requires_grad=True)
    (g,) = tp.autograd.grad(x.tanh().sum(), x, create_graph=True)
    assert type(g) is LoggingTensor
    (gg,) = tp.autograd.grad(g.sum(), x)
    tx = torch.tensor(xs, requires_grad=True)
    (tg,) = torch.autograd.grad(tx.tanh().sum(), tx, create_graph=True)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    np.testing.assert_allclose(gg.elem.numpy(), tgg.numpy(), rtol=1e-5)


def test_explain_shows_the_python_hop():
    x = LoggingTensor(tp.ones(2))
    with tp.dispatch.explain(file=False) as ex:
        x.neg()
    assert "key set   {AutogradCPU, Python, CPU}" in ex.text
    assert "Python -> Python fallback" in ex.text
    assert "Python" not in tp.dispatch.op("neg").dump()     # one fallback, not per op


# ---- subclass construction ---------------------------------------------------------------
def test_wrapper_subclass_has_no_memory():
    x = LoggingTensor(tp.ones(2, 2))
    assert x.shape == (2, 2) and x.dtype == tp.float32
    assert tp.dispatch.key_set(x) == tp.dispatch.DispatchKeySet(
        [DispatchKey.CPU, DispatchKey.Python, DispatchKey.AutogradCPU])
    with pytest.raises(TensorPlayError, match="wrapper subclass"):
        x.numpy()

    class NoHandler(tp.Tensor):
        pass
    with pytest.raises(ArgumentError, match="must define __tensorplay_dispatch__"):
        tp.Tensor._make_wrapper_subclass(NoHandler, (2,))
    with pytest.raises(ArgumentError, match="subclass of tp.Tensor"):
        tp.Tensor._make_wrapper_subclass(int, (2,))


def test_make_subclass_shares_memory_and_dispatches_when_the_class_asks():
    seen = []

    class Watched(tp.Tensor):
        @classmethod
        def __tensorplay_dispatch__(cls, func, types, args=(), kwargs=None):
            seen.append((func.name, types))
            plain = [tp.Tensor._make_subclass(tp.Tensor, a) if isinstance(a, cls) else a
                     for a in args]
            return func(*plain)

    class Plain(tp.Tensor):
        pass

    base = tp.tensor([1.0, 2.0])
    w = tp.Tensor._make_subclass(Watched, base, require_grad=True)
    p = tp.Tensor._make_subclass(Plain, base)
    assert w.requires_grad and not p.requires_grad
    assert not tp.dispatch.key_set(p).bits & PYTHON_BIT
    base.mul_(3)                                   # shared memory and version counter
    assert w.tolist() == [3.0, 6.0] and w._version == base._version == 1
    out = w * 2
    assert seen == [("mul.Tensor", (Watched,))] and out.tolist() == [6.0, 12.0]


def test_subclasses_are_tried_before_their_bases():
    calls = []

    class Base(LoggingTensor):
        @classmethod
        def __tensorplay_dispatch__(cls, func, types, args=(), kwargs=None):
            calls.append(("Base", types))
            return NotImplemented

    class Derived(Base):
        @classmethod
        def __tensorplay_dispatch__(cls, func, types, args=(), kwargs=None):
            calls.append(("Derived", types))
            return NotImplemented

    a, b = Base(tp.ones(1)), Derived(tp.ones(1))
    with pytest.raises(TypeError, match="add.Tensor: no __tensorplay_dispatch__ handled"):
        a + b
    assert calls == [("Derived", (Derived, Base)), ("Base", (Derived, Base))]


# ---- modes -----------------------------------------------------------------------------
def test_a_mode_sees_the_forward_and_the_backward_ops():
    a = tp.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    with LoggingMode() as mode:
        (a * a).sum().backward()
    assert ops_of(mode.lines) == [
        "mul.Tensor", "sum.default",                      # forward
        "expand.default", "mul.Tensor", "mul.Tensor", "add.Tensor",   # backward of mul
        "clone.default",                                  # AccumulateGrad
    ]
    ta = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    (ta * ta).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy())


def test_mode_stack_and_the_included_python_key():
    assert not local_keys.included & PYTHON_BIT
    outer, inner = LoggingMode(), LoggingMode()
    with outer:
        assert local_keys.included & PYTHON_BIT and active_modes() == (outer,)
        with inner:
            tp.ones(2).neg()
        assert active_modes() == (outer,)
    assert not local_keys.included & PYTHON_BIT and active_modes() == ()
    # the inner mode is off while it runs, so its own call reaches the outer one
    assert ops_of(inner.lines) == ["neg.default"] and ops_of(outer.lines) == ["neg.default"]
    m1, m2 = LoggingMode(), LoggingMode()
    m1.__enter__()
    m2.__enter__()
    with pytest.raises(RuntimeError, match="reverse order"):
        m1.__exit__(None, None, None)
    m2.__exit__(None, None, None)
    m1.__exit__(None, None, None)
    assert active_modes() == ()


def test_a_mode_runs_before_a_subclass_and_is_thread_local():
    x = LoggingTensor(tp.ones(2))
    seen_in_thread = []
    with LoggingMode() as mode, capture_logs() as logs:
        y = x * 3
        worker = threading.Thread(target=lambda: seen_in_thread.append(
            local_keys.included & PYTHON_BIT))
        worker.start()
        worker.join()
    assert ops_of(mode.lines) == ["mul.Tensor"] and ops_of(logs) == ["mul.Tensor"]
    assert type(y) is LoggingTensor and seen_in_thread == [0]


def test_a_mode_must_define_its_handler():
    with pytest.raises(NotImplementedError, match="must define __tensorplay_dispatch__"):
        with TensorPlayDispatchMode():
            tp.ones(1).neg()


def test_tp_ops_objects():
    a, b = tp.tensor([1.0, 2.0]), tp.tensor([3.0, 4.0])
    assert tp.ops.add.Tensor(a, b, 2).tolist() == [7.0, 10.0]
    assert tp.ops.add.Tensor(a, b, alpha=1).tolist() == [4.0, 6.0]
    assert tp.ops.mm.default is tp.ops.mm.default and repr(tp.ops.mm.default) == \
        "tp.ops.mm.default"
    with pytest.raises(ArgumentError, match="argument 'alpha' is missing"):
        tp.ops.add.Tensor(a, b)
    with pytest.raises(AttributeError, match="has no overload 'Tensr'.*Scalar, Tensor"):
        tp.ops.add.Tensr
    with pytest.raises(AttributeError, match="no op named 'addd'"):
        tp.ops.addd


# ---- FLOPs -----------------------------------------------------------------------------
def _small_net(lib, rng_arrays, F):
    x, cw, cb, w1, b1, w2 = rng_arrays
    X = lib.tensor(x)
    params = [lib.tensor(a, requires_grad=True) for a in (cw, cb, w1, b1, w2)]
    CW, CB, W1, B1, W2 = params
    h = F.conv2d(X, CW, CB, padding=1, stride=2).relu().flatten(1)
    h = F.linear(h, W1, B1).relu()
    out = (h @ W2).unsqueeze(0)
    out = lib.bmm(out, out.transpose(1, 2)).sum() + lib.addmm(B1, h[:2].t(), h[:2]).sum()
    out.backward()


def test_flop_counter_matches_torch_forward_and_backward():
    rng = np.random.default_rng(1)
    arrays = (_data(rng, 2, 3, 6, 6), _data(rng, 4, 3, 3, 3), _data(rng, 4),
              _data(rng, 7, 36), _data(rng, 7), _data(rng, 7, 2))
    with FlopCounterMode(display=False) as ours:
        _small_net(tp, arrays, tp.nn.functional)
    with TorchFlopCounterMode(display=False) as theirs:
        _small_net(torch, arrays, torch.nn.functional)
    assert ours.get_total_flops() == theirs.get_total_flops() > 0
    torch_conv = {str(k).split("aten.")[1].rstrip("')>"): v
                  for k, v in theirs.get_flop_counts()["Global"].items()}
    counts = ours.get_flop_counts()["Global"]
    assert counts["convolution"] == torch_conv["convolution"]
    assert counts["convolution_backward"] == torch_conv["convolution_backward"]


def test_flop_counter_transposed_convolution_and_table(capsys):
    rng = np.random.default_rng(2)
    x, w = _data(rng, 1, 4, 5, 5), _data(rng, 4, 2, 3, 3)
    with FlopCounterMode() as ours:              # display=True prints the table on exit
        xt = tp.tensor(x, requires_grad=True)
        tp.nn.functional.conv_transpose2d(xt, tp.tensor(w), stride=2, groups=2).sum().backward()
    with TorchFlopCounterMode(display=False) as theirs:
        xt = torch.tensor(x, requires_grad=True)
        torch.nn.functional.conv_transpose2d(xt, torch.tensor(w), stride=2,
                                             groups=2).sum().backward()
    assert ours.get_total_flops() == theirs.get_total_flops() > 0
    printed = capsys.readouterr().out
    assert "convolution" in printed and f"{ours.get_total_flops():,}" in printed


def test_flop_counter_counts_a_model_on_meta_as_torch_does():
    # FLOPs need shapes only: a model on the meta device is counted without any data
    with tp.device("meta"):
        net = tp.nn.Sequential(tp.nn.Conv2d(3, 8, 3), tp.nn.ReLU(), tp.nn.Flatten(),
                               tp.nn.Linear(8 * 6 * 6, 10))
    with FlopCounterMode(display=False) as ours:
        net(tp.empty(4, 3, 8, 8, device="meta")).sum().backward()
    with torch.device("meta"):
        tnet = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(),
                                   torch.nn.Flatten(), torch.nn.Linear(8 * 6 * 6, 10))
    with TorchFlopCounterMode(display=False) as theirs:
        tnet(torch.empty(4, 3, 8, 8, device="meta")).sum().backward()
    assert ours.get_total_flops() == theirs.get_total_flops() > 0


def test_a_slotted_subclass_survives_saving_and_detach():
    class Slotted(tp.Tensor):
        __slots__ = ()      # no instance attributes to carry

        @classmethod
        def __tensorplay_dispatch__(cls, func, types, args=(), kwargs=None):
            plain = [tp.Tensor._make_subclass(tp.Tensor, a) if isinstance(a, cls) else a
                     for a in args]
            out = func(*plain)
            return tp.Tensor._make_subclass(cls, out) if isinstance(out, tp.Tensor) else out

    x = tp.Tensor._make_subclass(Slotted, tp.tensor([0.5, -1.0]), require_grad=True)
    y = x.tanh()                     # tanh saves its result: rebuilt as a Slotted
    assert type(y) is Slotted and type(y.detach()) is Slotted
    y.sum().backward()
    tx = torch.tensor([0.5, -1.0], requires_grad=True)
    tx.tanh().sum().backward()
    assert type(x.grad) is Slotted
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


@pytest.mark.skipif(not (tp.cuda.is_available() or tp.cuda.is_interpreted()),
                    reason="no GPU and no Triton interpreter")
def test_logging_tensor_on_the_cuda_backend():
    rng = np.random.default_rng(3)
    xs, ws = _data(rng, 4, 3), _data(rng, 3, 5)
    x = LoggingTensor(tp.tensor(xs, device="cuda"), requires_grad=True)
    w = LoggingTensor(tp.tensor(ws, device="cuda"))
    with capture_logs() as logs, FlopCounterMode(display=False) as flops:
        (x @ w).relu().sum().backward()
    assert tp.dispatch.key_set(x) == tp.dispatch.DispatchKeySet(
        [DispatchKey.CUDA, DispatchKey.Python, DispatchKey.AutogradCUDA])
    assert ops_of(logs)[:3] == ["mm.default", "relu.default", "sum.default"]
    assert flops.get_total_flops() == 2 * (2 * 4 * 3 * 5)      # mm forward, mm for x.grad
    tx = torch.tensor(xs, requires_grad=True)
    (tx @ torch.tensor(ws)).relu().sum().backward()
    assert x.grad.device == tp.device("cuda")
    np.testing.assert_allclose(x.grad.elem.cpu().numpy(), tx.grad.numpy(), rtol=1e-5,
                               atol=1e-6)
