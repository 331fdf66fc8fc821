"""The FFT against PyTorch and NumPy, in the same run: rfft of 2**20 float32 samples, and
for scale an fft of 2**20 complex64 values and a batch of 64 rfft2 of 256 x 256.

    python benchmarks/bench_fft.py

Target: tp.fft.rfft of 2**20 float32 within 1.5x numpy.fft.rfft. All three run pocketfft
(TensorPlay through scipy.fft, which keeps float32 -> complex64; NumPy computes in float64
and returns complex128; PyTorch's CPU build may run MKL's FFT instead).

Threads: BENCH_THREADS (default 1) for every library, as in bench_reduction.py.
"""
from __future__ import annotations

import os
import sys

THREADS = int(os.environ.get("BENCH_THREADS", "1"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(THREADS))
os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))
os.environ.setdefault("MKL_NUM_THREADS", str(THREADS))

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import report, timeit  # noqa: E402

import tensorplay as tp  # noqa: E402


def main():
    import torch
    torch.set_num_threads(THREADS)
    print(f"threads: {THREADS} (BENCH_THREADS)")
    rng = np.random.default_rng(0)

    x = rng.standard_normal(1 << 20).astype(np.float32)
    tx, xx = tp.tensor(x), torch.from_numpy(x)
    t_tp = timeit(lambda: tp.fft.rfft(tx))
    t_np = timeit(lambda: np.fft.rfft(x))
    report("fft.rfft, 2**20 float32",
           [("tp.fft.rfft", t_tp),
            ("torch.fft.rfft", timeit(lambda: torch.fft.rfft(xx))),
            ("numpy.fft.rfft", t_np)],
           ["within 1.5x numpy"])
    print(f"  tp / numpy = {t_tp / t_np:.2f} (target <= 1.5): "
          f"{'met' if t_tp <= 1.5 * t_np else 'NOT met'}")

    z = (rng.standard_normal(1 << 20) + 1j * rng.standard_normal(1 << 20)).astype(np.complex64)
    tz, xz = tp.tensor(z), torch.from_numpy(z)
    report("fft.fft, 2**20 complex64",
           [("tp.fft.fft", timeit(lambda: tp.fft.fft(tz))),
            ("torch.fft.fft", timeit(lambda: torch.fft.fft(xz))),
            ("numpy.fft.fft", timeit(lambda: np.fft.fft(z)))])

    images = rng.standard_normal((64, 256, 256)).astype(np.float32)
    ti, xi = tp.tensor(images), torch.from_numpy(images)
    report("fft.rfft2, 64 x (256x256) float32",
           [("tp.fft.rfft2", timeit(lambda: tp.fft.rfft2(ti))),
            ("torch.fft.rfft2", timeit(lambda: torch.fft.rfft2(xi))),
            ("numpy.fft.rfft2", timeit(lambda: np.fft.rfft2(images)))])


if __name__ == "__main__":
    main()
