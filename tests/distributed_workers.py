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
    out = {"collectives": collectives_job(rank, world), "ddp": ddp_job(rank, world),
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
    """`tensorplay train` as torchrun runs it (the group is joined already): returns
    what this rank printed and whether the checkpoint is there."""
    import io
    import tempfile

    from tensorplay.__main__ import main
    folder = os.path.join(tempfile.gettempdir(), f"tp-ddp-train-{os.environ['MASTER_PORT']}")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        main(["train", "--model", "mlp", "--epochs", "1", "--limit", "64", "--no-progress",
              "--out", folder])
    dist.barrier()                      # rank 0 has saved
    saved = os.path.exists(os.path.join(folder, "checkpoint.tp"))
    dist.barrier()                      # both have looked
    if rank == 0:
        shutil.rmtree(folder)
    return printed.getvalue(), saved
