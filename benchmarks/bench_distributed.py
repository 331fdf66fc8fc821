"""Data-parallel training steps: DistributedDataParallel on 2 processes against 1, on the
same global batch, and how much of the gradient all-reduce backward hides.

    python benchmarks/bench_distributed.py            MLP 784-1024-1024-10, global batch 256
    BENCH_STEPS=40 python benchmarks/bench_distributed.py

Each configuration runs in fresh processes (gloo on loopback), all ranks time the same
fixed number of steps after a barrier, and rank 0 reports the slowest rank's time:

    no DDP        the bare model, one process
    1 process     DDP over a group of one (the all-reduces are local copies)
    2 processes   DDP, each rank on half the global batch
    no_sync       the same 2-process step without communication (DDP's no_sync)
    all-reduce    the same buckets reduced after backward, one after the other

hidden fraction = 1 - (DDP step - no_sync step) / all-reduce time: the share of the
communication that ran while backward was still computing. On a 2-core machine two
processes share the cores with gloo's threads, so the 2-process speed-up is bounded by
the cores, not by the framework; the ratios are what to compare between runs.
"""
from __future__ import annotations

import datetime
import multiprocessing
import os
import socket
import statistics
import sys
import time

THREADS = int(os.environ.get("BENCH_THREADS", "1"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(THREADS))
os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

STEPS = int(os.environ.get("BENCH_STEPS", "20"))
WARMUP = 3
GLOBAL_BATCH = 256
SIZES = (784, 1024, 1024, 10)
BUCKET_CAP_MB = 2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(rank, world, port, results):
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    import numpy as np

    import tensorplay as tp
    dist = tp.distributed
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))

    tp.manual_seed(0)
    layers = []
    for fan_in, fan_out in zip(SIZES, SIZES[1:]):
        layers += [tp.nn.Linear(fan_in, fan_out), tp.nn.ReLU()]
    model = tp.nn.parallel.DistributedDataParallel(tp.nn.Sequential(*layers[:-1]),
                                                   bucket_cap_mb=BUCKET_CAP_MB)
    optimizer = tp.optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.RandomState(rank)
    local = GLOBAL_BATCH // world
    x = tp.tensor(rng.randn(local, SIZES[0]).astype(np.float32))
    y = tp.tensor(rng.randint(0, SIZES[-1], size=local).astype(np.int64))

    def step(net=model):
        optimizer.zero_grad()
        tp.nn.functional.cross_entropy(net(x), y).backward()
        optimizer.step()

    def plain_step():
        step(model.module)

    def local_step():
        with model.no_sync():
            step()

    def reduce_after():
        for bucket in model.reducer.buckets:
            dist.all_reduce(bucket.buffer)

    def seconds_per_call(fn):
        for _ in range(WARMUP):
            fn()
        samples = []
        for _ in range(3):
            dist.barrier()
            start = time.perf_counter()
            for _ in range(STEPS):
                fn()
            samples.append((time.perf_counter() - start) / STEPS)
        slowest = tp.tensor([statistics.median(samples)], dtype=tp.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        return slowest.item()

    times = {"ddp": seconds_per_call(step), "plain": seconds_per_call(plain_step),
             "no_sync": seconds_per_call(local_step),
             "all_reduce": seconds_per_call(reduce_after),
             "buckets": len(model.reducer.buckets),
             "params": sum(p.numel() for p in model.parameters())}
    dist.destroy_process_group()
    if rank == 0:
        results.put(times)


def measure(world):
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=rank_main, args=(r, world, port, results))
             for r in range(world)]
    for p in procs:
        p.start()
    times = results.get(timeout=600)
    for p in procs:
        p.join()
    return times


def main():
    from common import fmt_time

    one = measure(1)
    two = measure(2)
    print(f"\nDDP training step, MLP {'-'.join(map(str, SIZES))} ({one['params']:,} "
          f"parameters, {two['buckets']} buckets of <= {BUCKET_CAP_MB} MB), global batch "
          f"{GLOBAL_BATCH}, {STEPS} steps x 3, {THREADS} BLAS thread(s) per process")
    load = os.getloadavg()[0]
    print(f"  machine: {os.cpu_count()} cores, load average {load:.1f} (above the core count, "
          f"the processes wait for cores and the ratios say little)")
    print(f"  1 process, no DDP (batch {GLOBAL_BATCH})  {fmt_time(one['plain'])}")
    print(f"  1 process  (batch {GLOBAL_BATCH})      {fmt_time(one['ddp'])}"
          f"  DDP's own cost = {one['ddp'] / one['plain']:5.2f}x")
    print(f"  2 processes (batch {GLOBAL_BATCH // 2} each)  {fmt_time(two['ddp'])}"
          f"  speed-up 1 -> 2 = {one['ddp'] / two['ddp']:5.2f}x")
    exposed = max(0.0, two["ddp"] - two["no_sync"])
    hidden = min(1.0, max(0.0, 1 - exposed / two["all_reduce"]))
    print(f"  2 processes, no_sync (no communication)  {fmt_time(two['no_sync'])}")
    print(f"  all-reduce of every bucket after backward {fmt_time(two['all_reduce'])}")
    print(f"  all-reduce time hidden under backward: {hidden:6.1%} "
          f"(exposed {fmt_time(exposed).strip()} of {fmt_time(two['all_reduce']).strip()})")


if __name__ == "__main__":
    main()
