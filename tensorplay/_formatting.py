"""`repr(tensor)` the way PyTorch prints it: `tensor([1.5000, 2.0000], dtype=...)`."""
from __future__ import annotations

import numpy as np


def _float_formatter(values):
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return lambda x: _special(x) or f"{x:.4f}"
    absvals = np.abs(finite)
    nonzero = absvals[absvals > 0]
    ints = bool(np.all(finite == np.round(finite)))
    big, small = (float(nonzero.max()), float(nonzero.min())) if nonzero.size else (0.0, 0.0)
    if nonzero.size and (big / small > 1000.0 or big > 1e8 or small < 1e-4):
        return lambda x: _special(x) or f"{x:.4e}"
    if ints:
        width = max(len(f"{x:.0f}") for x in finite) + 1
        return lambda x: (_special(x) or f"{x:.0f}.").rjust(width)
    width = max(len(f"{x:.4f}") for x in finite)
    return lambda x: (_special(x) or f"{x:.4f}").rjust(width)


def _special(x):
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    return None


def format_data(arr):
    """The bracketed values part of a tensor repr."""
    if arr.dtype.kind == "f" or arr.dtype.name == "bfloat16":
        vals = arr.astype(np.float64)
        fmt = _float_formatter(vals.reshape(-1)) if vals.size else str
        return np.array2string(vals, separator=", ", prefix="tensor(", threshold=1000,
                               edgeitems=3, max_line_width=80,
                               formatter={"float_kind": fmt})
    if arr.dtype.kind == "b":
        return np.array2string(arr, separator=", ", prefix="tensor(", threshold=1000,
                               formatter={"bool": lambda b: "True" if b else "False"})
    return np.array2string(arr, separator=", ", prefix="tensor(", threshold=1000,
                           max_line_width=80)


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
        from tensorplay import cuda
        if impl.device.type == "cuda" and cuda.is_interpreted():
            suffix.append("triton='interpreter'")
    default_types = (dt.get_default_dtype(), dt.int64, dt.bool)
    if impl.dtype not in default_types or (impl.numel() == 0 and impl.dtype is not dt.float32):
        suffix.append(f"dtype=tensorplay.{impl.dtype.name}")
    if impl.grad_fn is not None:
        suffix.append(f"grad_fn=<{impl.grad_fn.name()}>")
    elif impl.requires_grad:
        suffix.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + s for s in suffix) + ")"
