"""`repr(tensor)` the way PyTorch prints it: `tensor([1.5000, 2.0000], dtype=...)`.

The layout follows PyTorch's `torch/_tensor_str.py`, so that a notebook prints the same
text in both frameworks:

- one formatter for the whole tensor picks the mode and the width: integers as they are;
  floats as `1.`, `1.5000` or `1.5000e+00` (scientific when the non-zero magnitudes span
  more than 1000x, or reach 1e8, or go below 1e-4); the width is the widest *non-zero*
  finite value, and every value is right-aligned to it;
- above 1000 elements only the first and last 3 of each dim are shown (` ...`), and the
  formatter only looks at those;
- rows wrap at 80 columns, `(80 - indent) // (width + 2)` elements per line.
"""
from __future__ import annotations

import math

import numpy as np

from tensorplay import _cuda_state

LINE_WIDTH = 80
THRESHOLD = 1000     # summarise above this many elements
EDGE_ITEMS = 3       # shown at each end of a summarised dim
PRECISION = 4


class _Formatter:
    """Chooses how every element of one tensor is printed (PyTorch's `_Formatter`)."""

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        flat = values.reshape(-1)
        if not floating:
            self.width = max([1] + [len(str(v)) for v in flat.tolist()])
            return
        shown = flat[np.isfinite(flat) & (flat != 0)]
        if shown.size == 0:
            return
        magnitudes = np.abs(shown)
        small, big = float(magnitudes.min()), float(magnitudes.max())
        self.int_mode = bool(np.all(shown == np.ceil(shown)))
        self.sci_mode = big / small > 1000.0 or big > 1.0e8 or small < 1.0e-4
        if self.sci_mode:
            texts = [f"{v:.{PRECISION}e}" for v in shown.tolist()]
        elif self.int_mode:
            texts = [f"{v:.0f}." for v in shown.tolist()]
        else:
            texts = [f"{v:.{PRECISION}f}" for v in shown.tolist()]
        self.width = max(len(t) for t in texts)

    def format(self, value):
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:.{PRECISION}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("" if math.isinf(value) or math.isnan(value) else ".")
        else:
            text = f"{value:.{PRECISION}f}"
        return text.rjust(self.width)


def _summarized(values):
    """The elements a summarised print shows (the formatter is fitted to these only)."""
    if values.ndim == 0:
        return values
    if values.shape[0] > 2 * EDGE_ITEMS:
        values = np.concatenate([values[:EDGE_ITEMS], values[-EDGE_ITEMS:]])
    if values.ndim == 1:
        return values
    return np.stack([_summarized(row) for row in values])


def _vector(values, indent, summarize, fmt):
    per_line = max(1, (LINE_WIDTH - indent) // (fmt.width + 2))
    items = values.tolist()
    if summarize and len(items) > 2 * EDGE_ITEMS:
        data = ([fmt.format(v) for v in items[:EDGE_ITEMS]] + [" ..."]
                + [fmt.format(v) for v in items[-EDGE_ITEMS:]])
    else:
        data = [fmt.format(v) for v in items]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(values, indent, summarize, fmt):
    if values.ndim == 0:
        return fmt.format(values.item())
    if values.ndim == 1:
        return _vector(values, indent, summarize, fmt)
    n = values.shape[0]
    if summarize and n > 2 * EDGE_ITEMS:
        shown = list(range(EDGE_ITEMS)) + [None] + list(range(n - EDGE_ITEMS, n))
    else:
        shown = range(n)
    rows = ["..." if i is None else _nested(values[i], indent + 1, summarize, fmt)
            for i in shown]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def format_data(arr, indent=len("tensor(")):
    """The bracketed values part of a tensor repr."""
    if arr.size == 0:
        return "[]"
    floating = arr.dtype.kind == "f" or arr.dtype.name == "bfloat16"
    values = arr.astype(np.float64) if floating else arr
    summarize = values.size > THRESHOLD
    fmt = _Formatter(_summarized(values) if summarize else values, floating)
    return _nested(values, indent, summarize, fmt)


def tensor_repr(t):
    from tensorplay import _dtype as dt
    impl = t._impl
    suffix = []
    if impl.device.type == "meta":
        body = "..."
        suffix.append(f"size={tuple(impl.sizes)}")
    else:
        arr = t.detach().cpu()._impl.array()
        body = format_data(arr)
        if arr.size == 0 and arr.ndim != 1:
            suffix.append(f"size={tuple(impl.sizes)}")
    if impl.device.type != "cpu":
        suffix.append(f"device='{impl.device}'")
        if impl.device.type == "cuda" and _cuda_state.is_interpreted():
            suffix.append("triton='interpreter'")
    default_types = (dt.get_default_dtype(), dt.int64, dt.bool)
    if impl.dtype not in default_types or (impl.numel() == 0 and impl.dtype is not dt.float32):
        suffix.append(f"dtype=tensorplay.{impl.dtype.name}")
    if impl.grad_fn is not None:
        suffix.append(f"grad_fn=<{impl.grad_fn.name()}>")
    elif impl.requires_grad:
        suffix.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + s for s in suffix) + ")"
