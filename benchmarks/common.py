"""Timing helpers shared by the benchmarks: best-of-N median timings in one process,
so ratios compare TensorPlay, PyTorch and NumPy measured in the same run."""
from __future__ import annotations

import statistics
import sys
import time

# The clock of timeit and paired_min: wall time, or with `--cpu-time` on a benchmark's
# command line this process's CPU time. On a machine that other processes keep busy, the
# wall time of a timed batch includes the time this process waited for a core, which
# varies from batch to batch by more than the differences being measured; its CPU time
# does not (both libraries run on one thread, BENCH_THREADS=1, so CPU time is their time).
clock = time.process_time if "--cpu-time" in sys.argv[1:] else time.perf_counter


def _calls_for(fn, seconds):
    """How many calls of `fn()` (doubling from 1) take at least `seconds`: a batch size."""
    n = 1
    while True:
        start = clock()
        for _ in range(n):
            fn()
        if clock() - start >= seconds or n >= 1 << 20:
            return n
        n *= 2


def timeit(fn, *, min_time=0.2, repeats=5):
    """Median seconds per call of `fn()`, over `repeats` batches of at least `min_time`."""
    fn()   # warm up caches (kernel selection, allocation)
    n = _calls_for(fn, min_time / repeats)
    samples = []
    for _ in range(repeats):
        start = clock()
        for _ in range(n):
            fn()
        samples.append((clock() - start) / n)
    return statistics.median(samples)


def paired_min(*fns, batch=200, rounds=60):
    """(seconds per call of each fn): each the fastest of `rounds` batches, all timed in
    alternation so that each sees the same load. On a shared machine the minimum is the
    estimate least disturbed by other processes."""
    for fn in fns:
        fn()
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            start = clock()
            for _ in range(batch):
                fn()
            best[i] = min(best[i], (clock() - start) / batch)
    return tuple(best)


def paired(*fns, min_time=0.02, rounds=15):
    """paired_min of fns in batches of at least `min_time` of the first (sized by
    _calls_for, as timeit's): for cases of a millisecond or more, whose ratio in
    two timeit calls one after the other moved by 10-15% with the load in between."""
    fns[0]()
    return paired_min(*fns, batch=_calls_for(fns[0], min_time), rounds=rounds)


def fmt_time(seconds):
    if seconds < 1e-3:
        return f"{seconds * 1e6:8.2f} us"
    if seconds < 1:
        return f"{seconds * 1e3:8.2f} ms"
    return f"{seconds:8.2f} s "


def report(title, rows, targets=None):
    """rows: [(label, seconds)]; the first row is TensorPlay, ratios are against it."""
    print(f"\n{title}")
    base = rows[0][1]
    for label, t in rows:
        ratio = "" if t is base else f"  tp/{label.split()[0]} = {base / t:5.2f}x"
        print(f"  {label:<28}{fmt_time(t)}{ratio}")
    for text in targets or ():
        print(f"  target: {text}")
