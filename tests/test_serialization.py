"""tp.save / tp.load: round trips (every dtype, views, modules, nested containers) in both
formats (PyTorch's, the default, and TensorPlay's JSON one), file objects, corrupt files,
what the JSON format refuses, and a torch state dict loaded through NumPy. PyTorch's
format against torch itself: test_serialization_torch_format.py; whole objects and the
weights-only allow-list: test_serialization_objects.py."""
import collections
import io
import json
import pathlib
import zipfile

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay._dtype import ALL_DTYPES
from tensorplay.errors import SerializationError, TensorPlayError


FORMATS = ("torch", "tensorplay")


def roundtrip(obj, fmt="torch", **load_kw):
    buf = io.BytesIO()
    tp.save(obj, buf, format=fmt)
    buf.seek(0)
    return tp.load(buf, **load_kw)


def values(t):
    a = np.array(t.detach().cpu())
    return a.view(np.uint16) if t.dtype is tp.bfloat16 else a


def assert_same_tensor(got, expected):
    assert type(got) is type(expected)
    assert got.dtype is expected.dtype and got.shape == expected.shape
    assert got.stride() == expected.stride()
    assert got.storage_offset() == expected.storage_offset()
    assert got.requires_grad == expected.requires_grad and got.device == expected.device
    np.testing.assert_array_equal(values(got), values(expected))


def sample(dtype, shape=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    if dtype is tp.bool:
        return tp.from_numpy(rng.random(shape) < 0.5)
    if dtype.is_floating_point:
        return tp.tensor(rng.normal(size=shape) * 100, dtype=dtype)
    return tp.tensor(rng.integers(0, 100, shape), dtype=dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_dtype_round_trips_bit_exactly(dtype, fmt):
    t = sample(dtype)
    got = roundtrip({"t": t, "d": dtype}, fmt)
    assert got["d"] is dtype
    assert_same_tensor(got["t"], t)


@pytest.mark.parametrize("fmt", FORMATS)
def test_special_floats_and_zero_d_and_empty(fmt):
    special = tp.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 1e-45])
    zero_d = tp.tensor(3.5, dtype=tp.float64)
    empty = tp.empty(0, 3)
    empty_view = tp.zeros(4, 0).t()
    got = roundtrip([special, zero_d, empty, empty_view, float("nan"), -float("inf")], fmt)
    np.testing.assert_array_equal(values(got[0]), values(special))
    assert np.signbit(values(got[0])[3])
    assert_same_tensor(got[1], zero_d)
    assert got[1].item() == 3.5 and got[1].shape == ()
    assert_same_tensor(got[2], empty)
    assert_same_tensor(got[3], empty_view)
    assert np.isnan(got[4]) and got[5] == -float("inf")


@pytest.mark.parametrize("fmt", FORMATS)
def test_views_come_back_as_views_of_one_storage(fmt):
    base = tp.arange(24.0).reshape(4, 6)
    views = {"base": base, "t": base.t(), "step": base[1:, ::2], "row": base[2],
             "expand": base[0, :3].unsqueeze(0).expand(5, 3), "flat": base.view(-1)[5:9]}
    got = roundtrip(views, fmt)
    for k in views:
        assert_same_tensor(got[k], views[k])
    storage = got["base"].untyped_storage()
    assert all(got[k].untyped_storage() is storage for k in views)
    got["base"][2, 4] = -1.0          # a write through the base shows in every view
    assert got["row"][4].item() == -1.0 and got["t"][4, 2].item() == -1.0
    assert got["step"][1, 2].item() == -1.0
    assert got["base"]._version == got["row"]._version   # one version counter per storage
    # a lone view keeps its strides and offset; the whole storage is saved with it
    lone = roundtrip(base[1:3, 2:5], fmt)
    assert lone.storage_offset() == 8 and lone.stride() == (6, 1)
    assert lone.tolist() == base[1:3, 2:5].tolist()


@pytest.mark.parametrize("fmt", FORMATS)
def test_identity_and_two_storages_stay_apart(fmt):
    a, b = tp.ones(3), tp.ones(3)
    got = roundtrip({"a": a, "again": a, "b": b}, fmt)
    assert got["a"] is got["again"]
    assert got["a"].untyped_storage() is not got["b"].untyped_storage()


