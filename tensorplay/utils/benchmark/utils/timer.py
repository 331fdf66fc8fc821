"""Timer: timeit.Timer made framework-aware, as torch.utils.benchmark's.

What it adds to timeit: a warm-up before measuring (first calls compile kernels and fill
caches), TensorPlay's thread count set to `num_threads` while timing, the `cuda` device
synchronised before each clock reading (the default `timer`), and replicates: the
adaptive methods time many blocks of runs, and a Measurement keeps every block's time so
that medians and spreads can be reported.

    Timer(stmt="x @ x", globals={"x": x}).timeit(100)          # one block of 100 runs
    Timer(stmt="x @ x", globals={"x": x}).blocked_autorange()  # blocks for >= 0.2 s

Only Python statements: `language="c++"` (PyTorch compiles a C++ snippet against libtorch)
raises, there is no C++ API to compile against.
"""
from __future__ import annotations

import enum
import textwrap
import timeit

from tensorplay import _cuda_state
from tensorplay.utils.benchmark.utils import common

__all__ = ["Timer", "timer", "Language"]


def timer():
    """The clock a Timer reads by default: the `cuda` device synchronised first (kernels
    launched on a GPU run asynchronously: the clock would time their launch), then
    timeit.default_timer. Synchronising is free where nothing runs on a GPU."""
    _cuda_state.synchronize()
    return timeit.default_timer()


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


class Timer:
    """Times `stmt` (a string of Python), run after `setup` in a namespace made of
    `globals` (copied; `torch` names TensorPlay in it unless the caller gives one, so that
    PyTorch's statement strings run unchanged).

    label, sub_label, description, env: how the Measurement is printed and how Compare
    lays it out (rows by sub_label or stmt, columns by description, one table per label;
    env separates otherwise equal tasks). num_threads: TensorPlay's thread count while
    timing (default 1: single-threaded timings compare kernels, not thread pools).
    """

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=timer, globals=None,
                 label=None, sub_label=None, description=None, env=None, num_threads=1,
                 language=Language.PYTHON):
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language not in (Language.PYTHON, "py", "python"):
            if language in (Language.CPP, "cpp", "c++"):
                raise NotImplementedError("Timer(language='c++'): TensorPlay has no C++ API "
                                          "to compile a statement against; time Python")
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely "
                             f"this code can simply be moved to `setup`.")
        import tensorplay
        self._globals = dict(globals or {})
        self._globals.setdefault("torch", tensorplay)
        self._language = Language.PYTHON
        stmt = _clean(stmt)
        setup = _clean(setup)
        self._timer = timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = common.TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup,
                                          label=label, sub_label=sub_label,
                                          description=description, env=env,
                                          num_threads=num_threads)

    def _timeit(self, number):
        # Never 0: a zero time would break the statistics (median / interval, log10).
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number=1000000):
        """One block of `number` runs (after a warm-up of number // 100, at least 2)."""
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))
            return common.Measurement(number_per_run=number,
                                      raw_times=[self._timeit(number=number)],
                                      task_spec=self._task_spec)

    def repeat(self, repeat=-1, number=-1):
        # PyTorch leaves timeit's repeat out: blocked_autorange measures replicates.
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _measurement_loop(self, number, stop_hook, min_run_time, max_run_time=None,
                          callback=None):
        """Time blocks of `number` runs until `min_run_time` seconds are spent and
        `stop_hook(times)` agrees, or `max_run_time` has passed."""
        total = 0.0
        can_stop = False
        times = []
        with common.set_torch_threads(self._task_spec.num_threads):
            while total < min_run_time or not can_stop:
                spent = self._timeit(number)
                times.append(spent)
                total += spent
                if callback:
                    callback(number, spent)
                can_stop = stop_hook(times)
                if max_run_time and total > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time):
        """Runs per block: powers of ten until the timer's own overhead (an empty block)
        is under 0.01% of a block and a block takes at least min_run_time / 1000."""
        with common.set_torch_threads(self._task_spec.num_threads):
            overhead = sorted(self._timeit(0) for _ in range(5))[2]    # the median of 5
            number = 1
            while True:
                taken = self._timeit(number)
                if overhead / taken <= 1e-4 and taken >= min_run_time / 1000:
                    break
                if taken > min_run_time or number * 10 > 2147483647:
                    break
                number *= 10
        return number

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        """Blocks of runs for at least `min_run_time` seconds; the block size is chosen so
        that reading the clock (a device synchronisation) costs little against a block.
        `callback(number, seconds)` is called after each block."""
        number = self._estimate_block_size(min_run_time)
        times = self._measurement_loop(number, lambda times: True, min_run_time,
                                       callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def adaptive_autorange(self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0,
                           callback=None):
        """Blocks of runs until there are more than 3, `min_run_time` seconds are spent and
        IQR / median is under `threshold`, or `max_run_time` seconds have passed."""
        number = self._estimate_block_size(min_run_time=0.05)

        def stop_hook(times):
            if len(times) > 3:
                return common.Measurement(number_per_run=number, raw_times=times,
                                          task_spec=self._task_spec
                                          ).meets_confidence(threshold=threshold)
            return False

        times = self._measurement_loop(number, stop_hook, min_run_time, max_run_time,
                                       callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)


def _clean(code):
    """Dedented, without a leading newline or trailing whitespace (PyTorch's form)."""
    code = textwrap.dedent(code)
    return (code[1:] if code and code[0] == "\n" else code).rstrip()
