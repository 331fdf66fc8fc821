"""What each rank runs in tests/test_distributed.py, and the launcher that starts them.

`launch(job, world)` starts `world` processes, sets the variables torchrun would set,
joins the gloo group on loopback through env:// (at a store the launcher holds, as
torchrun's agent does), runs `job(rank, world)` and sends back what it returns, or its
traceback. The parent checks the values against PyTorch; a
worker only computes.

The processes come from a fork server that has imported torch and TensorPlay once (this
module imports them), so a rank starts in milliseconds instead of paying the imports
(about 2 s a process, many more on a busy machine). Importing torch starts no threads,
so forking after it is safe; the process group is created after the fork.
"""
from __future__ import annotations

import contextlib
import datetime
import multiprocessing
import multiprocessing.forkserver
import os
import queue
import shutil
import signal
import socket
import time
import traceback
import warnings

import numpy as np
import torch.distributed

import tensorplay as tp
import tensorplay.distributed as dist
from tensorplay.nn.parallel import DistributedDataParallel
from tensorplay.utils.data import DistributedSampler

GROUP_TIMEOUT_S = 20        # a collective waiting longer for a peer fails (no hang)
JOIN_TIMEOUT_S = 90         # the parent gives up on a job after this (and kills it)

tp.ones(1)                  # loads the library (backends registered) before the fork


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(job, world, group_timeout_s=GROUP_TIMEOUT_S):
    """Run `job` on `world` ranks; returns {rank: ("ok", result), ("error", traceback)
    or, for a rank that died without reporting, ("exited", its exit code)}."""
    ctx = multiprocessing.get_context("forkserver")
    _start_fork_server(ctx)
    results = ctx.Queue()
    # The ranks meet at a store this process holds, as they meet at torchrun's agent: it
    # listens before any rank starts (no port to pick, then find taken) and outlives a
    # rank that dies.
    store = torch.distributed.TCPStore("127.0.0.1", 0, is_master=True,
                                       wait_for_workers=False)
    procs = [ctx.Process(target=_run_rank, args=(job, rank, world, store.port,
                                                  group_timeout_s, results), daemon=True)
             for rank in range(world)]
    for p in procs:
        p.start()
    out = {}
    deadline = time.monotonic() + JOIN_TIMEOUT_S
    while len(out) < world and time.monotonic() < deadline:
        if not any(p.is_alive() for p in procs) and results.empty():
            break
        try:
            rank, status, value = results.get(timeout=0.2)
        except queue.Empty:
            continue
        out[rank] = (status, value)
    for p in procs:
        p.join(timeout=max(0.1, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join()
    del store
    for rank, p in enumerate(procs):
        out.setdefault(rank, ("exited", p.exitcode))
    return out


def _start_fork_server(ctx):
    """Start the fork server with this module imported. Python 3.11's server ignores the
    sys.path it is sent, so the paths that find tensorplay and this module go through
    PYTHONPATH, for the moment the server starts."""
    ctx.set_forkserver_preload([__name__])
    here = os.path.dirname(os.path.abspath(__file__))
    paths = [os.path.dirname(here), here]
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(paths + ([saved] if saved else []))
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved


def _run_rank(job, rank, world, port, group_timeout_s, results):
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                      TORCHELASTIC_USE_AGENT_STORE="True")
    try:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=group_timeout_s))
        try:
            value = job(rank, world)
        finally:
            if dist.is_initialized():
                dist.destroy_process_group()
        results.put((rank, "ok", value))
    except BaseException:
        results.put((rank, "error", traceback.format_exc()))


def every_check_job(rank, world):
    """The whole multi-process suite in one launch (starting processes is the cost):
    {collectives, ddp, unused} results, with 2 ranks also "train" (the training
    command); with 3 ranks, rank 1 then dies and the others report how their next
    collective failed under "killed"."""
    out = {"collectives": collectives_job(rank, world),
           "against_torch": against_torch_job(rank, world),
           "point_to_point": point_to_point_job(rank, world),
           "objects": objects_job(rank, world),
           "subgroup": subgroup_job(rank, world),
           "argument_errors": argument_errors(rank, world),
           "ddp": ddp_job(rank, world),
           "unused": unused_parameters_job(rank, world),
           "sync_bn": sync_batch_norm_job(rank, world)}
    if world == 2:
        out["train"] = train_command_job(rank, world)
    if world == 3:
        out["killed"] = killed_rank_job(rank, world)
    return out


# ---- the inputs every rank and the parent agree on ------------------------------------
DTYPES = ("float32", "float64", "int64")


def rank_values(rank, dtype, shape=(3, 4)):
    """Rank `rank`'s input of the collectives tests: small integers, exact in every dtype
    (so PRODUCT and AVG are exact too)."""
    rng = np.random.RandomState(100 + rank)
    return rng.randint(1, 5, size=shape).astype(dtype)