@pytest.mark.parametrize("fmt", FORMATS)
def test_requires_grad_and_parameters(fmt):
    leaf = tp.randn(2, 3, requires_grad=True)
    leaf.sum().backward()                  # .grad is not saved, as in PyTorch
    nonleaf = leaf * 2
    p = tp.nn.Parameter(tp.randn(3))
    frozen = tp.nn.Parameter(tp.randn(3), requires_grad=False)
    got = roundtrip([leaf, nonleaf, p, frozen, tp.arange(3)], fmt)
    assert got[0].requires_grad and got[0].is_leaf and got[0].grad is None
    assert got[1].requires_grad and got[1].is_leaf
    assert type(got[2]) is tp.nn.Parameter and got[2].requires_grad
    assert type(got[3]) is tp.nn.Parameter and not got[3].requires_grad
    assert type(got[4]) is tp.Tensor and not got[4].requires_grad
    (got[0] * got[2][:1]).sum().backward()   # loaded leaves take part in autograd
    np.testing.assert_allclose(values(got[0].grad), np.full((2, 3), values(p)[0]))


def test_module_state_dict_into_fresh_module(tmp_path):
    tp.manual_seed(0)
    src = tp.nn.Linear(5, 3)
    path = tmp_path / "linear.tp"
    tp.save(src.state_dict(), path)
    state = tp.load(path)
    assert type(state) is collections.OrderedDict and list(state) == ["weight", "bias"]
    dst = tp.nn.Linear(5, 3)
    dst.load_state_dict(state)
    x = tp.randn(4, 5)
    np.testing.assert_array_equal(values(dst(x).detach()), values(src(x).detach()))


