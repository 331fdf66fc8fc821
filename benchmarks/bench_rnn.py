"""LSTM forward + backward, against PyTorch in the same run.

    python benchmarks/bench_rnn.py

Target: LSTM(input 32, hidden 64, 1 layer), sequence 20, batch 16, forward + backward
within 3x PyTorch on the CPU.

Threads: both libraries get BENCH_THREADS (default 1), as in bench_reduction.py: PyTorch
through set_num_threads, NumPy's OpenBLAS through OPENBLAS_NUM_THREADS (set before NumPy
loads). On a busy machine spinning BLAS threads otherwise turn a 0.1 ms matmul into 5 ms.

What it costs: one input-projection matmul for the whole sequence, then the recurrence
as one op each way (_rnn_fused.py: _lstm_sequence forward, _lstm_sequence_backward): on
the CPU a NumPy loop of about ten calls per step (cpu_kernels/rnn.py), so dispatch is
paid once per sequence, not a dozen times per step. Measured (one thread, a busy 2-core
machine): 9.5x torch when every step was tp ops, 2.4x with the two ops.
"""
from __future__ import annotations

import os
import sys

THREADS = int(os.environ.get("BENCH_THREADS", "1"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(THREADS))
os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import report, timeit  # noqa: E402

import tensorplay as tp  # noqa: E402

SEQ, BATCH, INPUT, HIDDEN = 20, 16, 32, 64


def bench_lstm(torch):
    torch.manual_seed(0)
    tm = torch.nn.LSTM(INPUT, HIDDEN)
    m = tp.nn.LSTM(INPUT, HIDDEN)
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    data = np.random.default_rng(0).standard_normal((SEQ, BATCH, INPUT)).astype(np.float32)
    x, xt = tp.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)

    def tp_forward():
        with tp.no_grad():
            m(x)

    def torch_forward():
        with torch.no_grad():
            tm(xt)

    def tp_step():
        out, (h, c) = m(x)
        (out.sum() + c.sum()).backward()

    def torch_step():
        out, (h, c) = tm(xt)
        (out.sum() + c.sum()).backward()

    shape = f"seq {SEQ}, batch {BATCH}, input {INPUT}, hidden {HIDDEN}, float32"
    report(f"LSTM forward (no grad), {shape}",
           [("tp", timeit(tp_forward)), ("torch", timeit(torch_forward))])
    t_tp, t_torch = timeit(tp_step), timeit(torch_step)
    report(f"LSTM forward + backward, {shape}", [("tp", t_tp), ("torch", t_torch)],
           ["within 3x torch"])
    print(f"  per time step (tp): {t_tp / SEQ * 1e6:.1f} us forward + backward")


def main():
    import torch
    torch.set_num_threads(THREADS)
    bench_lstm(torch)


if __name__ == "__main__":
    main()
