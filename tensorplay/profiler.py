"""`tp.profiler`: time every op call, forward and backward, as PyTorch's profiler does.

    with tp.profiler.profile(record_shapes=True) as prof:
        with tp.profiler.record_function("forward"):
            loss = model(x).sum()
        loss.backward()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")      # open in https://ui.perfetto.dev

What is recorded, and where it comes from:

- an `op` event per call that enters the dispatcher by `OperatorHandle.call` (every
  front door: `tp.add`, `x.relu()`, ...): `call` tests one flag (`observers.active`)
  and, while a profile is open, goes through `trace.observed`, which opens and closes
  the event around the dispatch;
- the dispatch keys the call went through and the kernel that ran: the dispatch loop
  reports them (`note`, from `tensorplay/dispatch/trace.py`) to the innermost open
  event;
- a `backward` event per autograd node the engine runs (`MulBackward0`), with the ops
  of its formula nested inside it;
- a `user` event per `record_function("name")` block.

Times are CPU wall time (`time.perf_counter_ns`); an event's total includes the events
nested in it, its self time does not.
"""
from __future__ import annotations

import functools
import json
import os
import sys
import threading
import time
from collections import OrderedDict

from tensorplay.dispatch.trace import observers
from tensorplay.dispatch import trace
from tensorplay.errors import ArgumentError

__all__ = ["profile", "record_function", "Event", "EventList"]

_PACKAGE = os.path.dirname(os.path.abspath(__file__))


class Event:
    """One timed span: an op call, a backward node, or a record_function block."""

    __slots__ = ("name", "kind", "start_ns", "end_ns", "shapes", "keys", "kernel", "stack",
                 "depth", "tid", "children_ns")

    def __init__(self, name, kind, start_ns, shapes, stack, depth, tid):
        self.name = name
        self.kind = kind            # "op", "backward" or "user"
        self.start_ns = start_ns
        self.end_ns = None
        self.shapes = shapes        # the argument shapes (record_shapes=True), else None
        self.keys = []              # dispatch keys the call went through, in order
        self.kernel = None          # the kernel that ran first (its registered name)
        self.stack = stack          # `file:line function` of the caller (with_stack=True)
        self.depth = depth          # how many events it is nested in
        self.tid = tid
        self.children_ns = 0        # time spent in events nested directly in it

    @property
    def cpu_time_total_us(self):
        return (self.end_ns - self.start_ns) / 1000

    duration_us = cpu_time_total_us

    @property
    def self_cpu_time_total_us(self):
        return (self.end_ns - self.start_ns - self.children_ns) / 1000

    def __repr__(self):
        return (f"Event({self.name!r}, {self.kind}, {self.cpu_time_total_us:.1f} us, "
                f"keys={self.keys}, kernel={self.kernel!r})")


class Average:
    """The events of one name (and input shapes, when grouped by them), summed."""

    def __init__(self, key, kind, shapes):
        self.key = key
        self.kind = kind
        self.input_shapes = shapes
        self.count = 0
        self.cpu_time_total_us = 0.0
        self.self_cpu_time_total_us = 0.0
        self.keys = []
        self.kernels = []

    def add(self, e):
        self.count += 1
        self.cpu_time_total_us += e.cpu_time_total_us
        self.self_cpu_time_total_us += e.self_cpu_time_total_us
        if e.keys and e.keys not in self.keys:
            self.keys.append(e.keys)
        if e.kernel and e.kernel not in self.kernels:
            self.kernels.append(e.kernel)

    @property
    def cpu_time_us(self):
        return self.cpu_time_total_us / self.count

    def __repr__(self):
        return (f"Average({self.key!r}, count={self.count}, "
                f"cpu_time_total_us={self.cpu_time_total_us:.1f})")


# sort_by name -> what it sorts on (PyTorch's names, and the short "total")
_SORT = {"cpu_time_total": "cpu_time_total_us", "total": "cpu_time_total_us",
         "self_cpu_time_total": "self_cpu_time_total_us", "cpu_time": "cpu_time_us",
         "count": "count"}


class EventList(list):
    """`key_averages()`: a list of `Average`s, with `.table()`."""

    def table(self, sort_by="cpu_time_total", row_limit=None, name_width=32):
        """One row per name: calls, total / self / average CPU time (us), the dispatch
        keys and kernel. `sort_by`: cpu_time_total, self_cpu_time_total, cpu_time, count."""
        attr = _SORT.get(sort_by)
        if attr is None:
            raise ArgumentError(f"table(): argument 'sort_by' must be one of "
                                f"{sorted(_SORT)}, but got {sort_by!r}", op="table",
                                arg="sort_by")
        rows = sorted(self, key=lambda a: -getattr(a, attr))
        if row_limit is not None:
            rows = rows[:row_limit]
        shapes = any(a.input_shapes is not None for a in rows)
        head = (f"{'name':<{name_width}}{'calls':>7}{'total us':>12}{'self us':>12}"
                f"{'avg us':>10}  {'kind':<9}{'keys -> kernel'}")
        lines = [head + ("   input shapes" if shapes else "")]
        for a in rows:
            name = a.key if len(a.key) < name_width else a.key[:name_width - 4] + "..."
            route = " / ".join(" -> ".join(k) for k in a.keys[:2])
            if a.kernels:
                route += (" -> " if route else "") + ", ".join(a.kernels[:2])
            line = (f"{name:<{name_width}}{a.count:>7}{a.cpu_time_total_us:>12.1f}"
                    f"{a.self_cpu_time_total_us:>12.1f}{a.cpu_time_us:>10.1f}  "
                    f"{a.kind:<9}{route}")
            if shapes and a.input_shapes is not None:
                line += f"   {a.input_shapes}"
            lines.append(line)
        return "\n".join(lines)