# ---- jobs ------------------------------------------------------------------------------
def collectives_job(rank, world):
    """Every collective on this rank's inputs; returns {name: numpy result}."""
    out = {}
    for dtype in DTYPES:
        ops = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN,
               "product": dist.ReduceOp.PRODUCT}
        if dtype != "int64":
            ops["avg"] = dist.ReduceOp.AVG
        for name, op in ops.items():
            t = tp.tensor(rank_values(rank, dtype))
            dist.all_reduce(t, op=op)
            out[f"all_reduce/{name}/{dtype}"] = t.numpy().copy()

        # non-contiguous: a transpose, and every other column of a wider base (the
        # columns in between must be left alone)
        t = tp.tensor(rank_values(rank, dtype)).t()
        dist.all_reduce(t)
        out[f"all_reduce/transposed/{dtype}"] = t.numpy().copy()
        base = tp.tensor(rank_values(rank, dtype, shape=(3, 8)))
        dist.all_reduce(base[:, ::2])
        out[f"all_reduce/strided/{dtype}"] = base.numpy().copy()

        t = tp.tensor(rank_values(rank, dtype))
        work = dist.all_reduce(t, async_op=True)
        work.wait()
        out[f"all_reduce/async/{dtype}"] = t.numpy().copy()

        t = tp.tensor(rank_values(rank, dtype))
        dist.broadcast(t, src=world - 1)
        out[f"broadcast/{dtype}"] = t.numpy().copy()

        gathered = [tp.zeros(3, 4, dtype=getattr(tp, dtype)) for _ in range(world)]
        dist.all_gather(gathered, tp.tensor(rank_values(rank, dtype)))
        out[f"all_gather/{dtype}"] = np.stack([g.numpy() for g in gathered])

        into = tp.zeros(world * 3, 4, dtype=getattr(tp, dtype)).t()    # non-contiguous
        work = dist.all_gather_into_tensor(into.t(), tp.tensor(rank_values(rank, dtype)),
                                           async_op=True)
        work.wait()
        out[f"all_gather_into_tensor/{dtype}"] = into.t().numpy().copy()

        scattered = tp.zeros(3, 4, dtype=getattr(tp, dtype))
        dist.reduce_scatter_tensor(
            scattered, tp.tensor(rank_values(rank, dtype, shape=(world * 3, 4))))
        out[f"reduce_scatter_tensor/{dtype}"] = scattered.numpy().copy()
    out["errors"] = collective_errors(rank, world)
    out["rank"], out["world"] = dist.get_rank(), dist.get_world_size()
    dist.barrier()
    return out


def collective_errors(rank, world):
    """{case: exception class name} for the misuse a collective must reject."""
    cases = {
        "meta tensor": lambda: dist.all_reduce(tp.empty(3, device="meta")),
        "src out of range": lambda: dist.broadcast(tp.ones(2), src=world),
        "short tensor_list": lambda: dist.all_gather([tp.ones(2)], tp.ones(2)),
        "wrong output size": lambda: dist.all_gather_into_tensor(tp.ones(1), tp.ones(2)),
        "not a tensor": lambda: dist.all_reduce([1.0, 2.0]),
        "second init": lambda: dist.init_process_group("gloo"),
    }
    errors = {}
    for case, call in cases.items():
        try:
            call()
            errors[case] = None
        except Exception as error:        # the parent checks the type
            errors[case] = type(error).__name__
    return errors


# ---- the rest of torch.distributed, each call beside torch.distributed's own ----------
def settle(work, async_op):
    """The return value of a collective: a finished Work when async_op, else None."""
    if not async_op:
        assert work is None, work
        return
    assert isinstance(work, dist.Work), work
    work.wait()
    assert work.is_completed() and work.is_success() and work.exception() is None


def reduce_ops(dtype):
    """{name: op} of the reductions gloo defines on `dtype`."""
    ops = {"sum": dist.ReduceOp.SUM, "product": dist.ReduceOp.PRODUCT,
           "min": dist.ReduceOp.MIN, "max": dist.ReduceOp.MAX}
    if dtype == "int64":
        ops.update(band=dist.ReduceOp.BAND, bor=dist.ReduceOp.BOR, bxor=dist.ReduceOp.BXOR)
    else:
        ops["avg"] = dist.ReduceOp.AVG
    return ops


