"""`tp.profiler.profile()`: time every op call the generated front doors make.

    with tp.profiler.profile(record_shapes=True) as prof:
        y = model(x)
    print(prof.table())

The front doors check one flag (`observers.active`); only while a profile is
open do calls take the slower, recording path.

`profile(record_kernels=True)` also counts the kernel selection's choices while it is
open (tp.dispatch.cache_stats) and the table gains a column: the backend kernel that ran
for each op, with its number of calls when several did.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from tensorplay._frontdoor import observers
from tensorplay.dispatch.dispatcher import dispatcher
from tensorplay.dispatch.stats import stats


@dataclass
class Event:
    name: str
    start_ns: int
    end_ns: int
    shapes: list | None

    @property
    def duration_us(self):
        return (self.end_ns - self.start_ns) / 1000


class profile:
    def __init__(self, record_shapes=False, record_kernels=False):
        self.record_shapes = record_shapes
        self.record_kernels = record_kernels
        self.kernels = {}            # op name -> {kernel name: calls}, when recorded
        self.events = []
        self._depth = 0
        self._stats_before = None

    def _listen(self, name, start, end, shapes):
        self.events.append(Event(name, start, end, shapes))

    def __enter__(self):
        observers.listeners.append(self._listen)
        observers.active = True
        observers.record_shapes = observers.record_shapes or self.record_shapes
        if self.record_kernels:
            # Count from zero for this profile, and give back whatever was counted before.
            self._stats_before = (stats.on, dict(stats.ops))
            stats.ops.clear()
            dispatcher.enable_stats(True)
        return self

    def __exit__(self, *exc):
        observers.listeners.remove(self._listen)
        observers.active = bool(observers.listeners)
        if not observers.listeners:
            observers.record_shapes = False
        if self.record_kernels:
            self.kernels = {op: dict(row.kernels) for op, row in stats.ops.items()
                            if row.kernels}
            was_on, before = self._stats_before
            stats.ops.clear()
            stats.ops.update(before)
            dispatcher.enable_stats(was_on)

    def key_averages(self):
        """{op name: (calls, total us)}; nested calls (an op inside an op) count in both."""
        out = defaultdict(lambda: [0, 0.0])
        for e in self.events:
            out[e.name][0] += 1
            out[e.name][1] += e.duration_us
        return {k: tuple(v) for k, v in out.items()}

    def table(self, sort_by="total"):
        rows = sorted(self.key_averages().items(), key=lambda kv: -kv[1][1])
        kernel_header = "  kernel" if self.record_kernels else ""
        lines = [f"{'op':<28}{'calls':>8}{'total us':>12}{'avg us':>10}{kernel_header}"]
        for name, (calls, total) in rows:
            line = f"{name:<28}{calls:>8}{total:>12.1f}{total / calls:>10.1f}"
            if self.record_kernels:
                line += "  " + self.kernel_text(name)
            lines.append(line)
        return "\n".join(lines)

    def kernel_text(self, op):
        """The kernel(s) that ran for `op`: one name, or each with its calls."""
        ran = self.kernels.get(op, {})
        if len(ran) == 1:
            return next(iter(ran))
        return ", ".join(f"{k} x{n}" for k, n in sorted(ran.items(), key=lambda kv: -kv[1]))
