"""tp.distributed, DistributedDataParallel and DistributedSampler against PyTorch.

The multi-process tests start 2 and 3 CPU processes on loopback with gloo
(tests/distributed_workers.py runs them): one launch per world size runs every check,
and the tests below read its results. The rest runs in this process: the memory
handover, the errors before init, a group of one, the sampler's index lists, the
post-accumulate-grad hook.
"""
from __future__ import annotations

import datetime
import re
import signal

import numpy as np
import pytest
import torch

import tensorplay as tp
import distributed_workers as workers
from tensorplay.distributed import handover
from tensorplay.utils.data import DistributedSampler


def launch_suite(world):
    """{rank: results} of every_check_job on `world` ranks; with 3 ranks, rank 1 dies at
    the end (the killed-rank check), so only ranks 0 and 2 report."""
    results = workers.launch(workers.every_check_job, world)
    killed = {1: ("exited", -signal.SIGKILL)} if world == 3 else {}
    failures = {r: v for r, v in results.items() if v[0] != "ok" and killed.get(r) != v}
    assert not failures, "\n".join(f"rank {r}: {status}\n{text}"
                                    for r, (status, text) in failures.items())
    return {r: v for r, (status, v) in results.items() if status == "ok"}


@pytest.fixture(scope="module")
def two_ranks():
    return launch_suite(2)


@pytest.fixture(scope="module")
def three_ranks():
    return launch_suite(3)


@pytest.fixture(scope="module", params=[2, 3], ids=["2 ranks", "3 ranks"])
def suite(request):
    """(world, {rank: results}) for each world size."""
    world = request.param
    return world, request.getfixturevalue("two_ranks" if world == 2 else "three_ranks")


@pytest.fixture(scope="module")
def collectives(suite):
    world, results = suite
    return world, {r: v["collectives"] for r, v in results.items()}


@pytest.fixture(scope="module")
def ddp(suite):
    world, results = suite
    return world, {r: v["ddp"] for r, v in results.items()}


# ---- collectives ---------------------------------------------------------------------
def torch_inputs(world, dtype, shape=(3, 4)):
    return [torch.from_numpy(workers.rank_values(r, dtype, shape)) for r in range(world)]


REDUCERS = {
    "sum": lambda xs: sum(xs),
    "product": lambda xs: torch.stack(xs).prod(0),
    "max": lambda xs: torch.stack(xs).amax(0),
    "min": lambda xs: torch.stack(xs).amin(0),
    "avg": lambda xs: torch.stack(xs).mean(0),
}


@pytest.mark.parametrize("dtype", workers.DTYPES)
def test_all_reduce_matches_torch(collectives, dtype):
    world, results = collectives
    for name, reduce in REDUCERS.items():
        if name == "avg" and dtype == "int64":
            continue
        expected = reduce(torch_inputs(world, dtype)).numpy()
        for rank, out in results.items():
            got = out[f"all_reduce/{name}/{dtype}"]
            assert got.dtype == np.dtype(dtype), (name, rank)
            np.testing.assert_array_equal(got, expected, err_msg=f"{name} on rank {rank}")
            np.testing.assert_array_equal(out[f"all_reduce/async/{dtype}"],
                                          sum(torch_inputs(world, dtype)).numpy())


@pytest.mark.parametrize("dtype", workers.DTYPES)
def test_all_reduce_writes_non_contiguous_tensors_in_place(collectives, dtype):
    world, results = collectives
    total = sum(torch_inputs(world, dtype)).numpy()
    wide = [workers.rank_values(r, dtype, (3, 8)) for r in range(world)]
    for rank, out in results.items():
        np.testing.assert_array_equal(out[f"all_reduce/transposed/{dtype}"], total.T)
        strided = wide[rank].copy()
        strided[:, ::2] = sum(w[:, ::2] for w in wide)      # odd columns: untouched
        np.testing.assert_array_equal(out[f"all_reduce/strided/{dtype}"], strided)


