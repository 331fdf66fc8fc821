"""What the kernel registries decided, counted per op: `tp.dispatch.cache_stats()`.

    tp.dispatch.enable_stats()
    model(x)
    tp.dispatch.cache_stats()["conv2d"]
    # OpStats(hits=11, misses=1, evictions=0, invalidations=0, fallbacks={},
    #         rejected={'cpu_kernels.conv.conv2d_1x1': {'shape rule ...': 1}},
    #         kernels={'cpu_kernels.conv.convolution': 12}, tuned=0)

Counting is off by default and then costs nothing on the call path: a registry whose
top candidate has no constraint is called directly by the dispatcher (no cache lookup
at all, see `KernelRegistry.entry`), and turning counting on re-resolves every op so
that all calls take the full path, where the counts are kept. Registries that choose
pay one attribute check (`stats.on`) per call.

Rows are keyed by the op's name (`add.Tensor`); hits and misses are lookups of the
first-level choice cache (op, dtypes, layout, shape signature), `evictions` entries
dropped because the cache was full, `invalidations` entries dropped because a
registration made them stale, `fallbacks` the fallback notes taken (dtype promotion,
layout conversion, device), `rejected` every candidate passed over with why,
`kernels` the candidate that ran, `tuned` the calls that ran a choice pinned by
`tp.dispatch.tune`.
"""
from __future__ import annotations

__all__ = ["OpStats", "cache_stats", "reset_stats", "stats"]

# enable_stats() lives in dispatcher.py: turning counting on re-resolves every op.


class OpStats:
    __slots__ = ("hits", "misses", "evictions", "invalidations", "fallbacks", "rejected",
                 "kernels", "tuned")

    def __init__(self):
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self.invalidations = 0
        self.fallbacks = {}          # note -> count
        self.rejected = {}           # candidate name -> {reason: count}
        self.kernels = {}            # candidate name -> calls it ran
        self.tuned = 0

    def reject(self, name, reason):
        reasons = self.rejected.setdefault(name, {})
        reasons[reason] = reasons.get(reason, 0) + 1

    def ran(self, name):
        self.kernels[name] = self.kernels.get(name, 0) + 1

    def as_dict(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __repr__(self):
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"OpStats({fields})"


class _Stats:
    """The switch and the rows. `on` is read on the call path; the rest only when on."""

    def __init__(self):
        self.on = False
        self.ops = {}

    def row(self, op_name):
        row = self.ops.get(op_name)
        if row is None:
            row = self.ops[op_name] = OpStats()
        return row


stats = _Stats()


def cache_stats():
    """{op name: OpStats} of what was counted since the last reset_stats()."""
    return dict(stats.ops)


def reset_stats():
    stats.ops.clear()