@pytest.mark.parametrize("fmt", FORMATS)
def test_optimizer_like_nested_dict(fmt):
    state = {
        "state": {0: {"step": 3, "exp_avg": tp.zeros(2), "exp_avg_sq": tp.ones(2)},
                  1: {"step": 3, "momentum_buffer": None}},
        "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0,
                          "amsgrad": False, "params": [0, 1], "name": "g0",
                          "maximize": None}],
        "shape": tp.Size([2, 3]), "dtype": tp.float16, "device": tp.device("cpu"),
        "big": 2 ** 70, "neg": -7, "empty": {}, "tuple": (), "nested": [[[]]],
        "ordered": collections.OrderedDict([("z", 1), ("a", 2)]),
    }
    got = roundtrip(state, fmt)
    assert list(got) == list(state) and list(got["state"]) == [0, 1]
    assert got["state"][0]["step"] == 3 and got["state"][1]["momentum_buffer"] is None
    group = got["param_groups"][0]
    assert group == state["param_groups"][0]
    assert type(group["betas"]) is tuple and type(group["lr"]) is float
    assert type(group["weight_decay"]) is int and group["amsgrad"] is False
    assert type(got["shape"]) is tp.Size and got["shape"] == (2, 3)
    assert got["dtype"] is tp.float16 and got["device"] == tp.device("cpu")
    assert got["big"] == 2 ** 70 and got["empty"] == {} and got["tuple"] == ()
    assert got["nested"] == [[[]]]
    assert type(got["ordered"]) is collections.OrderedDict and list(got["ordered"]) == ["z", "a"]
    assert got["state"][0]["exp_avg_sq"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("fmt", FORMATS)
def test_numpy_arrays_and_scalars(fmt):
    """The JSON format stores NumPy arrays without pickle; PyTorch's format pickles them,
    which a weights-only load refuses (as torch.load does), so they load with
    weights_only=False (test_serialization_objects.py checks the refusal)."""
    obj = {"a": np.arange(6, dtype=np.int16).reshape(2, 3).T, "s": np.float32(2.5),
           "b": np.bool_(True), "bf": np.ones(2, dtype=tp.bfloat16.np)}
    got = roundtrip(obj, fmt, weights_only=fmt == "tensorplay")
    np.testing.assert_array_equal(got["a"], obj["a"])
    assert got["a"].dtype == np.int16
    assert type(got["s"]) is np.float32 and got["s"] == 2.5
    assert type(got["b"]) is np.bool_ and got["b"]
    assert got["bf"].dtype == tp.bfloat16.np and got["bf"].tolist() == [1.0, 1.0]


def test_paths_and_file_objects(tmp_path):
    t = tp.arange(5)
    tp.save(t, str(tmp_path / "a.tp"))
    assert tp.load(str(tmp_path / "a.tp")).tolist() == list(range(5))
    tp.save(t, pathlib.Path(tmp_path / "b.tp"))
    with open(tmp_path / "b.tp", "rb") as f:
        assert tp.load(f).tolist() == list(range(5))
    with open(tmp_path / "c.tp", "wb") as f:
        tp.save([t], f)
    assert tp.load(tmp_path / "c.tp")[0].tolist() == list(range(5))

    class Stream(io.RawIOBase):   # neither seekable nor telling its position
        def __init__(self, data):
            self.data = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self.data.readinto(b)

    buf = io.BytesIO()
    tp.save(t, buf)
    assert tp.load(Stream(buf.getvalue())).tolist() == list(range(5))
    with pytest.raises(TypeError, match="argument 'f' must be a path or a binary file"):
        tp.save(t, 3)
    with pytest.raises(TypeError, match="argument 'f' must be a path or a binary file"):
        tp.load(3.0)
    with pytest.raises(FileNotFoundError):
        tp.load(tmp_path / "missing.tp")
    with pytest.raises(TypeError, match="map_location"):
        tp.load(tmp_path / "c.tp", map_location=42)


def test_file_is_a_plain_zip_with_json_and_npy(tmp_path):
    path = tmp_path / "x.tp"
    tp.save({"w": tp.ones(2, 2)}, path, format="tensorplay")
    with zipfile.ZipFile(path) as zf:
        assert sorted(zf.namelist()) == ["storages/0.npy", "tensorplay.json"]
        header = json.loads(zf.read("tensorplay.json"))
        with zf.open("storages/0.npy") as f:
            raw = np.lib.format.read_array(f, allow_pickle=False)
    assert header["format"] == "tensorplay" and header["version"] == 1
    assert header["tensors"][0]["shape"] == [2, 2] and raw.dtype == np.uint8 and raw.size == 16


# ---- bad files (the JSON format's; PyTorch's: test_serialization_torch_format.py) ----
def saved_bytes(obj):
    buf = io.BytesIO()
    tp.save(obj, buf, format="tensorplay")
    return buf.getvalue()


def zip_bytes(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def header_of(obj):
    with zipfile.ZipFile(io.BytesIO(saved_bytes(obj))) as zf:
        return json.loads(zf.read("tensorplay.json")), {n: zf.read(n) for n in zf.namelist()}


def with_header(obj, edit):
    header, members = header_of(obj)
    edit(header)
    members["tensorplay.json"] = json.dumps(header)
    return zip_bytes(members)


def object_array_npy():
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    return buf.getvalue()


BAD_FILES = {
    "empty": lambda: b"",
    "random": lambda: bytes(range(256)) * 4,
    "truncated": lambda: saved_bytes(tp.arange(100.0))[:-40],
    "half": lambda: saved_bytes(tp.arange(100.0))[:300],
    "foreign_zip": lambda: zip_bytes({"data.pkl": b"\x80\x04."}),
    "not_json": lambda: zip_bytes({"tensorplay.json": b"{not json"}),
    "wrong_format": lambda: zip_bytes({"tensorplay.json": b'{"format": "other"}'}),
    "newer_version": lambda: with_header(tp.ones(1), lambda h: h.update(version=99)),
    "missing_storage": lambda: zip_bytes({"tensorplay.json":
                                          header_of(tp.ones(1))[1]["tensorplay.json"]}),
    "out_of_bounds": lambda: with_header(tp.ones(4), lambda h: h["tensors"][0].update(
        shape=[5])),
    "bad_tag": lambda: with_header([1], lambda h: h.update(root={"$": "pickle"})),
    "pickled_member": lambda: zip_bytes({
        "tensorplay.json": header_of(tp.ones(1))[1]["tensorplay.json"],
        "storages/0.npy": object_array_npy()}),
    "wrong_nbytes": lambda: with_header(tp.ones(4), lambda h: h["storages"][0].update(
        nbytes=8)),
}


@pytest.mark.parametrize("kind", list(BAD_FILES))
def test_bad_files_raise_serialization_error_naming_the_file(kind, tmp_path):
    data = BAD_FILES[kind]()
    path = tmp_path / f"{kind}.tp"
    path.write_bytes(data)
    with pytest.raises(SerializationError, match=f"load\\(\\): .*{kind}\\.tp.* is not a valid "
                                                 "TensorPlay file") as info:
        tp.load(path)
    assert isinstance(info.value, TensorPlayError)
    with pytest.raises(SerializationError, match="<BytesIO>"):
        tp.load(io.BytesIO(data))


def test_flipped_storage_byte_fails_the_crc(tmp_path):
    data = bytearray(saved_bytes(tp.full((64,), 1.5)))
    pos = data.find(np.float32(1.5).tobytes() * 4)
    data[pos + 2] ^= 0xFF
    with pytest.raises(SerializationError, match="storages/0.npy"):
        tp.load(io.BytesIO(bytes(data)))


# ---- what the JSON format refuses (PyTorch's format pickles all of these) -------------
class Custom:
    pass


@pytest.mark.parametrize("obj,where,what", [
    ({"x": [1, 2, {3}]}, r"obj\['x'\]\[2\]", "builtins.set"),
    ([Custom()], r"obj\[0\]", "Custom"),
    ({"state": (1, torch.ones(1))}, r"obj\['state'\]\[1\]", "torch.Tensor"),
    ({frozenset(): 1}, r"obj \(key frozenset\(\)\)", "frozenset"),
    (collections.defaultdict(int), "obj", "defaultdict"),
    ({"f": len}, r"obj\['f'\]", "builtin_function_or_method"),
    ({"s": np.array(["a"])}, r"obj\['s'\]", "dtype <U1"),
])
def test_unsupported_objects_name_type_and_path(obj, where, what):
    with pytest.raises(TypeError, match=f"{what}.* at {where}|at {where}.*{what}") as info:
        tp.save(obj, io.BytesIO(), format="tensorplay")
    assert where.replace("\\", "") in str(info.value)


def test_reference_cycle_is_refused():
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match=r"obj\[0\] contains itself"):
        tp.save(loop, io.BytesIO(), format="tensorplay")


# ---- devices --------------------------------------------------------------------------
def cuda_or_skip():
    pytest.importorskip("triton")
    if not (tp.cuda.is_available() or tp.cuda.is_interpreted()):
        pytest.skip("no GPU and no Triton interpreter")
    return tp.device("cuda")


@pytest.mark.parametrize("fmt", FORMATS)
def test_cuda_tensors_round_trip_and_map_location(fmt):
    cuda = cuda_or_skip()
    base = tp.arange(12.0, device=cuda).reshape(3, 4)
    obj = {"base": base, "view": base[:, 1:3], "p": tp.nn.Parameter(tp.ones(2, device=cuda))}
    got = roundtrip(obj, fmt)
    for k in obj:
        assert_same_tensor(got[k], obj[k])
    assert got["view"].untyped_storage() is got["base"].untyped_storage()
    for location in ("cpu", tp.device("cpu"), {"cuda:0": "cpu"}):
        cpu = roundtrip(obj, fmt, map_location=location)
        assert all(cpu[k].device == tp.device("cpu") for k in obj)
        assert cpu["view"].tolist() == base[:, 1:3].tolist() and type(cpu["p"]) is tp.nn.Parameter
        assert cpu["view"].untyped_storage() is cpu["base"].untyped_storage()
    back = roundtrip(tp.arange(3.0), fmt, map_location="cuda")
    assert back.device == cuda and back.tolist() == [0.0, 1.0, 2.0]


def test_meta_tensors_keep_shape_only():
    m = tp.empty(2, 3, device="meta")
    for fmt in FORMATS:
        got = roundtrip(m, fmt)
        assert got.device == tp.device("meta") and got.shape == (2, 3)
    # PyTorch's format saves a meta tensor with no storage, so map_location has nothing to
    # move and it stays on meta (as torch.load does); the JSON format's storage has no data
    assert roundtrip(m, "torch", map_location="cpu").device == tp.device("meta")
    with pytest.raises(SerializationError, match="no data"):
        roundtrip(m, "tensorplay", map_location="cpu")


# ---- from torch -----------------------------------------------------------------------
class Mlp(tp.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = tp.nn.Sequential(tp.nn.Linear(4, 8), tp.nn.Linear(8, 3))

    def forward(self, x):
        return self.layers[1](tp.relu(self.layers[0](x)))


def test_torch_state_dict_through_numpy_gives_torch_outputs(tmp_path):
    torch.manual_seed(0)
    net = torch.nn.Sequential()
    net.add_module("layers", torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(),
                                                 torch.nn.Linear(8, 3)))
    # torch's ReLU holds no state, so its slot 1 has no keys: renumber 2 -> 1
    state = {k.replace("layers.2", "layers.1"): v.numpy() for k, v in net.state_dict().items()}
    model = Mlp()
    model.load_state_dict(state)
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    expected = net(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(values(model(tp.from_numpy(x)).detach()), expected, rtol=1e-5,
                               atol=1e-6)
    # and through a file: the NumPy dict saves, loads, and loads into a fresh model
    tp.save(state, tmp_path / "from_torch.tp", format="tensorplay")   # NumPy: no pickle
    fresh = Mlp()
    fresh.load_state_dict(tp.load(tmp_path / "from_torch.tp"))
    np.testing.assert_allclose(values(fresh(tp.from_numpy(x)).detach()), expected, rtol=1e-5,
                               atol=1e-6)
    # a TensorPlay state dict saved and loaded into a fresh model gives the same outputs
    tp.save(model.state_dict(), tmp_path / "tp.tp")
    again = Mlp()
    again.load_state_dict(tp.load(tmp_path / "tp.tp"))
    np.testing.assert_array_equal(values(again(tp.from_numpy(x)).detach()),
                                  values(model(tp.from_numpy(x)).detach()))
