"""`repr(tensor)` the way PyTorch prints it: `tensor([1.5000, 2.0000], dtype=...)`.

The layout follows PyTorch's `torch/_tensor_str.py`, so that a notebook prints the same
text in both frameworks:

- one formatter for the whole tensor picks the mode and the width: integers as they are;
  floats as `1.`, `1.5000` or `1.5000e+00` (scientific when the non-zero magnitudes span
  more than 1000x, or reach 1e8, or go below 1e-4); the width is the widest *non-zero*
  finite value, and every value is right-aligned to it;
- above 1000 elements only the first and last 3 of each dim are shown (` ...`), and the
  formatter only looks at those;
- rows wrap at 80 columns, `(80 - indent) // (width + 2)` elements per line, and a suffix
  (`dtype=...`) that would pass column 80 goes on a line of its own;
- a complex tensor has two formatters, one fitted to the real parts and one to the
  imaginary parts: `1.0000+2.5000j`, the imaginary part's sign joining the two.

`tp.set_printoptions` changes those numbers (precision, threshold, edgeitems, linewidth)
and forces or frees the scientific mode (sci_mode), as `torch.set_printoptions` does.
"""
from __future__ import annotations

import math

import numpy as np

from tensorplay import _cuda_state


class PrintOptions:
    """What `set_printoptions` sets (PyTorch's `PRINT_OPTS`, with its defaults)."""

    precision = 4        # digits after the point
    threshold = 1000     # summarise above this many elements
    edgeitems = 3        # shown at each end of a summarised dim
    linewidth = 80
    sci_mode = None      # None: chosen from the values; True / False: forced