def against_torch_job(rank, world):
    """reduce, gather, scatter, reduce_scatter, all_to_all(_single) and the bitwise
    all_reduce, each run through tp.distributed and through torch.distributed on the
    same values (alternately synchronous and async). Returns {name: (ours, torch's)}
    (the rooted ones only on their root)."""
    tdist = torch.distributed
    out = {}
    root = world - 1
    for dtype in ("float32", "int64"):
        tp_dtype, torch_dtype = getattr(tp, dtype), getattr(torch, dtype)
        x = rank_values(rank, dtype)

        def twin(values):
            return tp.tensor(values.copy()), torch.from_numpy(values.copy())

        def twin_zeros(*shape):
            return tp.zeros(*shape, dtype=tp_dtype), torch.zeros(*shape, dtype=torch_dtype)

        for i, (name, op) in enumerate(reduce_ops(dtype).items()):
            async_op = i % 2 == 1
            ours, theirs = twin(x)
            settle(dist.reduce(ours, dst=root, op=op, async_op=async_op), async_op)
            tdist.reduce(theirs, dst=root, op=op)
            if rank == root:
                out[f"reduce/{name}/{dtype}"] = (ours.numpy().copy(), theirs.numpy())
            ours, theirs = twin(x)
            settle(dist.all_reduce(ours, op=op, async_op=not async_op), not async_op)
            tdist.all_reduce(theirs, op=op)
            out[f"all_reduce/{name}/{dtype}"] = (ours.numpy().copy(), theirs.numpy())
        # (a reduce to a group rank: group_dst counts within the default group here)
        ours, theirs = twin(x)
        dist.reduce(ours, group_dst=0, op=dist.ReduceOp.MAX)
        tdist.reduce(theirs, group_dst=0, op=tdist.ReduceOp.MAX)
        if rank == 0:
            out[f"reduce/group_dst/{dtype}"] = (ours.numpy().copy(), theirs.numpy())

        for async_op in (False, True):
            mode = "async" if async_op else "sync"
            # gather to the last rank (non-contiguous outputs there)
            ours = ([tp.zeros(4, 3, dtype=tp_dtype).t() for _ in range(world)]
                    if rank == root else None)
            theirs = [torch.zeros(3, 4, dtype=torch_dtype) for _ in range(world)]
            settle(dist.gather(tp.tensor(x), ours, dst=root, async_op=async_op), async_op)
            tdist.gather(torch.from_numpy(x.copy()), theirs if rank == root else None, dst=root)
            if rank == root:
                out[f"gather/{dtype}/{mode}"] = (np.stack([t.numpy() for t in ours]),
                                                 torch.stack(theirs).numpy())
            # scatter from rank 0 (the default src)
            pieces = [rank_values(50 + q, dtype) for q in range(world)]
            ours, theirs = twin_zeros(3, 4)
            settle(dist.scatter(ours, [tp.tensor(p) for p in pieces] if rank == 0 else None,
                                async_op=async_op), async_op)
            tdist.scatter(theirs, [torch.from_numpy(p) for p in pieces] if rank == 0 else None)
            out[f"scatter/{dtype}/{mode}"] = (ours.numpy().copy(), theirs.numpy())
            # reduce_scatter: rank r's piece q differs for every (r, q)
            pieces = [rank_values(10 * rank + q, dtype) for q in range(world)]
            ours, theirs = twin_zeros(3, 4)
            settle(dist.reduce_scatter(ours, [tp.tensor(p) for p in pieces],
                                       op=dist.ReduceOp.MAX, async_op=async_op), async_op)
            tdist.reduce_scatter(theirs, [torch.from_numpy(p) for p in pieces],
                                 op=tdist.ReduceOp.MAX)
            out[f"reduce_scatter/{dtype}/{mode}"] = (ours.numpy().copy(), theirs.numpy())
            # all_to_all: rank r's block q goes to rank q as its block r
            blocks = [rank_values(10 * rank + q, dtype, (2, 3)) for q in range(world)]
            ours = [tp.zeros(2, 3, dtype=tp_dtype) for _ in range(world)]
            theirs = [torch.zeros(2, 3, dtype=torch_dtype) for _ in range(world)]
            settle(dist.all_to_all(ours, [tp.tensor(b) for b in blocks], async_op=async_op),
                   async_op)
            tdist.all_to_all(theirs, [torch.from_numpy(b) for b in blocks])
            out[f"all_to_all/{dtype}/{mode}"] = (np.stack([t.numpy() for t in ours]),
                                                 torch.stack(theirs).numpy())
            # ... with blocks of different shapes (gloo's own alltoall refuses them): block
            # q of rank r is (q + 1, 2) and holds 100 r + q
            blocks = [np.full((q + 1, 2), 100 * rank + q).astype(dtype) for q in range(world)]
            ours = [tp.zeros(rank + 1, 2, dtype=tp_dtype) for _ in range(world)]
            settle(dist.all_to_all(ours, [tp.tensor(b) for b in blocks], async_op=async_op),
                   async_op)
            out[f"all_to_all/shapes/{dtype}/{mode}"] = (
                [t.numpy() for t in ours],
                [np.full((rank + 1, 2), 100 * r + rank).astype(dtype) for r in range(world)])
            # all_to_all_single, equal slices
            x2 = rank_values(rank, dtype, (2 * world, 3))
            ours, theirs = twin_zeros(2 * world, 3)
            settle(dist.all_to_all_single(ours, tp.tensor(x2), async_op=async_op), async_op)
            tdist.all_to_all_single(theirs, torch.from_numpy(x2.copy()))
            out[f"all_to_all_single/{dtype}/{mode}"] = (ours.numpy().copy(), theirs.numpy())
            # ... and slices of given sizes: rank r sends r + 2q rows to rank q (rank 0's
            # first slice is empty), into every other column of a wider output
            sent = [rank + 2 * q for q in range(world)]
            received = [r + 2 * rank for r in range(world)]
            x3 = rank_values(rank, dtype, (sum(sent), 3))
            wide = tp.zeros(sum(received), 6, dtype=tp_dtype)
            theirs = torch.zeros(sum(received), 3, dtype=torch_dtype)
            settle(dist.all_to_all_single(wide[:, ::2], tp.tensor(x3), received, sent,
                                          async_op=async_op), async_op)
            tdist.all_to_all_single(theirs, torch.from_numpy(x3.copy()), received, sent)
            out[f"all_to_all_single/split/{dtype}/{mode}"] = (wide.numpy()[:, ::2].copy(),
                                                              theirs.numpy())
            assert not wide.numpy()[:, 1::2].any()          # the columns between: untouched
    work = dist.barrier(async_op=True)
    settle(work, True)
    result = dist.all_reduce(tp.ones(2), async_op=True).result()
    out["work.result"] = (result[0].numpy(), np.full(2, world, np.float32))
    outputs = [tp.zeros(1) for _ in range(world)]
    result = dist.all_to_all(outputs, [tp.tensor([float(rank)])] * world, async_op=True).result()
    assert all(a is b for a, b in zip(result, outputs))       # the outputs themselves
    out["work.result/all_to_all"] = ([r.numpy() for r in result],
                                     [np.array([float(r)], np.float32) for r in range(world)])
    return out


