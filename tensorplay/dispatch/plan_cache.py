"""The execution-plan cache: the second cache level of kernel selection.

The registry's choice cache (kernel_selection.py) answers "which kernel"; this one answers "how
to run it" for a kernel that has been chosen: the launch plan worked out from the
arguments' shapes, computed once per (kernel, shape signature) and reused:

    Triton   the merged dims and strides, the compiled template, the grid and BLOCK
    CPU      im2col geometry: padded buffer shape, column layout, kernel offsets

A kernel asks for its plan with a *signature*, the part of its arguments the plan
depends on, and a function that makes the plan:

    plan = plans.get("conv.im2col", (x.shape, kernel, stride, padding, dilation, groups),
                     lambda: _Columns(x.shape, kernel, stride, padding, dilation, groups))

A signature is as coarse as the kernel allows: a kernel whose plan only depends on the
rank and on whether the last dim is a multiple of 4 passes `(rank, last % 4 == 0)`,
and one plan then serves every shape of that kind. A plan must be a pure function of
its signature and never hold a tensor.

Plans are dropped when the registry version moves (a registration may change which
kernel runs, and with it what a plan means), like the choice cache; the oldest go
first when a kernel has more than LIMIT signatures. `plans.enabled = False` turns the
cache off (every call makes its plan; benchmarks/bench_kernel_selection.py measures
the difference); `plans.stats()` counts hits and misses per kernel.
"""
from __future__ import annotations

from tensorplay.dispatch.kernel_selection import registry_version

__all__ = ["PlanCache", "plans"]


class PlanCache:
    LIMIT = 256       # signatures kept per kernel

    def __init__(self):
        self.enabled = True
        self.version = -1
        self.by_kernel = {}      # kernel name -> {signature: plan}
        self.counts = {}         # kernel name -> [hits, misses]

    def get(self, kernel, signature, make):
        """The plan of `kernel` for `signature`, made by `make()` on a miss."""
        if not self.enabled:
            return make()
        if self.version != registry_version():
            self.by_kernel.clear()
            self.version = registry_version()
        table = self.by_kernel.get(kernel)
        if table is None:
            table = self.by_kernel[kernel] = {}
            self.counts.setdefault(kernel, [0, 0])
        plan = table.get(signature)
        if plan is not None:
            self.counts[kernel][0] += 1
            return plan
        self.counts[kernel][1] += 1
        plan = make()
        if len(table) >= self.LIMIT:
            del table[next(iter(table))]
        table[signature] = plan
        return plan

    def stats(self):
        """{kernel: {"hits": n, "misses": n, "plans": number kept}}."""
        return {k: {"hits": h, "misses": m, "plans": len(self.by_kernel.get(k, ()))}
                for k, (h, m) in self.counts.items()}

    def clear(self):
        self.by_kernel.clear()
        self.counts.clear()


plans = PlanCache()
