"""Whole-object tp.save / tp.load: modules, optimizers and other objects are pickled
(tensors beside the pickle); tp.load refuses them by default (weights_only=True) with
PyTorch's message, loads them with weights_only=False or once allow-listed
(add_safe_globals, safe_globals); a file that would run code is refused."""
import collections
import io
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import SerializationError


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


class Net(tp.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = tp.nn.Sequential(tp.nn.Linear(3, 5), tp.nn.ReLU(), tp.nn.Linear(5, 2))
        self.register_buffer("scale", tp.full((2,), 0.5))

    def forward(self, x):
        return self.body(x) * self.scale


def saved(obj):
    buf = io.BytesIO()
    tp.save(obj, buf)
    return buf.getvalue()


def test_whole_module_and_optimizer_round_trip():
    tp.manual_seed(0)
    net = Net()
    opt = tp.optim.Adam(net.parameters(), lr=1e-2)
    for _ in range(2):
        opt.zero_grad()
        net(tp.randn(4, 3)).pow(2).sum().backward()
        opt.step()
    got = tp.load(io.BytesIO(saved({"model": net, "optimizer": opt, "epoch": 2})),
                  weights_only=False)
    model, gopt = got["model"], got["optimizer"]
    assert type(model) is Net and type(gopt) is tp.optim.Adam and got["epoch"] == 2
    x = tp.randn(4, 3)
    np.testing.assert_array_equal(model(x).detach().numpy(), net(x).detach().numpy())
    # the optimizer's params are the loaded model's Parameters (one pickle, one memo)
    assert all(a is b for a, b in zip(gopt.param_groups[0]["params"], model.parameters()))
    assert all(type(p) is tp.nn.Parameter for p in model.parameters())
    # training goes on identically from both
    for m, o in ((net, opt), (model, gopt)):
        o.zero_grad()
        m(x).pow(2).sum().backward()
        o.step()
    for a, b in zip(net.parameters(), model.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_arbitrary_objects_sets_and_cycles_round_trip():
    loop = []
    loop.append(loop)
    obj = {"point": Point(1, tp.ones(2)), "set": {1, 2}, "loop": loop, "fn": len,
           "default": collections.defaultdict(int, a=1)}
    got = tp.load(io.BytesIO(saved(obj)), weights_only=False)
    assert type(got["point"]) is Point and got["point"].y.tolist() == [1.0, 1.0]
    assert got["set"] == {1, 2} and got["loop"][0] is got["loop"] and got["fn"] is len
    assert got["default"]["missing"] == 0


def test_weights_only_refusal_has_pytorchs_message():
    data = saved({"point": Point(1, 2)})
    with pytest.raises(pickle.UnpicklingError) as info:
        tp.load(io.BytesIO(data))
    message = str(info.value)
    name = f"{__name__}.Point"
    assert message.startswith("Weights only load failed. This file can still be loaded")
    assert f"Unsupported global: GLOBAL {name} was not an allowed global by default." in message
    assert f"`tensorplay.serialization.add_safe_globals([{name}])`" in message
    assert f"`tensorplay.serialization.safe_globals([{name}])` context manager" in message
    assert "with `weights_only` set to `False` will likely succeed" in message
    assert isinstance(info.value, SerializationError)
    # torch's own message names the same global the same way
    with pytest.raises(pickle.UnpicklingError) as torch_info:
        torch.load(io.BytesIO(data))
    assert f"Unsupported global: GLOBAL {name} was not an allowed global" in str(torch_info.value)


def test_safe_globals_allow_listing():
    data = saved([Point(3, tp.arange(2))])
    assert tp.serialization.get_safe_globals() == []
    with tp.serialization.safe_globals([Point]):
        assert tp.serialization.get_safe_globals() == [Point]
        got = tp.load(io.BytesIO(data))
    assert got[0].x == 3 and got[0].y.tolist() == [0, 1]
    assert tp.serialization.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError):
        tp.load(io.BytesIO(data))
    tp.serialization.add_safe_globals([(Point, f"{__name__}.Point")])
    try:
        assert tp.load(io.BytesIO(data))[0].x == 3
    finally:
        tp.serialization.clear_safe_globals()
    assert tp.serialization.get_safe_globals() == []


def test_whole_module_refused_by_default_in_both_readers():
    data = saved(tp.nn.Linear(2, 2))
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        tp.load(io.BytesIO(data))
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        torch.load(io.BytesIO(data))
    torch_module = io.BytesIO()
    torch.save(torch.nn.Linear(2, 2), torch_module)
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL torch.nn.modules.linear.Linear"):
        tp.load(io.BytesIO(torch_module.getvalue()))


def test_numpy_arrays_are_refused_by_weights_only_as_in_torch():
    data = saved({"a": np.arange(3)})
    with pytest.raises(pickle.UnpicklingError, match="numpy"):
        tp.load(io.BytesIO(data))
    with pytest.raises(pickle.UnpicklingError, match="numpy"):
        torch.load(io.BytesIO(data))
    assert tp.load(io.BytesIO(data), weights_only=False)["a"].tolist() == [0, 1, 2]


class RunsCode:
    def __reduce__(self):
        import os
        return (os.system, ("echo pwned > /dev/null",))


class CallsEval:
    def __reduce__(self):
        return (eval, ("1 + 1",))


@pytest.mark.parametrize("payload,pattern", [
    (RunsCode(), "whose module (posix|os) is blocked"),
    (CallsEval(), "GLOBAL eval was not an allowed global"),
])
def test_code_running_pickles_are_refused(payload, pattern):
    data = saved({"x": payload})
    with pytest.raises(pickle.UnpicklingError, match=pattern):
        tp.load(io.BytesIO(data))
    with tp.serialization.safe_globals([__import__("os").system]):
        with pytest.raises(pickle.UnpicklingError, match="blocked|not an allowed"):
            tp.load(io.BytesIO(data))   # a blocked module stays blocked


def test_opcodes_outside_the_subset_are_refused():
    data = saved({"w": tp.ones(1)})
    import zipfile
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    members["archive/data.pkl"] = pickle.dumps({"w": 1}, protocol=4)   # FRAME, MEMOIZE
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)
    with pytest.raises(pickle.UnpicklingError, match="Unsupported operand"):
        tp.load(io.BytesIO(buf.getvalue()))
    assert tp.load(io.BytesIO(buf.getvalue()), weights_only=False) == {"w": 1}