@pytest.mark.parametrize("dtype", workers.DTYPES)
def test_broadcast_and_gathers_match_torch(collectives, dtype):
    world, results = collectives
    inputs = torch_inputs(world, dtype)
    big = torch_inputs(world, dtype, (world * 3, 4))
    for rank, out in results.items():
        np.testing.assert_array_equal(out[f"broadcast/{dtype}"], inputs[world - 1].numpy())
        np.testing.assert_array_equal(out[f"all_gather/{dtype}"], torch.stack(inputs).numpy())
        np.testing.assert_array_equal(out[f"all_gather_into_tensor/{dtype}"],
                                      torch.cat(inputs).numpy())
        np.testing.assert_array_equal(out[f"reduce_scatter_tensor/{dtype}"],
                                      sum(big).chunk(world)[rank].numpy())


# ---- the rest of torch.distributed, each beside torch.distributed's own on the same values
def assert_pairs(pairs, names):
    """Every expected name is there, and ours equals the other side for each."""
    assert names <= set(pairs), sorted(names - set(pairs))
    for name, (ours, theirs) in pairs.items():
        if isinstance(ours, list):
            assert len(ours) == len(theirs), name
            for a, b in zip(ours, theirs):
                np.testing.assert_array_equal(a, b, err_msg=name)
        else:
            assert np.asarray(ours).dtype == np.asarray(theirs).dtype, name
            np.testing.assert_array_equal(ours, theirs, err_msg=name)


def test_reduce_gather_scatter_all_to_all_match_torch(suite):
    world, results = suite
    for rank, out in results.items():
        names = {"work.result", "work.result/all_to_all"}
        for dtype in ("float32", "int64"):
            ops = [name for name in workers.reduce_ops(dtype)]
            names |= {f"all_reduce/{op}/{dtype}" for op in ops}
            if rank == world - 1:
                names |= {f"reduce/{op}/{dtype}" for op in ops}
            if rank == 0:
                names.add(f"reduce/group_dst/{dtype}")
            for mode in ("sync", "async"):
                names |= {f"{name}/{dtype}/{mode}" for name in (
                    "scatter", "reduce_scatter", "all_to_all", "all_to_all/shapes",
                    "all_to_all_single", "all_to_all_single/split")}
                if rank == world - 1:
                    names.add(f"gather/{dtype}/{mode}")
        assert_pairs(out["against_torch"], names)
    # the bitwise reductions are not vacuous: rank values differ in their bits
    band = results[0]["against_torch"]["all_reduce/band/int64"][0]
    values = [workers.rank_values(r, "int64") for r in range(world)]
    np.testing.assert_array_equal(band, np.bitwise_and.reduce(values))
    assert not np.array_equal(band, values[0])


def test_send_recv_isend_irecv_and_batches(suite):
    world, results = suite
    for rank, out in results.items():
        names = {"ring/send_recv", "ring/isend_irecv", "ring/batch_isend_irecv"}
        assert_pairs(out["point_to_point"], names | ({"any_source", "tags"} if rank == 0
                                                     else set()))
    before = workers.rank_values(world - 1, "float64")     # what rank 0 got in the ring
    np.testing.assert_array_equal(results[0]["point_to_point"]["ring/send_recv"][0], before)


def test_object_collectives_match_torch(suite):
    world, results = suite
    src = world - 1
    plain, obj = workers.plain, workers.rank_object
    everyone = plain([obj(r) for r in range(world)])
    for rank, out in results.items():
        out = out["objects"]
        for name, (ours, theirs) in out.items():
            assert ours == theirs, name
        assert out["broadcast_object_list"][0] == plain([obj(src), "text" * src, None])
        assert out["all_gather_object"][0] == everyone
        assert out["gather_object"][0] == (everyone if rank == 0 else None)
        assert out["scatter_object_list"][0] == plain([obj(100 + rank)])
        sent = plain([obj(0), {"to": src}, 0]) if rank == src else [None, None]
        assert out["send_recv_object_list"][0] == sent


