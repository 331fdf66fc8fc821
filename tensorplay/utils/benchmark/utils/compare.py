"""Compare: many Measurements as tables, torch.utils.benchmark's layout.

One table per label. Its rows are the tasks (sub_label, else stmt), grouped by thread
count under a `N threads: ----` separator and prefixed by `(env)` when the envs differ;
its columns are the descriptions. A cell is the median in one unit for the whole table:

    [------------- matmul -------------]
                  |   16   |   64
    1 threads: -------------------------
          float   |  12.3  |  45.6
          double  |  13.0  |  60.1

    Times are in microseconds (us).

Replicates of a task (equal TaskSpecs) are merged first (Measurement.merge).
trim_significant_figures() prints only the digits a cell's spread supports, colorize()
marks each column's (or row's) best and worst, highlight_warnings() appends a noisy
cell's IQR / median.
"""
from __future__ import annotations

import collections
import enum
import math

from tensorplay.utils.benchmark.utils import common

__all__ = ["Colorize", "Compare"]

BEST = "\033[92m"
GOOD = "\033[34m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m"
BOLD = "\033[1m"
TERMINATE = "\033[0m"


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


class _Column:
    """How one column prints its numbers: one width and number of decimals for all of
    them (the most leading digits, and with trimming the fewest decimals any cell's
    significant figures allow; else one decimal)."""

    def __init__(self, grouped_results, time_scale, trim_significant_figures,
                 highlight_warnings):
        self.grouped_results = grouped_results      # per row group: the column's cells
        flat = [m for group in grouped_results for m in group]
        self.trim = trim_significant_figures
        self.highlight = highlight_warnings and any(m.has_warnings for m in flat if m)
        leading = [math.ceil(math.log10(m.median / time_scale)) if m else None for m in flat]
        unit_digits = max(d for d in leading if d is not None)
        decimals = min(max(m.significant_figures - d, 0) for d, m in zip(leading, flat)
                       if m is not None) if self.trim else 1
        length = unit_digits + decimals + (1 if decimals else 0)
        self.template = f"{{:>{length}.{decimals}f}}{{:>{7 if self.highlight else 0}}}"

    def num_to_str(self, value, sigfigs, spread):
        if value is None:
            return " " * len(self.num_to_str(1, sigfigs, None))
        if self.trim:
            value = common.trim_sigfig(value, sigfigs)
        note = f" (! {spread * 100:.0f}%)" if self.highlight and spread is not None else ""
        return self.template.format(value, note)


class _Row:
    """One task's cells, and the separator above it when its thread count starts."""

    def __init__(self, results, row_group, render_env, env_width, time_scale, colorize,
                 num_threads=None):
        self.results = results
        self.row_group = row_group
        self.render_env = render_env
        self.env_width = env_width
        self.time_scale = time_scale
        self.colorize = colorize
        self.num_threads = num_threads
        self.columns = ()

    def as_column_strings(self):
        first = next(r for r in self.results if r is not None)
        env = f"({first.env})" if self.render_env else ""
        out = ["  " + env.ljust(self.env_width + 4) + first.as_row_name]
        for m, col in zip(self.results, self.columns):
            if m is None:
                out.append(col.num_to_str(None, 1, None))
            else:
                out.append(col.num_to_str(m.median / self.time_scale, m.significant_figures,
                                          m.iqr / m.median if m.has_warnings else None))
        return out

    @staticmethod
    def color_segment(segment, value, best):
        if value <= best * 1.01 or value <= best + 100e-9:
            return BEST + BOLD + segment + TERMINATE * 2
        if value <= best * 1.1:
            return GOOD + BOLD + segment + TERMINATE * 2
        if value >= best * 5:
            return VERY_BAD + BOLD + segment + TERMINATE * 2
        if value >= best * 2:
            return BAD + segment + TERMINATE * 2
        return segment

    def separator(self, width):
        if self.num_threads is None:
            return []
        return [f"{self.num_threads} threads: ".ljust(width, "-")]

    def finalize(self, strings, widths):
        bests = [-1] * len(strings)
        if self.colorize == Colorize.ROWWISE:
            bests = [min(r.median for r in self.results if r is not None)] * len(strings)
        elif self.colorize == Colorize.COLUMNWISE:
            bests = [min((r.median for r in col.grouped_results[self.row_group]
                          if r is not None), default=None) for col in self.columns]
        out = [strings[0].ljust(widths[0])]
        for text, width, result, best in zip(strings[1:], widths[1:], self.results, bests):
            text = text.center(width)
            if self.colorize != Colorize.NONE and result is not None and best is not None:
                text = self.color_segment(text, result.median, best)
            out.append(text)
        return out


