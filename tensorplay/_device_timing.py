"""Timing work on a device: `tp.cuda.Event`, `tp.cuda.Stream` and `do_bench`.

A GPU runs kernels *asynchronously*: a launch returns as soon as the kernel is queued, so
reading the host clock around a launch measures the launch, not the kernel. Two ways to
time the kernel itself:

    synchronize, then read the clock     (what tp.utils.benchmark's Timer does)
    events recorded in the stream        (what do_bench does: the GPU stamps each event
                                          when the work queued before it has finished)

On a real GPU the events are PyTorch's (`torch.cuda.Event`: PyTorch already provides the
memory and the pointers of the `cuda` device, tensorplay/_cuda_state.py). Without a GPU
(the Triton interpreter runs the kernels on the host, synchronously) an event records the
host clock, after synchronising, when it is recorded: the same numbers a GPU event would
give for synchronous work.

do_bench (Triton's `triton.testing.do_bench`, written for both clocks) times one
callable: warm-up runs (compilation, caches, lazy allocations), then many timed runs, each
after the cache is flushed (a kernel timed again on inputs already in cache would look
faster than it is on a first touch), and reports the mean, the median or quantiles.

This module sits beside _cuda_state (it imports nothing else of TensorPlay), so that the
dispatcher's tuning, the Triton kernels' autotuning and tp.utils.benchmark share it.
"""
from __future__ import annotations

import statistics
import time

from tensorplay import _cuda_state

__all__ = ["Event", "Stream", "current_stream", "default_stream", "do_bench", "flush_cache"]


def _on_gpu():
    """Whether the `cuda` device is a real GPU (not the interpreter's host memory)."""
    return _cuda_state.is_available() and not _cuda_state.is_interpreted()


class Event:
    """A marker in a stream (torch.cuda.Event's interface): record two of them around
    some work and `start.elapsed_time(end)` gives the milliseconds between them.

        start, end = tp.cuda.Event(enable_timing=True), tp.cuda.Event(enable_timing=True)
        start.record(); y = x @ x; end.record(); end.synchronize()
        start.elapsed_time(end)      # ms

    On a GPU it is torch.cuda.Event (stamped by the GPU when the queued work before it
    finishes). Without one (the Triton interpreter, synchronous on the host) `record()`
    synchronises and reads the host clock (time.perf_counter): as exact for synchronous
    work, and `query()` is always True.
    """

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.enable_timing = enable_timing
        self.blocking = blocking
        self.interprocess = interprocess
        self._torch_event = None
        self._time = None           # host clock when recorded (no GPU)
        if _on_gpu():
            import torch
            self._torch_event = torch.cuda.Event(enable_timing=enable_timing,
                                                 blocking=blocking, interprocess=interprocess)

    def record(self, stream=None):
        if self._torch_event is not None:
            self._torch_event.record(stream._torch_stream if stream is not None else None)
        else:
            _cuda_state.synchronize()
            self._time = time.perf_counter()

    def wait(self, stream=None):
        """Make `stream` (the current one) wait for this event."""
        if self._torch_event is not None:
            self._torch_event.wait(stream._torch_stream if stream is not None else None)

    def query(self):
        """Whether the work recorded before the event has finished."""
        if self._torch_event is not None:
            return self._torch_event.query()
        return True

    def synchronize(self):
        """Wait until the work recorded before the event has finished."""
        if self._torch_event is not None:
            self._torch_event.synchronize()

    def elapsed_time(self, end_event):
        """Milliseconds from this event to `end_event` (both recorded, timing enabled)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("elapsed_time(): both events must be created with "
                               "enable_timing=True")
        if self._torch_event is not None:
            return self._torch_event.elapsed_time(end_event._torch_event)
        if self._time is None or end_event._time is None:
            raise RuntimeError("elapsed_time(): both events must be recorded first")
        return (end_event._time - self._time) * 1e3

    def __repr__(self):
        return f"<tensorplay.cuda.Event {'timing' if self.enable_timing else 'no timing'}>"


class Stream:
    """A queue of work on the `cuda` device (torch.cuda.Stream's interface). TensorPlay
    launches everything on the current (default) stream; on a GPU this is PyTorch's
    current stream, without one a stand-in whose work is already done when queued."""

    def __init__(self, device=None, priority=0, _torch_stream=None):
        self.device = device
        self.priority = priority
        self._torch_stream = _torch_stream

    def synchronize(self):
        if self._torch_stream is not None:
            self._torch_stream.synchronize()

    def query(self):
        return self._torch_stream.query() if self._torch_stream is not None else True

    def record_event(self, event=None):
        event = event if event is not None else Event()
        event.record(self)
        return event

    def wait_event(self, event):
        event.wait(self)

    def wait_stream(self, stream):
        self.wait_event(stream.record_event())

    def __repr__(self):
        return f"<tensorplay.cuda.Stream device={self.device}>"


def current_stream(device=None):
    """The stream TensorPlay's kernels are launched on."""
    if _on_gpu():
        import torch
        index = getattr(device, "index", device)     # a tp.device, an index or None
        return Stream(device, _torch_stream=torch.cuda.current_stream(index))
    return Stream(device)


default_stream = current_stream


# ---- do_bench -----------------------------------------------------------------------------
# The cache flushed before each timed run. On a GPU: 256 MB written, more than any GPU's
# L2 (an H100 has 50 MB), as Triton's do_bench does. On the host (CPU kernels, and the
# interpreter's kernels on host memory) a 4 MiB buffer: more than a core's L2, the level a
# small kernel would otherwise find its inputs in; the last-level cache (tens of MB) is not
# flushed: writing it would cost more than most kernels timed here.
GPU_FLUSH_BYTES = 256 * 2 ** 20
HOST_FLUSH_BYTES = 4 * 2 ** 20
_flush_buffers = {}


def flush_cache():
    """Write the flush buffer of the device in use (see GPU_FLUSH_BYTES)."""
    gpu = _on_gpu()
    buf = _flush_buffers.get(gpu)
    if buf is None:
        if gpu:
            import torch
            buf = torch.empty(GPU_FLUSH_BYTES, dtype=torch.int8, device="cuda")
        else:
            import numpy as np
            buf = np.empty(HOST_FLUSH_BYTES, dtype=np.int8)
        _flush_buffers[gpu] = buf
    if gpu:
        buf.zero_()
    else:
        buf.fill(0)


def _quantile(sorted_times, q):
    """Linear interpolation between the order statistics (torch.quantile's default)."""
    pos = q * (len(sorted_times) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_times) - 1)
    return sorted_times[lo] + (sorted_times[hi] - sorted_times[lo]) * (pos - lo)


