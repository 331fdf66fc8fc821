"""PyTorch's checkpoint format both ways: what torch.save writes (zip and legacy) loads in
TensorPlay, and what tp.save writes loads in torch.load (weights_only=True too), each in
a subprocess that never imports the other library; dtypes, views sharing a storage,
0-dim, empty and non-contiguous tensors, Parameters, map_location, mmap, corrupt files."""
import io
import json
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import DeviceError, SerializationError

PAIRS = [(tp.bool, torch.bool), (tp.uint8, torch.uint8), (tp.int8, torch.int8),
         (tp.int16, torch.int16), (tp.int32, torch.int32), (tp.int64, torch.int64),
         (tp.float16, torch.float16), (tp.bfloat16, torch.bfloat16),
         (tp.float32, torch.float32), (tp.float64, torch.float64),
         (tp.complex64, torch.complex64), (tp.complex128, torch.complex128)]


def run_python(code, *args):
    """Run `code` in a fresh interpreter (from the repository root, so it imports this
    worktree's tensorplay) and return its stdout."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def torch_sample(dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype is torch.bool:
        return torch.rand(3, 4, generator=g) < 0.5
    if dtype.is_complex:
        return torch.randn(3, 4, dtype=dtype, generator=g) * 10
    if dtype.is_floating_point:
        return (torch.randn(3, 4, generator=g) * 100).to(dtype)
    return torch.randint(0, 100, (3, 4), generator=g).to(dtype)


def raw_bytes(a):
    a = np.ascontiguousarray(a).reshape(-1)
    return a.view(np.uint8).tobytes()


# ---- PyTorch -> TensorPlay ------------------------------------------------------------
LOAD_IN_TENSORPLAY = """
    import json, sys
    import tensorplay as tp
    kwargs = json.loads(sys.argv[2])
    got = tp.load(sys.argv[1], **kwargs)
    assert 'torch' not in sys.modules, 'tensorplay imported torch'
    out = {}
    for k, t in got.items():
        if isinstance(t, tp.Tensor):
            a = t.detach().numpy()
            out[k] = {"dtype": t.dtype.name, "shape": list(t.shape), "stride": list(t.stride()),
                      "offset": t.storage_offset(), "type": type(t).__name__,
                      "requires_grad": t.requires_grad, "device": str(t.device),
                      "bytes": a.reshape(-1).copy().view('uint8').tobytes().hex()}
        else:
            out[k] = repr(t)
    storages = {k: id(t.untyped_storage()) for k, t in got.items() if isinstance(t, tp.Tensor)}
    out["_shared"] = storages.get("base") == storages.get("view") == storages.get("row")
    print(json.dumps(out))