class _Table:
    """The Measurements of one label, laid out (see the module docstring)."""

    def __init__(self, results, colorize, trim_significant_figures, highlight_warnings):
        self.results = results
        self.colorize = colorize
        self.highlight = highlight_warnings
        self.label = results[0].label
        self.time_unit, self.time_scale = common.select_unit(min(r.median for r in results))
        self.row_keys = common.ordered_unique(self.row_key(r) for r in results)
        # threads, then env; within those, rows in the order their tasks came
        self.row_keys.sort(key=lambda k: (k[0], k[1] or ""))
        self.column_keys = common.ordered_unique(r.description for r in results)
        self.rows = self._rows(trim_significant_figures)

    @staticmethod
    def row_key(m):
        return m.num_threads, m.env, m.as_row_name

    def _rows(self, trim):
        cells = [[None] * len(self.column_keys) for _ in self.row_keys]
        row_at = {k: i for i, k in enumerate(self.row_keys)}
        col_at = {k: i for i, k in enumerate(self.column_keys)}
        for r in self.results:
            cells[row_at[self.row_key(r)]][col_at[r.description]] = r
        envs = {r.env for r in self.results}
        render_env = len(envs) > 1
        env_width = max(len(e) for e in envs) if render_env else 0

        rows, groups = [], []
        prior_threads, prior_env = -1, ""
        for (threads, env, _), row_cells in zip(self.row_keys, cells):
            starts_group = threads != prior_threads
            if starts_group:
                prior_threads, prior_env = threads, ""
                groups.append([])
            rows.append(_Row(row_cells, len(groups) - 1, render_env and env != prior_env,
                             env_width, self.time_scale, self.colorize,
                             threads if starts_group else None))
            groups[-1].append(row_cells)
            prior_env = env
        columns = tuple(_Column([tuple(row[i] for row in g) for g in groups], self.time_scale,
                                trim, self.highlight) for i in range(len(self.column_keys)))
        for row in rows:
            row.columns = columns
        return rows

    def render(self):
        strings = [[""] + [str(k) if k is not None else "" for k in self.column_keys]]
        strings += [r.as_column_strings() for r in self.rows]
        n = max(len(s) for s in strings)
        for s in strings:
            s.extend([""] * (n - len(s)))
        widths = [max(len(s[i]) for s in strings) for i in range(n)]
        lines = ["  |  ".join(t.center(w) for t, w in zip(strings[0], widths))]
        width = len(lines[0])
        for texts, row in zip(strings[1:], self.rows):
            lines += row.separator(width)
            lines.append("  |  ".join(row.finalize(texts, widths)))
        warned = self.highlight and any(r.has_warnings for r in self.results)
        title = f" {self.label or ''} ".center(width - 2, "-")
        note = ("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n"
                if warned else "")
        return (f"[{title}]\n" + "\n".join(lines) + "\n\n"
                f"Times are in {common.unit_to_english(self.time_unit)}s ({self.time_unit}).\n"
                + note)


class Compare:
    """Tables of Measurements: `Compare(results).print()`, or str() of it."""

    def __init__(self, results):
        self._results = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def __str__(self):
        return "\n".join(self._render())

    def extend_results(self, results):
        """Add Measurements to those already held."""
        for r in results:
            if not isinstance(r, common.Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} "
                                 f"instead.")
        self._results.extend(results)

    def trim_significant_figures(self):
        """Print only the digits each cell's spread supports."""
        self._trim_significant_figures = True

    def colorize(self, rowwise=False):
        """Mark the best and worst cells of each column (of each row with rowwise=True)."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self):
        """Append ` (! XX%)`, the IQR / median, to cells whose spread is large."""
        self._highlight_warnings = True

    def print(self):
        print(str(self))

    def _render(self):
        by_label = collections.defaultdict(list)
        for r in common.Measurement.merge(self._results):
            by_label[r.label].append(r)
        return [_Table(group, self._colorize, self._trim_significant_figures,
                       self._highlight_warnings).render() for group in by_label.values()]