def test_subgroup_ranks_collectives_and_non_members(suite):
    world, results = suite
    members = [world - 2, world - 1]
    for rank, out in results.items():
        out = out["subgroup"]
        assert out["members"] == members
        if rank not in members:
            rank_in, size, *returned, messages = out["outside"]
            assert (rank_in, size, returned) == (-1, -1, [None, None, None])
            assert len(messages) == 3 and all("not a member" in m for m in messages)
            assert out["marker"] is True
            continue
        assert out["ranks"] == (members.index(rank), 2, members, 1, world - 2)
        pairs = {k: v for k, v in out.items()
                 if k in ("all_reduce", "broadcast/group_src", "broadcast/src", "gather")}
        assert_pairs(pairs, {"all_reduce", "broadcast/group_src", "broadcast/src"}
                     | ({"gather"} if rank == world - 1 else set()))
        total = sum(workers.rank_values(r, "float32") for r in members)
        np.testing.assert_array_equal(out["all_reduce"][0], total)
        np.testing.assert_array_equal(out["broadcast/src"][0],
                                      workers.rank_values(world - 2, "float32"))
        assert out["all_gather_object"] == [{"rank": r} for r in members]
        kind, message = out["src outside"]
        assert kind == "RankError" and "broadcast(" in message and "'src'" in message


def test_a_group_timeout_ends_a_collective_a_rank_never_joins(two_ranks):
    kind, message, seconds = two_ranks[0]["subgroup"]["timeout"]
    assert kind == "CollectiveError", message
    assert "all_reduce()" in message and "timeout (0:00:01)" in message
    assert 0.9 < seconds < 10
    assert "timeout" not in two_ranks[1]["subgroup"]


def test_bad_arguments_raise_typed_errors_naming_op_and_argument(suite):
    world, results = suite
    for rank, out in results.items():
        errors = out["argument_errors"]
        for case, (_, kind, op, arg) in workers.ARGUMENT_ERRORS.items():
            assert errors[case] is not None, f"{case}: nothing raised on rank {rank}"
            got, message = errors[case]
            assert got == kind, (case, message)
            assert message.startswith(f"{op}(") and f"'{arg}'" in message, (case, message)


def test_rank_world_size_and_typed_errors(collectives):
    world, results = collectives
    for rank, out in results.items():
        assert (out["rank"], out["world"]) == (rank, world)
        assert out["errors"] == {
            "meta tensor": "DeviceError",
            "src out of range": "RankError",
            "short tensor_list": "ArgumentError",
            "wrong output size": "ShapeError",
            "not a tensor": "ArgumentError",
            "second init": "ArgumentError",
        }


def test_collectives_before_init_raise_a_typed_error():
    dist = tp.distributed
    assert not dist.is_initialized()
    for call in (lambda: dist.all_reduce(tp.ones(2)), lambda: dist.get_rank(),
                 lambda: dist.barrier(), lambda: tp.nn.parallel.DistributedDataParallel(
                     tp.nn.Linear(2, 2)),
                 lambda: dist.reduce(tp.ones(2), dst=0), lambda: dist.send(tp.ones(2), 1),
                 lambda: dist.all_to_all_single(tp.ones(2), tp.ones(2)),
                 lambda: dist.new_group([0]), lambda: dist.all_gather_object([None], 1),
                 lambda: dist.get_process_group_ranks(None)):
        with pytest.raises(dist.NotInitializedError, match="init_process_group"):
            call()