def point_to_point_job(rank, world):
    """send/recv around a ring (and the same through torch), isend/irecv, recv from any
    rank, tags, batch_isend_irecv. Returns {name: (ours, expected)}."""
    tdist = torch.distributed
    out = {}
    after, before = (rank + 1) % world, (rank - 1) % world
    x = rank_values(rank, "float64")
    # a ring: even ranks send first, odd ones receive first (blocking calls, no deadlock)
    ours, theirs = tp.zeros(3, 4, dtype=tp.float64), torch.zeros(3, 4, dtype=torch.float64)
    for lib_send, lib_recv, buffer, make in ((dist.send, dist.recv, ours, tp.tensor),
                                             (tdist.send, tdist.recv, theirs, torch.from_numpy)):
        if rank % 2 == 0:
            lib_send(make(x.copy()), dst=after)
            sender = lib_recv(buffer, src=before)
        else:
            sender = lib_recv(buffer, src=before)
            lib_send(make(x.copy()), dst=after)
        assert sender == before, sender
    out["ring/send_recv"] = (ours.numpy().copy(), theirs.numpy())
    # the same ring with isend/irecv, both started before either is waited for
    got = tp.zeros(4, 3, dtype=tp.float64).t()                   # non-contiguous
    works = [dist.isend(tp.tensor(x), after), dist.irecv(got, before)]
    assert all(isinstance(w, dist.Work) for w in works)
    for w in works:
        w.wait()
        assert w.is_completed()
    out["ring/isend_irecv"] = (got.numpy().copy(), rank_values(before, "float64"))
    # batch_isend_irecv, the other way round the ring
    got = tp.zeros(3, 4, dtype=tp.float64)
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, got, after),
                                    dist.P2POp(tdist.isend, tp.tensor(x), before)])
    for w in works:
        w.wait()
    out["ring/batch_isend_irecv"] = (got.numpy().copy(), rank_values(after, "float64"))
    # rank 0 receives from any rank: who sent is what recv returns
    if rank == 0:
        senders = []
        for _ in range(world - 1):
            t = tp.zeros(1, dtype=tp.int64)
            senders.append((dist.recv(t), int(t.item())))
        out["any_source"] = (sorted(senders), [(r, r) for r in range(1, world)])
    else:
        dist.send(tp.tensor([rank]), dst=0)
    # tags: rank 1 sends tag 7, then tag 3; rank 0 receives tag 3 first
    if rank == 1:
        works = [dist.isend(tp.tensor([7.0]), 0, tag=7), dist.isend(tp.tensor([3.0]), 0, tag=3)]
        for w in works:
            w.wait()
    elif rank == 0:
        three, seven = tp.zeros(1), tp.zeros(1)
        dist.recv(three, 1, tag=3)
        dist.recv(seven, 1, tag=7)
        out["tags"] = ((float(three.item()), float(seven.item())), (3.0, 7.0))
    # (gloo's barrier that names the ranks missing; here every rank comes)
    assert dist.monitored_barrier(timeout=datetime.timedelta(seconds=10)) is None
    return out


class Payload:
    """A user class inside an object collective (pickled by reference to this module)."""

    def __init__(self, rank, size):
        self.rank, self.items = rank, list(range(size))

    def __eq__(self, other):
        return vars(self) == vars(other)


def plain(obj):
    """`obj` with its TensorPlay tensors as NumPy arrays' lists (to compare)."""
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, tp.Tensor):
        return ("tensor", obj.dtype.name if hasattr(obj.dtype, "name") else str(obj.dtype),
                obj.numpy().tolist())
    return obj