OPTIONS = PrintOptions()
_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """How tensors print from now on: `profile` ('default', 'short', 'full') first, then
    each option given. `sci_mode` is always set: None lets the values choose again."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions(): argument 'profile' must be one of "
                             f"{sorted(_PROFILES)}, but got {profile!r}")
        for name, value in _PROFILES[profile].items():
            setattr(OPTIONS, name, value)
    given = dict(precision=precision, threshold=threshold, edgeitems=edgeitems,
                 linewidth=linewidth)
    for name, value in given.items():
        if value is not None:
            setattr(OPTIONS, name, value)
    OPTIONS.sci_mode = sci_mode


def get_printoptions():
    """The current options, as keywords `set_printoptions` accepts."""
    return dict(precision=OPTIONS.precision, threshold=OPTIONS.threshold,
                edgeitems=OPTIONS.edgeitems, linewidth=OPTIONS.linewidth,
                sci_mode=OPTIONS.sci_mode)


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
        if OPTIONS.sci_mode is not None:
            self.sci_mode = bool(OPTIONS.sci_mode)
        precision = OPTIONS.precision
        if self.sci_mode:
            texts = [f"{v:.{precision}e}" for v in shown.tolist()]
        elif self.int_mode:
            texts = [f"{v:.0f}." for v in shown.tolist()]
        else:
            texts = [f"{v:.{precision}f}" for v in shown.tolist()]
        self.width = max(len(t) for t in texts)

    def format(self, value):
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:.{OPTIONS.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("" if math.isinf(value) or math.isnan(value) else ".")
        else:
            text = f"{value:.{OPTIONS.precision}f}"
        return text.rjust(self.width)


def _summarized(values):
    """The elements a summarised print shows (the formatter is fitted to these only)."""
    edge = OPTIONS.edgeitems
    if values.ndim == 0:
        return values
    if values.shape[0] > 2 * edge:
        values = np.concatenate([values[:edge], values[values.shape[0] - edge:]])
    if values.ndim == 1:
        return values
    return np.stack([_summarized(row) for row in values])


class _ComplexFormatter:
    """Two formatters, for the real and the imaginary parts (PyTorch's formatter1 and
    formatter2); an element is `real+imagj` or `real-imagj`."""

    def __init__(self, values):
        self.real = _Formatter(values.real, True)
        self.imag = _Formatter(values.imag, True)
        self.width = self.real.width + self.imag.width + 1     # the 'j'

    def format(self, value):
        value = complex(value)
        imag = (self.imag.format(value.imag) + "j").lstrip()
        return self.real.format(value.real) + (imag if imag[0] in "+-" else "+" + imag)


def _vector(values, indent, summarize, fmt):
    per_line = max(1, math.floor((OPTIONS.linewidth - indent) / (fmt.width + 2)))
    items = values.tolist()
    edge = OPTIONS.edgeitems
    if summarize and not edge:
        data = ["..."]
    elif summarize and len(items) > 2 * edge:
        data = ([fmt.format(v) for v in items[:edge]] + [" ..."]
                + [fmt.format(v) for v in items[len(items) - edge:]])
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
    edge = OPTIONS.edgeitems
    if summarize and n > 2 * edge:
        shown = list(range(edge)) + [None] + list(range(n - edge, n))
    else:
        shown = range(n)
    rows = ["..." if i is None else _nested(values[i], indent + 1, summarize, fmt)
            for i in shown]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def format_data(arr, indent=len("tensor(")):
    """The bracketed values part of a tensor repr."""
    if arr.size == 0:
        return "[]"
    summarize = arr.size > OPTIONS.threshold
    if arr.dtype.kind == "c":
        values = arr.astype(np.complex128)
        fmt = _ComplexFormatter(_summarized(values) if summarize else values)
        return _nested(values, indent, summarize, fmt)
    floating = arr.dtype.kind == "f" or arr.dtype.name == "bfloat16"
    values = arr.astype(np.float64) if floating else arr
    fmt = _Formatter(_summarized(values) if summarize else values, floating)
    return _nested(values, indent, summarize, fmt)


def tensor_repr(t):
    from tensorplay import _dtype as dt
    impl = t._impl
    if impl.device.type == "meta":
        # No values to show: PyTorch prints the device, the size, and every dtype but the
        # default one.
        body = "..."
        suffix = [f"device='{impl.device}'", f"size={tuple(impl.sizes)}"]
        if impl.dtype is not dt.get_default_dtype():
            suffix.append(f"dtype=tensorplay.{impl.dtype.name}")
    else:
        body, suffix = _values_and_suffixes(t)
    if impl.grad_fn is not None:
        suffix.append(f"grad_fn=<{impl.grad_fn.name()}>")
    elif impl.requires_grad:
        suffix.append("requires_grad=True")
    tangents = getattr(impl, "tangents", None)
    if tangents:
        # a dual tensor shows its tangent at the innermost level, as PyTorch's does
        suffix.append(f"tangent={tangents[max(tangents)]!r}")
    return _add_suffixes("tensor(" + body, suffix)


def _values_and_suffixes(t):
    """The printed values, and the suffixes they need: the size of an empty tensor, the
    device unless cpu, the dtype unless implied by the values."""
    from tensorplay import _dtype as dt
    impl = t._impl
    arr = t.detach().cpu()._impl.array()
    suffix = []
    if arr.size == 0 and arr.ndim != 1:
        suffix.append(f"size={tuple(impl.sizes)}")
    if impl.device.type != "cpu":
        suffix.append(f"device='{impl.device}'")
        if impl.device.type == "cuda" and _cuda_state.is_interpreted():
            suffix.append("triton='interpreter'")
    default_types = (dt.get_default_dtype(), dt.get_default_dtype().to_complex(), dt.int64,
                     dt.bool)
    if impl.dtype not in default_types or (impl.numel() == 0 and impl.dtype is not dt.float32):
        suffix.append(f"dtype=tensorplay.{impl.dtype.name}")
    return format_data(arr), suffix


def _add_suffixes(text, suffixes, indent=len("tensor(")):
    """`, dtype=...` after the values, on a new line when it would pass the line width."""
    parts = [text]
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > OPTIONS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    return "".join(parts) + ")"