def do_bench(fn, warmup=25, rep=100, quantiles=None, return_mode="mean", flush=True, *,
             n_warmup=None, n_repeat=None):
    """Milliseconds per call of `fn()` (triton.testing.do_bench's interface).

    `warmup` and `rep` are budgets in milliseconds: five calls estimate the time of one,
    then max(1, warmup / estimate) untimed calls warm up and max(1, rep / estimate) timed
    calls follow (`n_warmup`, `n_repeat`: these counts instead, no estimate), each with
    the cache flushed before it (`flush`) and its own pair of events, so that a GPU is
    synchronised around every run (the events stamp the kernel, not its launch). Returns
    the statistic `return_mode` ("mean", "median", "min", "max"; "all": every run's time)
    of the run times, or, given `quantiles`, a list of those quantiles of them.
    """
    if return_mode not in ("mean", "median", "min", "max", "all"):
        raise ValueError(f"do_bench(): expected return_mode one of 'mean', 'median', 'min', "
                         f"'max', 'all', got {return_mode!r}")
    if n_warmup is None or n_repeat is None:
        fn()
        _cuda_state.synchronize()
        start, end = Event(enable_timing=True), Event(enable_timing=True)
        start.record()
        for _ in range(5):
            if flush:
                flush_cache()
            fn()
        end.record()
        end.synchronize()
        estimate = max(start.elapsed_time(end) / 5, 1e-6)
        if n_warmup is None:
            n_warmup = max(1, int(warmup / estimate))
        if n_repeat is None:
            n_repeat = max(1, int(rep / estimate))
    for _ in range(n_warmup):
        fn()
    times = []
    for _ in range(n_repeat):
        if flush:
            flush_cache()
        begin, finish = Event(enable_timing=True), Event(enable_timing=True)
        begin.record()
        fn()
        finish.record()
        finish.synchronize()
        times.append(begin.elapsed_time(finish))
    if quantiles is not None:
        ordered = sorted(times)
        found = [_quantile(ordered, q) for q in quantiles]
        return found[0] if len(found) == 1 else found
    if return_mode == "all":
        return times
    return {"mean": statistics.fmean, "median": statistics.median, "min": min,
            "max": max}[return_mode](times)