def rank_object(r):
    """Rank r's object: a dict with a user class and a TensorPlay tensor, longer as r grows."""
    return {"rank": r, "payload": Payload(r, 3 * r + 1), "t": tp.arange(float(r + 1))}


def objects_job(rank, world):
    """Every object collective through tp.distributed and torch.distributed on the same
    objects (of different pickle lengths on each rank, with TensorPlay tensors inside).
    Returns {name: (ours, torch's)}."""
    tdist = torch.distributed
    out = {}

    mine = rank_object
    src = world - 1
    for lib in (dist, tdist):
        objects = [mine(rank), "text" * rank, None] if rank == src else [None, None, None]
        lib.broadcast_object_list(objects, src=src)
        out.setdefault("broadcast_object_list", []).append(plain(objects))

        gathered = [None] * world
        lib.all_gather_object(gathered, mine(rank))
        out.setdefault("all_gather_object", []).append(plain(gathered))

        gathered = [None] * world if rank == 0 else None
        lib.gather_object(mine(rank), gathered, dst=0)
        out.setdefault("gather_object", []).append(plain(gathered))

        received = [None]
        lib.scatter_object_list(received, [mine(100 + q) for q in range(world)]
                                if rank == src else None, src=src)
        out.setdefault("scatter_object_list", []).append(plain(received))

        received = [None, None]
        if rank == 0:
            lib.send_object_list([mine(0), {"to": src}], dst=src)
        elif rank == src:
            sender = lib.recv_object_list(received, src=0)
            received.append(sender)
        out.setdefault("send_recv_object_list", []).append(plain(received))
    return {name: tuple(pair) for name, pair in out.items()}


def subgroup_job(rank, world):
    """new_group of the last two ranks (with 3 ranks, rank 0 is outside): ranks,
    collectives and objects on it beside torch's own group of the same ranks; a
    non-member's calls; with 2 ranks, a group whose 1 s timeout ends a collective that a
    rank never joins."""
    tdist = torch.distributed
    members = [world - 2, world - 1]
    group = dist.new_group(members)
    theirs = tdist.new_group(members)
    out = {"members": members}
    if rank not in members:
        out["marker"] = group == dist.GroupMember.NON_GROUP_MEMBER     # what torch returns
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out["outside"] = (dist.get_rank(group), dist.get_world_size(group),
                              dist.all_reduce(tp.ones(2), group=group),
                              dist.barrier(group=group),
                              dist.all_gather_object([None, None], 1, group=group),
                              [str(w.message) for w in caught])
    else:
        out["ranks"] = (dist.get_rank(group), dist.get_world_size(group),
                        dist.get_process_group_ranks(group),
                        dist.get_group_rank(group, world - 1), dist.get_global_rank(group, 0))
        x = rank_values(rank, "float32")
        mine, torch_side = tp.tensor(x), torch.from_numpy(x.copy())
        settle(dist.all_reduce(mine, group=group, async_op=True), True)
        tdist.all_reduce(torch_side, group=theirs)
        out["all_reduce"] = (mine.numpy().copy(), torch_side.numpy())
        mine, torch_side = tp.tensor(x), torch.from_numpy(x.copy())
        dist.broadcast(mine, group=group, group_src=0)        # from global rank world - 2
        tdist.broadcast(torch_side, group=theirs, group_src=0)
        out["broadcast/group_src"] = (mine.numpy().copy(), torch_side.numpy())
        mine = tp.tensor(x)
        dist.broadcast(mine, src=world - 2, group=group)      # the same, by global rank
        out["broadcast/src"] = (mine.numpy().copy(), torch_side.numpy())
        last = rank == world - 1
        gathered = [tp.zeros(3, 4) for _ in members] if last else None
        torch_gathered = [torch.zeros(3, 4) for _ in members] if last else None
        dist.gather(tp.tensor(x), gathered, group=group, group_dst=1)
        tdist.gather(torch.from_numpy(x.copy()), torch_gathered, group=theirs, group_dst=1)
        if last:
            out["gather"] = (np.stack([g.numpy() for g in gathered]),
                             torch.stack(torch_gathered).numpy())
        objects = [None, None]
        dist.all_gather_object(objects, {"rank": rank}, group=group)
        out["all_gather_object"] = objects
        dist.barrier(group=group)
        settle(dist.barrier(group=group, async_op=True), True)
        try:
            dist.broadcast(tp.ones(2), src=0 if world == 3 else 5, group=group)
            out["src outside"] = None
        except Exception as error:
            out["src outside"] = (type(error).__name__, str(error))
    if world == 2:
        quick = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=1))
        if rank == 0:                   # rank 1 never joins this all_reduce
            started = time.monotonic()
            try:
                dist.all_reduce(tp.ones(2), group=quick)
                out["timeout"] = None
            except Exception as error:
                out["timeout"] = (type(error).__name__, str(error),
                                  time.monotonic() - started)
    dist.barrier()
    return out