"""


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_torch_saved_state_loads_without_torch(tmp_path, legacy):
    base = torch.arange(24.0).reshape(4, 6)
    state = {tp_dtype.name: torch_sample(torch_dtype, i)
             for i, (tp_dtype, torch_dtype) in enumerate(PAIRS)}
    state.update(base=base, view=base.t(), row=base[2, 1::2], zero_d=torch.tensor(2.5),
                 empty=torch.empty(0, 3), param=torch.nn.Parameter(torch.ones(2)),
                 size=torch.Size([2, 3]), dtype=torch.bfloat16)
    path = tmp_path / "state.pt"
    torch.save(state, path, _use_new_zipfile_serialization=not legacy)
    got = json.loads(run_python(LOAD_IN_TENSORPLAY, path, "{}"))
    for key, value in state.items():
        if not isinstance(value, torch.Tensor):
            continue
        entry = got[key]
        assert entry["dtype"] == str(value.dtype).replace("torch.", ""), key
        assert entry["shape"] == list(value.shape) and entry["stride"] == list(value.stride())
        assert entry["offset"] == value.storage_offset()
        assert entry["type"] == ("Parameter" if key == "param" else "Tensor")
        assert entry["requires_grad"] == value.requires_grad
        expected = value.detach().contiguous()
        if value.dtype is torch.bfloat16:
            expected = expected.view(torch.int16)
        assert bytes.fromhex(entry["bytes"]) == raw_bytes(expected.numpy()), key
    assert got["_shared"] is True         # three views of one storage stay one storage
    assert got["size"] == "tensorplay.Size([2, 3])" and got["dtype"] == "tensorplay.bfloat16"


def test_torch_module_state_dict_gives_torch_outputs(tmp_path):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    torch.save(net.state_dict(), tmp_path / "net.pth")
    model = tp.nn.Sequential(tp.nn.Linear(4, 8), tp.nn.Tanh(), tp.nn.Linear(8, 3))
    state = tp.load(tmp_path / "net.pth")
    assert list(state) == list(net.state_dict())
    model.load_state_dict(state)
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    np.testing.assert_allclose(model(tp.from_numpy(x)).detach().numpy(),
                               net(torch.from_numpy(x)).detach().numpy(), rtol=1e-6, atol=1e-6)


def test_map_location_forms_and_mmap(tmp_path):
    torch.save({"w": torch.arange(6.0).reshape(2, 3), "v": torch.arange(3)}, tmp_path / "a.pt")
    path = tmp_path / "a.pt"
    for location in ("cpu", tp.device("cpu"), {"cpu": "cpu"}, lambda storage, loc: storage,
                     lambda storage, loc: None, lambda storage, loc: storage.cpu()):
        got = tp.load(path, map_location=location)
        assert got["w"].tolist() == [[0, 1, 2], [3, 4, 5]] and got["w"].device == tp.device("cpu")
    seen = []
    tp.load(path, map_location=lambda storage, loc: seen.append(loc))
    assert seen == ["cpu", "cpu"]
    meta = tp.load(path, map_location="meta")
    assert meta["w"].device == tp.device("meta") and meta["w"].shape == (2, 3)
    mapped = tp.load(path, mmap=True)
    assert isinstance(mapped["w"].untyped_storage().data.base, np.memmap)
    assert mapped["w"].tolist() == [[0, 1, 2], [3, 4, 5]] and mapped["v"].tolist() == [0, 1, 2]
    mapped["w"].add_(1)                    # copy-on-write: the file keeps its bytes
    assert tp.load(path)["w"].tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="mmap"):
        tp.load(io.BytesIO(path.read_bytes()), mmap=True)
    with pytest.raises(TypeError, match="map_location"):
        tp.load(path, map_location=42)


def test_map_location_onto_cuda(tmp_path):
    pytest.importorskip("triton")
    if not (tp.cuda.is_available() or tp.cuda.is_interpreted()):
        pytest.skip("no GPU and no Triton interpreter")
    torch.save({"w": torch.arange(6.0).reshape(2, 3), "v": torch.arange(3)}, tmp_path / "a.pt")
    for location in ("cuda", {"cpu": "cuda:0"}, lambda storage, loc: storage.cuda(0)):
        got = tp.load(tmp_path / "a.pt", map_location=location)
        assert got["w"].device == tp.device("cuda") and got["v"].device == tp.device("cuda")
        assert got["w"].tolist() == [[0, 1, 2], [3, 4, 5]] and got["v"].tolist() == [0, 1, 2]
    # saved from cuda: the location says so, and map_location brings it back to the CPU
    tp.save({"w": got["w"]}, tmp_path / "b.pt")
    assert torch.load(tmp_path / "b.pt", map_location="cpu")["w"].tolist() == \
        [[0, 1, 2], [3, 4, 5]]
    assert tp.load(tmp_path / "b.pt")["w"].device == tp.device("cuda")
    assert tp.load(tmp_path / "b.pt", map_location="cpu")["w"].device == tp.device("cpu")


def test_location_tensorplay_lacks_names_the_way_out(tmp_path):
    data = io.BytesIO()
    torch.save({"w": torch.ones(2)}, data)
    # rewrite the location inside data.pkl: a checkpoint from a Mac's GPU
    with zipfile.ZipFile(io.BytesIO(data.getvalue())) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    pkl = next(n for n in members if n.endswith("data.pkl"))
    members[pkl] = members[pkl].replace(b"X\x03\x00\x00\x00cpu", b"X\x03\x00\x00\x00mps")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)
    with pytest.raises(DeviceError, match="'mps'.*map_location='cpu'"):
        tp.load(io.BytesIO(buf.getvalue()))
    assert tp.load(io.BytesIO(buf.getvalue()), map_location="cpu")["w"].tolist() == [1.0, 1.0]


def test_dtype_tensorplay_lacks_is_named(tmp_path):
    torch.save({"u": torch.zeros(3, dtype=torch.uint16)}, tmp_path / "u.pt")
    with pytest.raises(SerializationError, match="torch.uint16, which TensorPlay does not"):
        tp.load(tmp_path / "u.pt")


# ---- TensorPlay -> PyTorch ------------------------------------------------------------
LOAD_IN_TORCH = """
    import json, sys
    import torch
    got = torch.load(sys.argv[1], weights_only=True)
    assert 'tensorplay' not in sys.modules
    out = {}
    for k, t in got.items():
        if isinstance(t, torch.Tensor):
            c = t.detach().contiguous()
            if c.dtype is torch.bfloat16:
                c = c.view(torch.int16)
            out[k] = {"dtype": str(t.dtype), "shape": list(t.shape), "stride": list(t.stride()),
                      "offset": t.storage_offset(), "type": type(t).__name__,
                      "requires_grad": t.requires_grad,
                      "bytes": c.numpy().reshape(-1).view('uint8').tobytes().hex()}
        else:
            out[k] = repr(t)
    ptrs = {k: got[k].untyped_storage().data_ptr() for k in ("base", "view", "row")}
    out["_shared"] = len(set(ptrs.values())) == 1
    print(json.dumps(out))