def test_init_names_the_missing_torchrun_variables(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    with pytest.raises(tp.distributed.NotInitializedError,
                       match="RANK, WORLD_SIZE, MASTER_PORT not set"):
        tp.distributed.init_process_group("gloo")
    with pytest.raises(tp.errors.ArgumentError, match="backend"):
        tp.distributed.init_process_group("mpi")


def test_a_rank_that_never_comes_makes_init_fail_within_the_timeout():
    with pytest.raises(tp.distributed.CollectiveError, match="did not all meet"):
        tp.distributed.init_process_group(
            "gloo", init_method=f"tcp://127.0.0.1:{workers.free_port()}", rank=0,
            world_size=2, timeout=datetime.timedelta(seconds=1))
    assert not tp.distributed.is_initialized()
    if not torch.cuda.is_available():
        with pytest.raises(tp.errors.DeviceError, match="no GPU"):
            tp.distributed.init_process_group("nccl", rank=0, world_size=1)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bfloat16", "bool"])
def test_contiguous_memory_is_handed_over_without_a_copy(dtype):
    t = tp.ones(2, 3, dtype=getattr(tp, dtype))
    view = handover.torch_view(t, "test", "t")
    assert view.data_ptr() == t.data_ptr()
    assert view.dtype == getattr(torch, dtype) and tuple(view.shape) == (2, 3)
    shared = handover.Shared(t[:, 1:], "test", "t")      # a slice is contiguous per row only
    assert shared.view.data_ptr() == t[:, 1:].data_ptr()
    assert shared.torch.is_contiguous() and shared.torch is not shared.view


@pytest.fixture
def group_of_one():
    """A gloo group of this process alone (a HashStore: nothing listens on the network)."""
    tp.distributed.init_process_group("gloo", store=tp.distributed.HashStore(), rank=0,
                                      world_size=1)
    yield
    tp.distributed.destroy_process_group()


def test_cuda_tensors_cross_as_the_torch_memory_they_hold(group_of_one):
    if not (tp.cuda.is_available() or tp.cuda.is_interpreted()):
        pytest.skip("no GPU and no Triton interpreter")
    x = tp.arange(12.0).reshape(3, 4).to("cuda")
    assert handover.torch_view(x, "test", "x").data_ptr() == x.data_ptr()
    out = tp.zeros(4, 3, device="cuda").t()                  # non-contiguous output
    tp.distributed.all_gather_into_tensor(out, x)
    np.testing.assert_array_equal(out.cpu().numpy(), np.arange(12.0).reshape(3, 4))
    before = x._version
    tp.distributed.all_reduce(x, op=tp.distributed.ReduceOp.MAX)
    assert x._version == before + 1                          # written: counted as in place
    if tp.cuda.is_interpreted():                             # host memory: gloo moves it
        assert tp.distributed.get_backend() == "gloo"
    else:                                                    # device memory: gloo refuses
        with pytest.raises(tp.errors.DeviceError, match="serves only gloo for cpu"):
            tp.distributed.all_reduce(x)


def test_ddp_checks_device_ids_and_runs_on_cuda_tensors(group_of_one):
    DDP = tp.nn.parallel.DistributedDataParallel
    with pytest.raises(tp.errors.DeviceError, match="cuda:0, but the module's parameters"):
        DDP(tp.nn.Linear(3, 2), device_ids=[0])
    with pytest.raises(tp.errors.ArgumentError, match="one device"):
        DDP(tp.nn.Linear(3, 2), device_ids=[0, 1])
    if not (tp.cuda.is_available() or tp.cuda.is_interpreted()):
        pytest.skip("no GPU and no Triton interpreter")
    tp.manual_seed(0)
    plain = tp.nn.Linear(3, 2).to("cuda")
    wrapped = DDP(tp.nn.Linear(3, 2).to("cuda"), device_ids=[0])
    wrapped.module.load_state_dict(plain.state_dict())
    x = tp.arange(6.0).reshape(2, 3).to("cuda")
    plain(x).square().sum().backward()
    wrapped(x).square().sum().backward()          # a group of one: the average is the grad
    for mine, theirs in zip(wrapped.parameters(), plain.parameters()):
        assert mine.grad.device == theirs.grad.device
        np.testing.assert_allclose(mine.grad.cpu().numpy(), theirs.grad.cpu().numpy())


def test_a_killed_rank_makes_the_others_fail_cleanly(three_ranks):
    assert sorted(three_ranks) == [0, 2]              # rank 1 was killed before reporting
    for rank in (0, 2):
        kind, message = three_ranks[rank]["killed"]
        assert kind == "CollectiveError", (rank, kind, message)
        assert f"rank {rank} of 3" in message and "all_reduce()" in message


# ---- DistributedDataParallel ---------------------------------------------------------
def reference_training(steps):
    x, y = workers.global_batch()
    return workers.train_steps(workers.make_mlp(seed=0), x, y, steps)


def test_ddp_starts_from_rank_0_weights(ddp):
    _, ddp = ddp
    start = [p.detach().numpy() for p in workers.make_mlp(seed=0).parameters()]
    for rank, out in ddp.items():
        for got, want in zip(out["initial"], start):
            np.testing.assert_array_equal(got, want, err_msg=f"rank {rank}")


def test_ddp_steps_equal_one_process_on_the_full_batch(ddp):
    _, ddp = ddp
    assert ddp[0]["buckets"] > 1                   # the small cap splits the gradients
    expected = reference_training(workers.STEPS)
    for rank, out in ddp.items():
        for got, want, other in zip(out["trained"], expected, ddp[0]["trained"]):
            np.testing.assert_array_equal(got, other, err_msg=f"rank {rank} vs rank 0")
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_ddp_reduces_buckets_while_backward_runs(ddp):
    _, ddp = ddp
    for rank, out in ddp.items():
        # [last layers' bucket, ..., first layer's bucket]: all but the last launched
        launched = out["launched_before_first_layer"]
        assert len(launched) == out["buckets"] and launched[0] and not launched[-1], launched


def test_ddp_broadcasts_rank_0_buffers_at_each_forward(ddp):
    _, ddp = ddp
    zero = ddp[0]["running_mean_seen"]
    assert not np.allclose(zero[0], zero[1])                  # the first forward moved it
    for rank, out in ddp.items():
        for mine, rank0 in zip(out["running_mean_seen"], zero):
            np.testing.assert_array_equal(mine, rank0, err_msg=f"rank {rank}")


def test_no_sync_accumulates_locally_then_averages_the_sum(ddp):
    _, ddp = ddp
    x, y = workers.global_batch()
    expected = reference_training(4)
    for rank, out in ddp.items():
        for got, want in zip(out["accumulated"], expected):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        # inside no_sync: this rank's own gradient (first half of its shard, halved)
        model = workers.make_mlp(seed=0)
        index = out["shard"][:len(out["shard"]) // 2]
        loss = tp.nn.functional.cross_entropy(model(tp.tensor(x[index])), tp.tensor(y[index]))
        (loss / 2).backward()
        np.testing.assert_allclose(out["grad_inside_no_sync"], model[0].bias.grad.numpy(),
                                   rtol=1e-5, atol=1e-7)
    first, *others = ddp.values()
    assert not np.allclose(first["grad_inside_no_sync"], others[0]["grad_inside_no_sync"])


def test_ddp_find_unused_parameters(suite):
    world, results = suite
    results = {r: v["unused"] for r, v in results.items()}
    # rank 0's gradient of the branch only it uses, averaged with the others' zeros
    tp.manual_seed(0)
    body, _, extra = tp.nn.Linear(4, 4), tp.nn.Linear(4, 2), tp.nn.Linear(4, 2)
    h = body(tp.tensor(results[0]["x"]))
    extra(h).sum().backward()
    for rank, out in results.items():
        np.testing.assert_allclose(out["rank0_only.grad"], extra.weight.grad.numpy() / world,
                                   rtol=1e-5, atol=1e-7)
        assert out["never.grad"] is None            # no rank used it: left alone
        kind, message = out["strict"]
        assert kind == "DistributedError" and "find_unused_parameters=True" in message
        assert "rank0_only.weight" in message


def test_the_training_command_runs_data_parallel_without_the_optional_extras(two_ranks):
    """torchrun of `tensorplay train` with tqdm and matplotlib missing: rank 0 reports,
    prints a plain progress line instead of a bar, and writes the curves as a CSV."""
    printed, progress, (checkpoint, csv, png, curves) = two_ranks[0]["train"]
    assert "data-parallel: 2 processes, batch 32 each (64 per step)" in printed
    assert re.search(r"test accuracy: \d+\.\d+%", printed)
    assert checkpoint and csv and not png and re.search(r"curves: .*curves\.csv", printed)
    header, row = curves.splitlines()
    assert header == "epoch,train_loss,train_acc,test_loss,test_acc" and row.startswith("1,")
    assert re.fullmatch(r"epoch 1/1: 1 batches, loss=\d+\.\d+, acc=\d\.\d+\n", progress)
    assert two_ranks[1]["train"] == ("", "", [True, True, False])   # rank 1: trains, silent


# ---- DistributedSampler (no processes: num_replicas and rank given) -----------------
@pytest.mark.parametrize("length", [0, 1, 7, 10, 33])
@pytest.mark.parametrize("replicas", [1, 2, 3, 4])
def test_sampler_matches_torch(length, replicas):
    for shuffle in (True, False):
        for drop_last in (True, False):
            for rank in range(replicas):
                ours = DistributedSampler(range(length), replicas, rank, shuffle=shuffle,
                                          seed=5, drop_last=drop_last)
                theirs = torch.utils.data.DistributedSampler(
                    range(length), replicas, rank, shuffle=shuffle, seed=5,
                    drop_last=drop_last)
                for epoch in (0, 3):
                    ours.set_epoch(epoch)
                    theirs.set_epoch(epoch)
                    assert list(ours) == list(theirs)
                    assert len(ours) == len(theirs)


def test_sampler_shards_cover_the_dataset_in_equal_parts():
    shards = [list(DistributedSampler(range(10), 3, r, seed=1)) for r in range(3)]
    assert [len(s) for s in shards] == [4, 4, 4]
    assert set().union(*shards) == set(range(10))
    first = list(DistributedSampler(range(10), 3, 0, seed=1))
    sampler = DistributedSampler(range(10), 3, 0, seed=1)
    sampler.set_epoch(1)
    assert list(sampler) != first
    with pytest.raises(ValueError, match="Invalid rank 3"):
        DistributedSampler(range(10), 3, 3)


def test_ddp_sampler_shard_is_the_groups(ddp):
    world, ddp = ddp
    for rank, out in ddp.items():
        assert out["shard"] == list(range(workers.GLOBAL_BATCH))[rank::world]


# ---- the hook DDP reduces from ----------------------------------------------------------
def test_post_accumulate_grad_hook_matches_torch():
    def record(lib):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        seen = []
        handle = w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
        (w * w).sum().backward()
        (w * 3).sum().backward()
        handle.remove()
        w.sum().backward()
        return seen, w.grad.tolist()

    assert record(tp) == record(torch)
    with pytest.raises(RuntimeError, match="non-leaf"):
        (tp.ones(2, requires_grad=True) * 2).register_post_accumulate_grad_hook(print)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        tp.ones(2).register_post_accumulate_grad_hook(print)


def test_sync_batch_norm_equals_batch_norm_on_the_global_batch(suite):
    """Each rank's SyncBatchNorm on its slice (unequal slices; one empty with 3 ranks) gives
    PyTorch's BatchNorm on the whole batch: outputs, input gradients, the sum of the ranks'
    weight and bias gradients, and the running statistics, over two steps."""
    world, results = suite
    x, grad, weight, bias = workers.sync_bn_inputs()
    layer = torch.nn.BatchNorm1d(workers.SYNC_BN_CHANNELS, momentum=0.3).double()
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weight))
        layer.bias.copy_(torch.tensor(bias))
    bounds = np.cumsum((0,) + workers.SYNC_BN_SLICES[world])
    for step in range(2):
        xt = torch.tensor(x * (step + 1), requires_grad=True)
        y = layer(xt)
        (y * torch.tensor(grad)).sum().backward()
        for rank in results:           # (with 3 ranks, rank 1 is killed later: no report)
            mine = results[rank]["sync_bn"][step]
            rows = slice(bounds[rank], bounds[rank + 1])
            np.testing.assert_allclose(mine["y"], y.detach().numpy()[rows], rtol=1e-10,
                                       atol=1e-12)
            np.testing.assert_allclose(mine["x_grad"], xt.grad.numpy()[rows], rtol=1e-9,
                                       atol=1e-12)
    for name, expected in (("weight_grad", layer.weight.grad), ("bias_grad", layer.bias.grad)):
        shares = [results[rank]["sync_bn"][name] for rank in results]
        if len(shares) == world:
            total = sum(g for g in shares if g is not None)
            np.testing.assert_allclose(total, expected.numpy(), rtol=1e-10)
    for rank in results:
        mean, var = results[rank]["sync_bn"]["running"]
        np.testing.assert_allclose(mean, layer.running_mean.numpy(), rtol=1e-10)
        np.testing.assert_allclose(var, layer.running_var.numpy(), rtol=1e-10)