class profile:
    """Context manager: record every op call, backward node and record_function block.

    `record_shapes=True` keeps each op's argument shapes; `with_stack=True` the
    `file:line function` of the code outside tensorplay that made the call."""

    def __init__(self, record_shapes=False, with_stack=False):
        self.record_shapes = record_shapes
        self.with_stack = with_stack
        self.events = []
        self._stacks = {}           # thread id -> its open events, innermost last
        self._t0 = None

    # ---- what the front doors, the engine and the dispatch loop call -------------------
    def begin(self, name, kind, shapes=None):
        tid = threading.get_ident()
        open_ = self._stacks.setdefault(tid, [])
        stack = _caller() if self.with_stack else None
        e = Event(name, kind, time.perf_counter_ns(), shapes, stack, len(open_), tid)
        open_.append(e)

    def end(self):
        e = self._stacks[threading.get_ident()].pop()
        e.end_ns = time.perf_counter_ns()
        open_ = self._stacks[e.tid]
        if open_:
            open_[-1].children_ns += e.end_ns - e.start_ns
        self.events.append(e)

    def note(self, key, kernel):
        """A step of the dispatch loop: the key it dispatched at, and at a backend key
        the kernel it ran; filed under the innermost open event."""
        open_ = self._stacks.get(threading.get_ident())
        if not open_:
            return
        e = open_[-1]
        if e.kernel is None:
            if key not in e.keys:
                e.keys.append(key)
            e.kernel = kernel

    def __enter__(self):
        self._t0 = time.perf_counter_ns()
        observers.listeners.append(self)
        observers.record_shapes = observers.record_shapes or self.record_shapes
        trace.listen_profiler(self)
        return self

    def __exit__(self, *exc):
        trace.unlisten_profiler(self)
        observers.listeners.remove(self)
        observers.record_shapes = any(p.record_shapes for p in observers.listeners)
        self.events.sort(key=lambda e: e.start_ns)

    # ---- results -----------------------------------------------------------------------
    def key_averages(self, group_by_input_shape=False):
        """The events summed by name (and by input shapes, when asked)."""
        out = OrderedDict()
        for e in self.events:
            shapes = tuple(e.shapes) if group_by_input_shape and e.shapes else None
            a = out.get((e.name, shapes))
            if a is None:
                a = out[(e.name, shapes)] = Average(e.name, e.kind, shapes)
            a.add(e)
        return EventList(out.values())

    def table(self, sort_by="cpu_time_total", row_limit=None):
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit)

    def export_chrome_trace(self, path):
        """Write the events in the Trace Event Format ("X" complete events, times in
        microseconds), which chrome://tracing and https://ui.perfetto.dev open."""
        pid = os.getpid()
        tids = {}
        events = []
        for e in self.events:
            args = {"kind": e.kind}
            if e.keys:
                args["dispatch keys"] = " -> ".join(e.keys)
            if e.kernel:
                args["kernel"] = e.kernel
            if e.shapes is not None:
                args["input shapes"] = str(e.shapes)
            if e.stack:
                args["stack"] = e.stack
            events.append({"name": e.name, "cat": e.kind, "ph": "X", "pid": pid,
                           "tid": tids.setdefault(e.tid, len(tids)),
                           "ts": (e.start_ns - self._t0) / 1000,
                           "dur": (e.end_ns - e.start_ns) / 1000, "args": args})
        with open(path, "w") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)
        return path


class record_function:
    """A named span in every open profile: `with record_function("data"): ...`, or as
    a decorator. Costs one flag test when no profile is open."""

    def __init__(self, name):
        self.name = name
        self._listeners = ()

    def __enter__(self):
        if observers.active:
            self._listeners = list(observers.listeners)
            for p in self._listeners:
                p.begin(self.name, "user")
        return self

    def __exit__(self, *exc):
        for p in self._listeners:
            p.end()
        self._listeners = ()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with record_function(self.name):
                return fn(*args, **kwargs)
        return wrapped


def _caller(limit=3):
    """`file:line function` of the innermost frames outside the tensorplay package."""
    out = []
    f = sys._getframe(2)
    while f is not None and len(out) < limit:
        path = f.f_code.co_filename
        if not os.path.abspath(path).startswith(_PACKAGE + os.sep):
            out.append(f"{path}:{f.f_lineno} {f.f_code.co_qualname}")
        f = f.f_back
    return out