# Misuse each rank tries: case -> (call(rank, world), error class name, op, argument)
ARGUMENT_ERRORS = {
    "reduce without dst": (lambda rank, world: dist.reduce(tp.ones(2)),
                           "ArgumentError", "reduce", "dst"),
    "dst outside the group": (lambda rank, world: dist.reduce(tp.ones(2), dst=world),
                              "RankError", "reduce", "dst"),
    "group_dst outside the group": (lambda rank, world: dist.gather(tp.ones(2), group_dst=-1),
                                    "RankError", "gather", "group_dst"),
    "src and group_src": (lambda rank, world: dist.broadcast(tp.ones(2), src=0, group_src=0),
                          "ArgumentError", "broadcast", "src"),
    "BAND on floats": (lambda rank, world: dist.all_reduce(tp.ones(2), op=dist.ReduceOp.BAND),
                       "DTypeError", "all_reduce", "op"),
    "AVG on integers": (lambda rank, world: dist.reduce(tp.ones(2, dtype=tp.int64), dst=0,
                                                        op=dist.ReduceOp.AVG),
                        "DTypeError", "reduce", "op"),
    "MAX on complex": (lambda rank, world: dist.all_reduce(
        tp.ones(2, dtype=tp.complex64), op=dist.ReduceOp.MAX), "DTypeError", "all_reduce", "op"),
    "op not a ReduceOp": (lambda rank, world: dist.all_reduce(tp.ones(2), op="sum"),
                          "ArgumentError", "all_reduce", "op"),
    "PREMUL_SUM on gloo": (lambda rank, world: dist.all_reduce(
        tp.ones(2), op=dist.ReduceOp.PREMUL_SUM), "ArgumentError", "all_reduce", "op"),
    "int16 on gloo": (lambda rank, world: dist.broadcast(tp.ones(2, dtype=tp.int16), src=0),
                      "DTypeError", "broadcast", "tensor"),
    "gather_list off the root": (lambda rank, world: dist.gather(
        tp.ones(2), [tp.ones(2)] * world, dst=(rank + 1) % world),
        "ArgumentError", "gather", "gather_list"),
    "short scatter_list": (lambda rank, world: dist.scatter(tp.ones(2), [tp.ones(2)], src=rank),
                           "ArgumentError", "scatter", "scatter_list"),
    "scatter_list of another dtype": (lambda rank, world: dist.scatter(
        tp.ones(2), [tp.ones(2, dtype=tp.int64)] * world, src=rank),
        "DTypeError", "scatter", "scatter_list[0]"),
    "reduce_scatter shapes": (lambda rank, world: dist.reduce_scatter(
        tp.ones(2), [tp.ones(3)] * world), "ShapeError", "reduce_scatter", "input_list[0]"),
    "all_to_all short list": (lambda rank, world: dist.all_to_all(
        [tp.ones(2)] * world, [tp.ones(2)]), "ArgumentError", "all_to_all", "input_tensor_list"),
    "splits not adding up": (lambda rank, world: dist.all_to_all_single(
        tp.zeros(6), tp.ones(6), input_split_sizes=[1] * world),
        "ShapeError", "all_to_all_single", "input_split_sizes"),
    "splits of the wrong count": (lambda rank, world: dist.all_to_all_single(
        tp.zeros(6), tp.ones(6), output_split_sizes=[6]),
        "ArgumentError", "all_to_all_single", "output_split_sizes"),
    "dim 0 not divisible": (lambda rank, world: dist.all_to_all_single(tp.zeros(5), tp.ones(5)),
                            "ShapeError", "all_to_all_single", "input"),
    "send to itself": (lambda rank, world: dist.send(tp.ones(2), dst=rank),
                       "ArgumentError", "send", "dst"),
    "recv tag not an int": (lambda rank, world: dist.recv(tp.ones(2), src=0, tag="a"),
                            "ArgumentError", "recv", "tag"),
    "P2POp of another op": (lambda rank, world: dist.P2POp(dist.all_reduce, tp.ones(2), 0),
                            "ArgumentError", "P2POp", "op"),
    "group not a group": (lambda rank, world: dist.all_reduce(tp.ones(2), group="world"),
                          "ArgumentError", "all_reduce", "group"),
    "new_group rank outside": (lambda rank, world: dist.new_group([0, world]),
                               "RankError", "new_group", "ranks"),
    "get_group_rank outside": (lambda rank, world: dist.get_group_rank(None, world),
                               "RankError", "get_group_rank", "global_rank"),
    "all_gather_object short list": (lambda rank, world: dist.all_gather_object([None], 1),
                                     "ArgumentError", "all_gather_object", "object_list"),
    "an object pickle refuses": (lambda rank, world: dist.all_gather_object(
        [None] * world, lambda: rank), "ArgumentError", "all_gather_object", "obj"),
    "gather_object list off the root": (lambda rank, world: dist.gather_object(
        1, [None] * world, dst=(rank + 1) % world),
        "ArgumentError", "gather_object", "object_gather_list"),
    "wait timeout not a timedelta": (lambda rank, world: wait_with_seconds(),
                                     "ArgumentError", "Work.wait", "timeout"),
}


