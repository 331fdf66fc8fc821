"""Training steps end to end, against PyTorch in the same run.

    python benchmarks/bench_training.py          the two ratios below, and their parts
    python benchmarks/bench_training.py --full   also the default `tensorplay train` run

Targets: one epoch of the digits CNN of `tensorplay train` (1,437 images, batch 32, Adam)
within 2x PyTorch; an MLP 784-512-512-10 step on random data, batch 128 (forward,
backward, Adam step) within 1.5x.

Threads: both libraries get BENCH_THREADS (default 1): PyTorch through set_num_threads,
NumPy's OpenBLAS through OPENBLAS_NUM_THREADS, set before NumPy loads (as in
bench_reduction.py). On a busy 2-core machine OpenBLAS's default two spinning threads
make a 128x784 @ 784x512 product 5-30x slower than one thread does.
"""
from __future__ import annotations

import io
import os
import sys
import time

THREADS = int(os.environ.get("BENCH_THREADS", "1"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(THREADS))
os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import fmt_time, report, timeit  # noqa: E402

import tensorplay as tp  # noqa: E402
from tensorplay.train import data as train_data  # noqa: E402
from tensorplay.train.models import DigitsCNN  # noqa: E402
from tensorplay.utils.data import DataLoader, TensorDataset  # noqa: E402


def torch_cnn(torch, width=16):
    """DigitsCNN written in torch.nn, layer for layer."""
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
        nn.Conv2d(width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.25), nn.Linear(2 * width * 16, 10))


def epoch_fn(lib, model, loader):
    """One training epoch as a closure: lib is tensorplay or torch (same API)."""
    optimizer = lib.optim.Adam(model.parameters(), lr=2e-3)

    def run():
        model.train()
        for x, y in loader:
            loss = lib.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return run


def phases_fn(lib, model, loader):
    """One epoch timed by phase: (forward + loss, zero_grad + backward, optimizer step)."""
    optimizer = lib.optim.Adam(model.parameters(), lr=2e-3)

    def run():
        model.train()
        spent = [0.0, 0.0, 0.0]
        for x, y in loader:
            start = time.perf_counter()
            loss = lib.nn.functional.cross_entropy(model(x), y)
            forward = time.perf_counter()
            optimizer.zero_grad()
            loss.backward()
            backward = time.perf_counter()
            optimizer.step()
            end = time.perf_counter()
            spent[0] += forward - start
            spent[1] += backward - forward
            spent[2] += end - backward
        return spent
    return run


def best_phases(run, repeats=3):
    """Each phase's smallest epoch total over `repeats` epochs (after one warm-up)."""
    run()
    totals = [run() for _ in range(repeats)]
    return [min(t[i] for t in totals) for i in range(3)]


def bench_cnn_epoch(torch):
    split = train_data.digits(seed=0)
    images, labels = split.train.tensors
    tp.manual_seed(0)
    tp_loader = DataLoader(split.train, batch_size=32, shuffle=True,
                           generator=tp.Generator().manual_seed(0))
    tp_epoch = epoch_fn(tp, DigitsCNN(), tp_loader)

    torch.manual_seed(0)
    torch_set = torch.utils.data.TensorDataset(torch.tensor(images.numpy()),
                                               torch.tensor(labels.numpy()))
    torch_loader = torch.utils.data.DataLoader(torch_set, batch_size=32, shuffle=True)
    torch_model = torch_cnn(torch)
    torch_epoch = epoch_fn(torch, torch_model, torch_loader)
    report(f"digits CNN: one epoch ({len(split.train)} images, batch 32, Adam)",
           [("tp", timeit(tp_epoch, min_time=0, repeats=3)),
            ("torch", timeit(torch_epoch, min_time=0, repeats=3))],
           ["within 2x torch"])
    tp_phases = best_phases(phases_fn(tp, DigitsCNN(), tp_loader))
    torch_phases = best_phases(phases_fn(torch, torch_model, torch_loader))
    for name, ours, theirs in zip(("forward + loss", "zero_grad + backward",
                                   "optimizer step"), tp_phases, torch_phases):
        report(f"digits CNN epoch, {name} only", [("tp", ours), ("torch", theirs)])


def bench_mlp_step(torch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 784)).astype(np.float32)
    y = rng.integers(0, 10, 128)

    def mlp(nn):
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                             nn.Linear(512, 10))

    def step_fns(lib, model, x, y):
        """(the whole step, forward + backward only, the Adam step only)."""
        optimizer = lib.optim.Adam(model.parameters(), lr=1e-3)

        def gradients():
            loss = lib.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()

        def step():
            gradients()
            optimizer.step()
        return step, gradients, optimizer.step
    tp.manual_seed(0)
    torch.manual_seed(0)
    tp_fns = step_fns(tp, mlp(tp.nn), tp.tensor(x), tp.tensor(y))
    torch_fns = step_fns(torch, mlp(torch.nn), torch.tensor(x), torch.tensor(y))
    titles = ("forward + backward + Adam step", "forward + backward only",
              "Adam step only (669,706 parameters)")
    for title, tp_fn, torch_fn in zip(titles, tp_fns, torch_fns):
        report(f"MLP 784-512-512-10, batch 128: {title}",
               [("tp", timeit(tp_fn)), ("torch", timeit(torch_fn))],
               ["within 1.5x torch"] if title == titles[0] else None)


def bench_full_run():
    """The default `tensorplay train` (the CNN, 10 epochs), as a user runs it."""
    from tensorplay.train.loop import run_training
    from tensorplay.train.options import MODEL_DEFAULTS, DEFAULT_LR
    options = dict(MODEL_DEFAULTS["cnn"], model="cnn", lr=DEFAULT_LR["adam"], seed=0,
                   context=32, limit=None, device="cpu", explain=False, profile=False,
                   threads=THREADS,
                   out=os.path.join("runs", "bench-cnn"))
    start = time.perf_counter()
    result = run_training(options, out=io.StringIO(), progress=False)
    seconds = time.perf_counter() - start
    print(f"\ndefault `tensorplay train` (cnn, 10 epochs): test accuracy "
          f"{result['test_acc']:.2%}, wall time {fmt_time(seconds)}")
    print("  target: >= 97% in under 2 minutes")


def main():
    import torch
    torch.set_num_threads(THREADS)
    bench_cnn_epoch(torch)
    bench_mlp_step(torch)
    if "--full" in sys.argv[1:]:
        bench_full_run()


if __name__ == "__main__":
    main()
