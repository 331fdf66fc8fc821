"""What a timing is: the task (TaskSpec) and its measured times (Measurement), and the
small helpers that print them (select_unit, trim_sigfig). torch.utils.benchmark's
fields, properties and printed form; the statistics in float64 NumPy."""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import math
import textwrap
from typing import Any

import numpy as np

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig",
           "ordered_unique", "set_torch_threads"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9    # 25 ns: no timing is trusted below this spread

# A Measurement warns when its spread (IQR / median) is suspicious.
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """What was timed (everything a Timer was given but its globals). Frozen and
    hashable: Measurement.merge groups replicates by it."""
    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self):
        """The label (else the one-line stmt), with the sub_label after a colon."""
        sub = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + sub
        if "\n" not in self.stmt:
            return self.stmt + sub
        return (f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n"
                f"{textwrap.indent(self.stmt, '  ')}")

    def setup_str(self):
        if self.setup == "pass" or not self.setup:
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self):
        """The task's part of a Measurement's repr: title, description, setup."""
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)


_TASKSPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """The times of one task: `raw_times[i]` is the time of a block of `number_per_run`
    runs. Its statistics (`times`, `median`, `mean`, `iqr`) are per run. The TaskSpec's
    fields read through it (`m.label`, `m.stmt`, `m.num_threads`)."""
    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None      # the user's own payload

    def __post_init__(self):
        self._sorted_times = ()
        self._warnings = ()
        self._median = -1.0
        self._mean = -1.0
        self._p25 = -1.0
        self._p75 = -1.0

    def __getattr__(self, name):
        # Reached only for names not found otherwise: the TaskSpec's fields.
        if name in _TASKSPEC_FIELDS:
            return getattr(self.task_spec, name)
        return super().__getattribute__(name)

    @property
    def times(self):
        """Seconds per run, one per block (a block's time over its runs)."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self):
        self._lazy_init()
        return self._median

    @property
    def mean(self):
        self._lazy_init()
        return self._mean

    @property
    def iqr(self):
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def significant_figures(self):
        """How many digits of the median the spread supports (1 to 4): a 90% confidence
        interval from the interquartile times (z = 1.645), at least 25 ns wide; the
        figures are those of median / interval. Compare's trimming uses it."""
        self._lazy_init()
        n = len(self._sorted_times)
        middle = np.array(self._sorted_times[n // 4:math.ceil(3 * n / 4)], dtype=np.float64)
        std = float(middle.std()) if len(middle) else 0.0
        interval = max(1.645 * std / math.sqrt(max(len(middle), 1)), _MIN_CONFIDENCE_INTERVAL)
        figures = math.floor(math.log10(self._median / interval))
        return min(max(figures, 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self):
        self._lazy_init()
        return bool(self._warnings)

    def _lazy_init(self):
        if self.raw_times and not self._sorted_times:
            self._sorted_times = tuple(sorted(self.times))
            values = np.array(self._sorted_times, dtype=np.float64)
            # np.quantile's default (linear) is torch.quantile's
            self._median = float(np.quantile(values, 0.5))
            self._mean = float(values.mean())
            self._p25 = float(np.quantile(values, 0.25))
            self._p75 = float(np.quantile(values, 0.75))

            def add_warning(message):
                spread = self.iqr / self.median * 100
                self._warnings += (f"  WARNING: Interquartile range is {spread:.1f}% "
                                   f"of the median measurement.\n           {message}",)

            if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
                add_warning("This suggests significant environmental influence.")
            elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
                add_warning("This could indicate system fluctuation.")

    def meets_confidence(self, threshold=_IQR_WARN_THRESHOLD):
        return self.iqr / self.median < threshold

    @property
    def title(self):
        return self.task_spec.title

    @property
    def env(self):
        # PyTorch's property reads a misspelt attribute (`self.taskspec`); the
        # AttributeError sends the lookup to __getattr__, which answers the TaskSpec's env.
        # That is what a torch Measurement returns (None when unset), and so do we.
        return self.task_spec.env

    @property
    def as_row_name(self):
        """The name of the measurement's row in a Compare table."""
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self):
        """
            <tensorplay.utils.benchmark.utils.common.Measurement object at 0x7f395b6ac110>
            x @ x
              Median: 5.73 us
              IQR:    2.25 us (4.01 to 6.26)
              372 measurements, 100 runs per measurement, 1 thread
        """
        self._lazy_init()
        n = len(self._sorted_times)
        unit, scale = select_unit(self._median)
        lines = [object.__repr__(self), self.task_spec.summarize()]
        lines.append(f"  {'Median: ' if n > 1 else ''}{self._median / scale:.2f} {unit}")
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} "
                         f"({self._p25 / scale:.2f} to {self._p75 / scale:.2f})")
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {self.num_threads} "
                     f"thread{'s' if self.num_threads > 1 else ''}")
        lines.append("\n".join(self._warnings))
        # PyTorch builds the text as one block and strips it: no trailing blank line.
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements):
        """One Measurement per TaskSpec, its times those of all replicates at
        number_per_run=1 (metadata is dropped: it may differ between replicates)."""
        grouped = collections.defaultdict(list)
        for m in measurements:
            grouped[m.task_spec].append(m)
        return [Measurement(number_per_run=1, raw_times=[t for m in group for t in m.times],
                            task_spec=spec, metadata=None)
                for spec, group in grouped.items()]


def select_unit(t):
    """(unit, seconds per unit) that prints `t` seconds with 1 to 3 leading digits."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(math.log10(t) // 3), "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


def unit_to_english(u):
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x, n):
    """`x` rounded to `n` significant figures (3.14159, 2 -> 3.1)."""
    if n != int(n):
        raise ValueError(f"trim_sigfig(): expected an integer 'n', got {n!r}")
    magnitude = math.ceil(math.log10(abs(x)))
    scale = 10 ** (magnitude - n)
    return float(round(x / scale) * scale)


def ordered_unique(elements):
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n):
    """TensorPlay's thread count (tp.set_num_threads) set to `n` inside the block."""
    from tensorplay._runtime import get_num_threads, set_num_threads
    before = get_num_threads()
    try:
        set_num_threads(n)
        yield
    finally:
        set_num_threads(before)