def test_serialization_is_an_attribute_and_has_pytorchs_names():
    for name in ("save", "load", "add_safe_globals", "safe_globals", "get_safe_globals",
                 "clear_safe_globals", "DEFAULT_PROTOCOL"):
        assert hasattr(tp.serialization, name), name


def test_torch_saved_whole_module_loads_without_torch(tmp_path):
    """weights_only=False maps torch.nn.modules.<m>.<Class> to TensorPlay's class at the
    same path; the module's state (its __dict__) is PyTorch's layout, which TensorPlay's
    Module shares, so the loaded model runs."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    torch.save(net, tmp_path / "net.pt")
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    code = f"""
import sys
import numpy as np
import tensorplay as tp
model = tp.load({str(tmp_path / 'net.pt')!r}, weights_only=False)
assert 'torch' not in sys.modules
assert type(model) is tp.nn.Sequential and type(model[0]) is tp.nn.Linear
np.save({str(tmp_path / 'y.npy')!r}, model(tp.from_numpy(np.load({str(tmp_path / 'x.npy')!r})))
        .detach().numpy())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"),
                               net(torch.from_numpy(x)).detach().numpy(), rtol=1e-6, atol=1e-6)


PLAIN_VALUES = {
    "bytes": b"ab\x00", "complex": 1 + 2j, "set": {1, 2}, "frozenset": frozenset([1]),
    "counter": collections.Counter("aab"), "big": 2 ** 70, "negbig": -2 ** 40,
    "tuple": (1, (2, 3)), "str": "h\u00e9llo", "bytearray": bytearray(b"x"),
    "range": range(3), "slice": slice(1, 2), "layout": tp.strided,
    "ordered": collections.OrderedDict(a=1), "intkeys": {i: -i for i in range(300)},
}


@pytest.mark.parametrize("key", list(PLAIN_VALUES))
def test_allow_list_agrees_with_torchs(key):
    """What torch.load(weights_only=True) accepts from a TensorPlay file, tp.load accepts
    (equal values), and what it refuses, tp.load refuses."""
    data = saved({key: PLAIN_VALUES[key]})
    try:
        expected = torch.load(io.BytesIO(data))[key]
    except pickle.UnpicklingError:
        with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
            tp.load(io.BytesIO(data))
        return
    got = tp.load(io.BytesIO(data))[key]
    assert repr(got).replace("tensorplay", "torch") == repr(expected)
