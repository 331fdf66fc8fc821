"""`tp.utils.benchmark`: timing statements the way torch.utils.benchmark does.

    from tensorplay.utils.benchmark import Timer, Compare
    m = Timer(stmt="x @ x", globals={"x": x}, label="matmul", description="64").timeit(100)
    print(m)                      # a Measurement: median, IQR, runs, threads
    Compare([m, ...]).print()     # a table: rows by sub_label/stmt, columns by description

The Timer synchronises the `cuda` device before it reads the clock (a GPU kernel is
asynchronous: without it, a launch would be timed, not the kernel). `do_bench` is the
kernel-level timer (events around each run, the cache flushed between runs) that
`tp.dispatch.tune` and the Triton kernels' autotuning use.

Laid out as PyTorch's package: the pieces live in `utils/` (common.py: TaskSpec,
Measurement, select_unit; timer.py: Timer; compare.py: Compare).
"""
from tensorplay.utils.benchmark.utils.common import *  # noqa: F401,F403
from tensorplay.utils.benchmark.utils.timer import *  # noqa: F401,F403
from tensorplay.utils.benchmark.utils.compare import *  # noqa: F401,F403
from tensorplay._device_timing import do_bench  # noqa: F401