def wait_with_seconds():
    """Work.wait(timeout=5): refused (a timedelta is wanted); then waited for properly."""
    work = dist.all_reduce(tp.ones(2), async_op=True)
    try:
        work.wait(timeout=5)
    finally:
        work.wait(timeout=datetime.timedelta(seconds=10))


def argument_errors(rank, world):
    """{case: (error class name, message)} of ARGUMENT_ERRORS, all raised before any
    communication (so no rank is left waiting)."""
    errors = {}
    for case, (call, *_) in ARGUMENT_ERRORS.items():
        try:
            call(rank, world)
            errors[case] = None
        except Exception as error:
            errors[case] = (type(error).__name__, str(error))
    return errors


# ---- data-parallel training ------------------------------------------------------------
STEPS = 20
GLOBAL_BATCH = 12           # divisible by 2 and 3 ranks
LR = 0.1


def global_batch():
    rng = np.random.RandomState(7)
    x = rng.randn(GLOBAL_BATCH, 6).astype(np.float32)
    y = rng.randint(0, 3, size=GLOBAL_BATCH).astype(np.int64)
    return x, y


def make_mlp(seed):
    tp.manual_seed(seed)
    return tp.nn.Sequential(tp.nn.Linear(6, 16), tp.nn.ReLU(), tp.nn.Linear(16, 16),
                            tp.nn.Tanh(), tp.nn.Linear(16, 3))


def train_steps(model, x, y, steps, micro_batches=1, sync=None):
    """`steps` SGD steps on (x, y); each step accumulates `micro_batches` equal slices,
    the first ones inside `sync()` (DDP's no_sync) when given. Returns the parameters."""
    optimizer = tp.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
    xs = np.array_split(x, micro_batches)
    ys = np.array_split(y, micro_batches)
    for _ in range(steps):
        optimizer.zero_grad()
        for i, (xb, yb) in enumerate(zip(xs, ys)):
            last = i == micro_batches - 1
            block = sync() if (sync is not None and not last) else contextlib.nullcontext()
            with block:
                loss = tp.nn.functional.cross_entropy(model(tp.tensor(xb)), tp.tensor(yb))
                (loss / micro_batches).backward()
        optimizer.step()
    return [p.detach().numpy().copy() for p in model.parameters()]


def ddp_job(rank, world):
    """Returns what the parent compares: the weights right after wrapping (rank 0's),
    after 20 steps, after 4 no_sync-accumulated steps, and the sampler's share."""
    x, y = global_batch()
    shard = DistributedSampler(range(GLOBAL_BATCH), shuffle=False)   # rank, world: the group's
    index = list(shard)
    out = {"shard": index}

    model = DistributedDataParallel(make_mlp(seed=rank), bucket_cap_mb=0.0005)
    out["buckets"] = len(model.reducer.buckets)
    out["initial"] = [p.detach().numpy().copy() for p in model.parameters()]
    out["trained"] = train_steps(model, x[index], y[index], STEPS)

    model = DistributedDataParallel(make_mlp(seed=0), bucket_cap_mb=0.0005)
    grads_inside = []

    @contextlib.contextmanager
    def no_sync_and_record():
        with model.no_sync():
            yield
        grads_inside.append(model.module[0].bias.grad.numpy().copy())
    out["accumulated"] = train_steps(model, x[index], y[index], 4, micro_batches=2,
                                     sync=no_sync_and_record)
    out["grad_inside_no_sync"] = grads_inside[0]

    # Overlap: which buckets are being reduced when backward reaches the first layer's
    # output (the first layer's own gradients are still to come).
    model = DistributedDataParallel(make_mlp(seed=0), bucket_cap_mb=0.0005)
    launched = []

    def watch_output(module, args, output):
        output.register_hook(
            lambda grad: launched.append([b.work is not None for b in model.reducer.buckets]))
    model.module[0].register_forward_hook(watch_output)
    model(tp.tensor(x[index])).sum().backward()
    out["launched_before_first_layer"] = launched[0]

    # broadcast_buffers: BatchNorm's running mean, different on each rank after a
    # forward on its own data, is rank 0's again when the next forward reaches the layer
    model = DistributedDataParallel(tp.nn.Sequential(tp.nn.Linear(6, 4), tp.nn.BatchNorm1d(4)))
    seen = []
    model.module[1].register_forward_pre_hook(
        lambda module, args: seen.append(module.running_mean.numpy().copy()))
    model(tp.tensor(x[index]))
    model(tp.tensor(x[index]))
    out["running_mean_seen"] = seen
    return out


# ---- SyncBatchNorm -----------------------------------------------------------------------
# Unequal slices of one global batch (with 3 ranks, rank 0's is empty).
SYNC_BN_SLICES = {2: (5, 7), 3: (0, 5, 7)}
SYNC_BN_CHANNELS = 4


