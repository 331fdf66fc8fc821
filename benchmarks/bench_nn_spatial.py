"""conv2d forward and forward+backward, TensorPlay (im2col + one matmul per group; stride 1
reads the columns as runs of the flat padded planes, see cpu_kernels/conv.py) against
PyTorch in the same run.

    python benchmarks/bench_nn_spatial.py

Target: conv2d forward and backward on a 32x3x32x32 batch within 3x PyTorch
CPU. The convolutions of the digits CNN that `tensorplay train` runs (1 -> 16 channels,
whose input needs no gradient, and 16 -> 32, both 3x3 with padding 1 on 8x8 images) and a
ResNet block's 32 -> 32 on 16x16, at batch 1, 8, 32 and 64 (target: forward and forward +
backward within 1.3x PyTorch at each), timed in alternation with PyTorch (the fastest of
many rounds of each, so both see the same load) and summed up as one table of ratios; a
layer of 32 or more input channels also with tp.backends.cpu.allow_winograd = True.

    python benchmarks/bench_nn_spatial.py --batches    only the table
    python benchmarks/bench_nn_spatial.py --batches --cpu-time    timed by CPU time
        (benchmarks/common.py: steadier than wall time on a busy machine)

Threads: both libraries get BENCH_THREADS (default 1): PyTorch through set_num_threads,
NumPy's OpenBLAS through OPENBLAS_NUM_THREADS, set before NumPy loads (as in
bench_reduction.py); spinning BLAS threads on a busy machine make every timing noise.
"""
from __future__ import annotations

import os
import sys

THREADS = int(os.environ.get("BENCH_THREADS", "1"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(THREADS))
os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import fmt_time, paired_min, report, timeit  # noqa: E402

import tensorplay as tp  # noqa: E402
import tensorplay.nn.functional as F  # noqa: E402

# (what, input shape, weight shape, does the input need a gradient, target)
LAYERS = (
    ("3 -> 16 channels, 3x3", (32, 3, 32, 32), (16, 3, 3, 3), True, "within 3x torch"),
    ("32 -> 64 channels, 3x3", (32, 32, 32, 32), (64, 32, 3, 3), True, "within 3x torch"),
)

# The per-batch table: (name, C_in, C_out, image size, does the input need a gradient).
BATCH_LAYERS = (
    ("digits conv1 1->16 8x8", 1, 16, 8, False),
    ("digits conv2 16->32 8x8", 16, 32, 8, True),
    ("ResNet 32->32 16x16", 32, 32, 16, True),
)
BATCHES = (1, 8, 32, 64)


def bench(what, x_shape, w_shape, input_grad, target):
    import torch
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal(x_shape).astype(np.float32)
    w_np = rng.standard_normal(w_shape).astype(np.float32)
    b_np = rng.standard_normal(w_shape[0]).astype(np.float32)
    x, w, b = (tp.tensor(a, requires_grad=True) for a in (x_np, w_np, b_np))
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x_np, w_np, b_np))
    x.requires_grad_(input_grad)
    xt.requires_grad_(input_grad)

    def tp_forward():
        with tp.no_grad():
            F.conv2d(x, w, b, padding=1)

    def torch_forward():
        with torch.no_grad():
            torch.nn.functional.conv2d(xt, wt, bt, padding=1)

    def tp_step():
        F.conv2d(x, w, b, padding=1).sum().backward()

    def torch_step():
        torch.nn.functional.conv2d(xt, wt, bt, padding=1).sum().backward()

    shape = "x".join(map(str, x_shape))
    targets = [target] if target else None
    report(f"conv2d forward, {shape}, {what}",
           [("tp", timeit(tp_forward)), ("torch", timeit(torch_forward))], targets)
    report(f"conv2d forward + backward, {shape}, {what}",
           [("tp", timeit(tp_step)), ("torch", timeit(torch_step))], targets)


def _pair(torch, name, c_in, c_out, size, batch, input_grad):
    """((tp forward, torch forward), (tp forward + backward, torch's)) closures."""
    rng = np.random.default_rng(0)
    arrays = (rng.standard_normal((batch, c_in, size, size)).astype(np.float32),
              rng.standard_normal((c_out, c_in, 3, 3)).astype(np.float32),
              rng.standard_normal(c_out).astype(np.float32))
    x, w, b = (tp.tensor(a, requires_grad=True) for a in arrays)
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in arrays)
    x.requires_grad_(input_grad)
    xt.requires_grad_(input_grad)
    TF = torch.nn.functional

    def tp_forward():
        with tp.no_grad():
            F.conv2d(x, w, b, padding=1)

    def torch_forward():
        with torch.no_grad():
            TF.conv2d(xt, wt, bt, padding=1)
    return ((tp_forward, torch_forward),
            (lambda: F.conv2d(x, w, b, padding=1).sum().backward(),
             lambda: TF.conv2d(xt, wt, bt, padding=1).sum().backward()))


def bench_batches(torch):
    """The table of tp/torch ratios per layer and batch size (target: 1.3x)."""
    print("\nconv2d per batch size, tp/torch (timed in alternation; target: within 1.3x)")
    print(f"  {'layer':<26}{'batch':>6}{'forward':>10}{'fwd+bwd':>10}   tp fwd, fwd+bwd")
    for name, c_in, c_out, size, input_grad in BATCH_LAYERS:
        for batch in BATCHES:
            forward, step = _pair(torch, name, c_in, c_out, size, batch, input_grad)
            work = batch * c_in * c_out * size * size   # calls per round: ~3 ms of work
            calls = max(2, int(3e6 / (work + 3e5)))
            f_tp, f_torch = paired_min(*forward, batch=calls, rounds=20)
            s_tp, s_torch = paired_min(*step, batch=max(2, calls // 3), rounds=20)
            line = (f"  {name:<26}{batch:>6}{f_tp / f_torch:>9.2f}x{s_tp / s_torch:>9.2f}x"
                    f"   {fmt_time(f_tp).strip()}, {fmt_time(s_tp).strip()}")
            if c_in >= 32:   # where Winograd's rule may admit it: its ratios too
                tp.backends.cpu.allow_winograd = True
                try:
                    f_w, f_torch = paired_min(*forward, batch=calls, rounds=20)
                    s_w, s_torch = paired_min(*step, batch=max(2, calls // 3), rounds=20)
                finally:
                    tp.backends.cpu.allow_winograd = False
                line += f"   allow_winograd: {f_w / f_torch:.2f}x, {s_w / s_torch:.2f}x"
            print(line)


def main():
    import torch
    torch.set_num_threads(THREADS)
    print(f"threads: {THREADS} (BENCH_THREADS)")
    if "--batches" not in sys.argv[1:]:
        for layer in LAYERS:
            bench(*layer)
    bench_batches(torch)


if __name__ == "__main__":
    main()
