"""`tp.profiler.profile()`: time every op call the generated front doors make.

    with tp.profiler.profile(record_shapes=True) as prof:
        y = model(x)
    print(prof.table())

The front doors check one flag (`observers.active`); only while a profile is
open do calls take the slower, recording path.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from tensorplay._frontdoor import observers


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
    def __init__(self, record_shapes=False):
        self.record_shapes = record_shapes
        self.events = []
        self._depth = 0

    def _listen(self, name, start, end, shapes):
        self.events.append(Event(name, start, end, shapes))

    def __enter__(self):
        observers.listeners.append(self._listen)
        observers.active = True
        observers.record_shapes = observers.record_shapes or self.record_shapes
        return self

    def __exit__(self, *exc):
        observers.listeners.remove(self._listen)
        observers.active = bool(observers.listeners)
        if not observers.listeners:
            observers.record_shapes = False

    def key_averages(self):
        """{op name: (calls, total us)}; nested calls (an op inside an op) count in both."""
        out = defaultdict(lambda: [0, 0.0])
        for e in self.events:
            out[e.name][0] += 1
            out[e.name][1] += e.duration_us
        return {k: tuple(v) for k, v in out.items()}

    def table(self, sort_by="total"):
        rows = sorted(self.key_averages().items(), key=lambda kv: -kv[1][1])
        lines = [f"{'op':<28}{'calls':>8}{'total us':>12}{'avg us':>10}"]
        for name, (calls, total) in rows:
            lines.append(f"{name:<28}{calls:>8}{total:>12.1f}{total / calls:>10.1f}")
        return "\n".join(lines)