def sync_bn_inputs():
    """The global batch (12, C, 3), the gradient of the output, and weight and bias."""
    rng = np.random.RandomState(11)
    x = rng.randn(12, SYNC_BN_CHANNELS, 3)
    grad = rng.randn(12, SYNC_BN_CHANNELS, 3)
    weight = 1 + 0.1 * np.arange(SYNC_BN_CHANNELS)
    bias = 0.1 * np.arange(SYNC_BN_CHANNELS)
    return x, grad, weight, bias


def sync_batch_norm_job(rank, world):
    """Two training steps of SyncBatchNorm on this rank's slice (float64): the output, the
    input's gradient, this rank's share of the weight's and bias's, the running stats."""
    x, grad, weight, bias = sync_bn_inputs()
    bounds = np.cumsum((0,) + SYNC_BN_SLICES[world])
    rows = slice(bounds[rank], bounds[rank + 1])
    layer = tp.nn.SyncBatchNorm(SYNC_BN_CHANNELS, momentum=0.3).double()
    with tp.no_grad():
        layer.weight.copy_(tp.tensor(weight))
        layer.bias.copy_(tp.tensor(bias))
    out = {}
    for step in range(2):
        xs = tp.tensor(x[rows] * (step + 1), requires_grad=True)
        y = layer(xs)
        (y * tp.tensor(grad[rows])).sum().backward()
        out[step] = {"y": y.detach().numpy(), "x_grad": xs.grad.numpy()}
    # (an empty slice gives the weight and bias no gradient, as in PyTorch: None)
    for name in ("weight", "bias"):
        g = getattr(layer, name).grad
        out[f"{name}_grad"] = None if g is None else g.numpy()
    out["running"] = (layer.running_mean.numpy(), layer.running_var.numpy())
    return out


def unused_parameters_job(rank, world):
    """find_unused_parameters: a branch only rank 0 uses, a layer no rank uses; and the
    error when the flag is missing."""

    class TwoHeads(tp.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = tp.nn.Linear(4, 4)
            self.head = tp.nn.Linear(4, 2)
            self.rank0_only = tp.nn.Linear(4, 2)
            self.never = tp.nn.Linear(4, 2)

        def forward(self, x, use_extra):
            h = self.body(x)
            out = self.head(h)
            if use_extra:
                out = out + self.rank0_only(h)
            return out

    x = tp.tensor(np.random.RandomState(rank).randn(5, 4).astype(np.float32))
    out = {}
    tp.manual_seed(0)
    model = DistributedDataParallel(TwoHeads(), find_unused_parameters=True)
    model(x, use_extra=rank == 0).sum().backward()
    out["rank0_only.grad"] = model.module.rank0_only.weight.grad.numpy().copy()
    out["never.grad"] = model.module.never.weight.grad
    out["x"] = x.numpy().copy()

    tp.manual_seed(0)
    strict = DistributedDataParallel(TwoHeads())
    strict(x, use_extra=False).sum().backward()      # rank0_only and never: no gradient
    try:
        strict(x, use_extra=False)
        out["strict"] = None
    except Exception as error:
        out["strict"] = (type(error).__name__, str(error))
    return out


def killed_rank_job(rank, world):
    """Rank 1 dies (SIGKILL) after a first collective; the others try a second one."""
    t = tp.ones(4)
    dist.all_reduce(t)
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.2)
    started = time.monotonic()
    try:
        for _ in range(3):
            dist.all_reduce(t)
        return ("no error", time.monotonic() - started)
    except Exception as error:
        return (type(error).__name__, str(error))


def train_command_job(rank, world):
    """`tensorplay train` as torchrun runs it (the group is joined already), with the
    optional extras tqdm and matplotlib missing (an import of either fails here): returns
    what this rank printed on stdout and stderr, and whether the checkpoint and the
    curves' CSV are there."""
    import io
    import sys
    import tempfile

    from tensorplay.__main__ import main
    folder = os.path.join(tempfile.gettempdir(), f"tp-ddp-train-{os.environ['MASTER_PORT']}")
    printed, progress = io.StringIO(), io.StringIO()
    missing = {name: sys.modules.pop(name, None) for name in ("tqdm", "matplotlib")}
    sys.modules.update(dict.fromkeys(missing))        # None in sys.modules: ImportError
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(progress):
            main(["train", "--model", "mlp", "--epochs", "1", "--limit", "64",
                  "--out", folder])
    finally:
        for name, module in missing.items():
            del sys.modules[name]
            if module is not None:
                sys.modules[name] = module
    dist.barrier()                      # rank 0 has saved
    saved = [os.path.exists(os.path.join(folder, name))
             for name in ("checkpoint.tp", "curves.csv", "curves.png")]
    dist.barrier()                      # both have looked
    if rank == 0:
        with open(os.path.join(folder, "curves.csv")) as f:
            saved.append(f.read())
        shutil.rmtree(folder)
    return printed.getvalue(), progress.getvalue(), saved