"""


def tp_sample(dtype, seed):
    return tp.from_numpy(torch_sample(dict(PAIRS)[dtype], seed).numpy()
                         if dtype is not tp.bfloat16 else
                         torch_sample(torch.bfloat16, seed).view(torch.int16).numpy()
                         .view(tp.bfloat16.np))


def test_tensorplay_saved_state_loads_in_torch_without_tensorplay(tmp_path):
    base = tp.arange(24.0).reshape(4, 6)
    state = {d.name: tp_sample(d, i) for i, (d, _) in enumerate(PAIRS)}
    state.update(base=base, view=base.t(), row=base[2, 1::2], zero_d=tp.tensor(2.5),
                 empty=tp.empty(0, 3), param=tp.nn.Parameter(tp.ones(2)),
                 size=tp.Size([2, 3]), dtype=tp.bfloat16, device=tp.device("cpu"),
                 nested=[{"lr": 0.1, "betas": (0.9, 0.99)}])
    path = tmp_path / "state.pt"
    tp.save(state, path)
    got = json.loads(run_python(LOAD_IN_TORCH, path))
    for key, value in state.items():
        if not isinstance(value, tp.Tensor):
            continue
        entry = got[key]
        assert entry["dtype"] == f"torch.{value.dtype.name}", key
        assert entry["shape"] == list(value.shape) and entry["stride"] == list(value.stride())
        assert entry["offset"] == value.storage_offset()
        assert entry["type"] == ("Parameter" if key == "param" else "Tensor")
        assert entry["requires_grad"] == value.requires_grad
        assert bytes.fromhex(entry["bytes"]) == raw_bytes(value.detach().numpy()), key
    assert got["_shared"] is True
    assert got["size"] == "torch.Size([2, 3])" and got["dtype"] == "torch.bfloat16"
    assert got["device"] == "device(type='cpu')"
    assert got["nested"] == "[{'lr': 0.1, 'betas': (0.9, 0.99)}]"


def test_tensorplay_module_state_dict_gives_tensorplay_outputs_in_torch(tmp_path):
    tp.manual_seed(0)
    model = tp.nn.Sequential(tp.nn.Linear(4, 8), tp.nn.Tanh(), tp.nn.Linear(8, 3))
    tp.save(model.state_dict(), tmp_path / "model.pt")
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    net.load_state_dict(torch.load(tmp_path / "model.pt"))
    x = np.random.default_rng(1).normal(size=(5, 4)).astype(np.float32)
    np.testing.assert_allclose(net(torch.from_numpy(x)).detach().numpy(),
                               model(tp.from_numpy(x)).detach().numpy(), rtol=1e-6, atol=1e-6)


def test_written_archive_is_aligned_and_has_torchs_records(tmp_path):
    tp.save({"a": tp.ones(3), "b": tp.arange(5)}, tmp_path / "x.pt")
    with zipfile.ZipFile(tmp_path / "x.pt") as zf:
        names = zf.namelist()
        assert names == ["archive/data.pkl", "archive/.format_version",
                         "archive/.storage_alignment", "archive/byteorder", "archive/data/0",
                         "archive/data/1", "archive/version", "archive/.data/serialization_id"]
        assert zf.read("archive/byteorder") == sys.byteorder.encode()
        raw = (tmp_path / "x.pt").read_bytes()
        for name in ("archive/data/0", "archive/data/1"):
            info = zf.getinfo(name)
            start = info.header_offset + 30 + int.from_bytes(
                raw[info.header_offset + 26:info.header_offset + 28], "little") + \
                int.from_bytes(raw[info.header_offset + 28:info.header_offset + 30], "little")
            assert start % 64 == 0 and raw[start:start + info.file_size] == zf.read(name)


def test_legacy_format_both_ways(tmp_path):
    state = {"w": tp.arange(6.0).reshape(2, 3), "i": tp.arange(4, dtype=tp.int16)}
    state["t"] = state["w"].t()
    tp.save(state, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    assert not zipfile.is_zipfile(tmp_path / "old.pt")
    got = torch.load(tmp_path / "old.pt")
    assert got["t"].tolist() == [[0, 3], [1, 4], [2, 5]] and got["i"].dtype is torch.int16
    back = tp.load(tmp_path / "old.pt")
    assert back["t"].tolist() == [[0, 3], [1, 4], [2, 5]]
    assert back["t"].untyped_storage() is back["w"].untyped_storage()
    with pytest.raises(RuntimeError, match="mmap"):
        tp.load(tmp_path / "old.pt", mmap=True)


def test_two_dtypes_over_one_storage_are_refused_as_torch_does():
    z = tp.zeros(2, dtype=tp.complex64)
    with pytest.raises(RuntimeError, match="view the same data as different types"):
        tp.save([z, tp.view_as_real(z)], io.BytesIO())
    with pytest.raises(RuntimeError, match="view the same data as different types"):
        tz = torch.zeros(2, dtype=torch.complex64)
        torch.save([tz, torch.view_as_real(tz)], io.BytesIO())


# ---- corrupt PyTorch files ------------------------------------------------------------
def torch_bytes(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def rewrite(data, edit):
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    edit(members)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)
    return buf.getvalue()


def drop(suffix):
    def edit(members):
        del members[next(n for n in members if n.endswith(suffix))]
    return edit


def shorten(members):
    name = next(n for n in members if n.endswith("data/0"))
    members[name] = members[name][:-4]


def tar_bytes():
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("storages")
        info.size = 4
        tar.addfile(info, io.BytesIO(b"\x80\x02K\x00"))
    return buf.getvalue()


def legacy_bytes(obj):
    buf = io.BytesIO()
    torch.save(obj, buf, _use_new_zipfile_serialization=False)
    return buf.getvalue()


BAD_TORCH_FILES = {   # kind: (the file's bytes, what the message says)
    "tar_format": (tar_bytes, "tar archive: PyTorch's format before 0.4"),
    "missing_storage": (lambda: rewrite(torch_bytes({"w": torch.ones(4)}), drop("data/0")),
                        "'archive/data/0' is missing|data/0' is missing"),
    "short_storage": (lambda: rewrite(torch_bytes({"w": torch.ones(4)}), shorten),
                      "holds 12 bytes, the pickle says 16"),
    "truncated_legacy": (lambda: legacy_bytes(torch.ones(4))[:-8], "ends early"),
    "torchscript": (lambda: rewrite(torch_bytes({"w": torch.ones(1)}),
                                    lambda m: m.update({"archive/constants.pkl": b""})),
                    "TorchScript"),
}


@pytest.mark.parametrize("kind", list(BAD_TORCH_FILES))
def test_bad_torch_files_raise_serialization_error(kind, tmp_path):
    path = tmp_path / f"{kind}.pt"
    make, says = BAD_TORCH_FILES[kind]
    path.write_bytes(make())
    with pytest.raises(SerializationError,
                       match=f"{kind}\\.pt.* is not a valid TensorPlay file: .*({says})"):
        tp.load(path)


def test_big_endian_checkpoint_is_byteswapped():
    values = torch.tensor([1.5, -2.0, 3.25], dtype=torch.float64)
    halves = torch.tensor([1.0, 2.0], dtype=torch.bfloat16)

    def to_big(members):
        for name in list(members):
            if name.endswith("byteorder"):
                members[name] = b"big"
            elif name.endswith("data/0"):
                members[name] = values.numpy().astype(">f8").tobytes()
            elif name.endswith("data/1"):
                members[name] = halves.view(torch.int16).numpy().astype(">i2").tobytes()
    got = tp.load(io.BytesIO(rewrite(torch_bytes({"v": values, "h": halves}), to_big)))
    assert got["v"].tolist() == [1.5, -2.0, 3.25] and got["h"].tolist() == [1.0, 2.0]


class WriteOnly(io.RawIOBase):
    """A stream that can neither seek nor tell (a pipe, a socket)."""

    def __init__(self):
        self.chunks = []

    def writable(self):
        return True

    def write(self, b):
        self.chunks.append(bytes(b))
        return len(b)


def test_save_to_unseekable_stream_and_torch_mmap(tmp_path):
    stream = WriteOnly()
    tp.save({"w": tp.arange(4.0)}, stream)
    path = tmp_path / "s.pt"
    path.write_bytes(b"".join(stream.chunks))
    assert torch.load(path, mmap=True)["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    tp.save({"w": tp.arange(4.0)}, path, _disable_byteorder_record=True)
    with zipfile.ZipFile(path) as zf:
        assert not any(n.endswith("byteorder") for n in zf.namelist())
    assert torch.load(path)["w"].tolist() == tp.load(path)["w"].tolist() == [0, 1, 2, 3]


def adam_steps(model, opt, x, n):
    for _ in range(n):
        opt.zero_grad()
        model(x).pow(2).sum().backward()
        opt.step()


def test_training_checkpoint_resumes_across_libraries():
    """Model + Adam state saved after 3 steps by one library, resumed for 2 more by the
    other: the weights match the run that never stopped."""
    tp.manual_seed(0)
    model = tp.nn.Linear(3, 2)
    opt = tp.optim.Adam(model.parameters(), lr=0.1)
    x = tp.randn(4, 3)
    adam_steps(model, opt, x, 3)
    buf = io.BytesIO()
    tp.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, buf)
    ckpt = torch.load(io.BytesIO(buf.getvalue()))
    tmodel = torch.nn.Linear(3, 2)
    tmodel.load_state_dict(ckpt["model"])
    topt = torch.optim.Adam(tmodel.parameters(), lr=0.1)
    topt.load_state_dict(ckpt["optimizer"])
    tx = torch.from_numpy(x.numpy())
    adam_steps(model, opt, x, 2)
    adam_steps(tmodel, topt, tx, 2)
    np.testing.assert_allclose(tmodel.weight.detach().numpy(), model.weight.detach().numpy(),
                               rtol=1e-6, atol=1e-7)
    # and back: PyTorch's checkpoint resumes in TensorPlay
    tbuf = io.BytesIO()
    torch.save({"model": tmodel.state_dict(), "optimizer": topt.state_dict()}, tbuf)
    back = tp.load(io.BytesIO(tbuf.getvalue()))
    model2 = tp.nn.Linear(3, 2)
    model2.load_state_dict(back["model"])
    opt2 = tp.optim.Adam(model2.parameters(), lr=0.1)
    opt2.load_state_dict(back["optimizer"])
    adam_steps(model2, opt2, x, 2)
    adam_steps(tmodel, topt, tx, 2)
    np.testing.assert_allclose(model2.weight.detach().numpy(), tmodel.weight.detach().numpy(),
                               rtol=1e-6, atol=1e-7)


def test_sparse_coo_tensors_cross_both_ways():
    s = tp.sparse_coo_tensor(tp.tensor([[0, 1], [1, 0]]), tp.tensor([1.0, 2.0]), (2, 3))
    buf = io.BytesIO()
    tp.save({"s": s}, buf)
    got = torch.load(io.BytesIO(buf.getvalue()))["s"]
    assert got.layout is torch.sparse_coo and got.to_dense().tolist() == s.to_dense().tolist()
    assert tp.load(io.BytesIO(buf.getvalue()))["s"].to_dense().tolist() == \
        s.to_dense().tolist()
    tbuf = io.BytesIO()
    ts = torch.sparse_coo_tensor([[0, 1], [1, 0]], [3.0, 4.0], (2, 2)).coalesce()
    torch.save({"s": ts}, tbuf)
    back = tp.load(io.BytesIO(tbuf.getvalue()))["s"]
    assert back.layout is tp.sparse_coo and back.is_coalesced()
    assert back.to_dense().tolist() == ts.to_dense().tolist()
