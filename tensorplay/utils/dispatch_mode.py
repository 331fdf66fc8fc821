"""Dispatch modes: Python code that sees every op of a block, below autograd.

    with LoggingMode() as log:
        loss = model(x).sum()
        loss.backward()
    print("\\n".join(log.lines))        # forward ops, then the backward's ops

    with FlopCounterMode(display=False) as flops:
        model(x).sum().backward()
    flops.get_total_flops()            # matmuls and convolutions, as PyTorch counts them

A mode is an object with `__tensorplay_dispatch__(self, func, types, args, kwargs)`;
`with mode:` sends it every op of this thread (`tensorplay/dispatch/python_key.py` has
the machinery). It gets the op as `func` (`tp.ops.mm.default`) and returns the result,
usually `func(*args, **kwargs)`: while it runs, the mode is off, so that call computes.
"""
from __future__ import annotations

from collections import defaultdict

from tensorplay.dispatch.python_key import TensorPlayDispatchMode
from tensorplay.errors import fmt_shape

__all__ = ["TensorPlayDispatchMode", "OpLog", "LoggingMode", "FlopCounterMode"]


class OpLog:
    """One line per op: `$2: float32[2, 3] = tp.ops.mul.Tensor($0, $1)`. Tensors are
    named `$0`, `$1`, ... in the order they first appear, so a line shows which earlier
    results an op reads."""

    def __init__(self):
        self.lines = []
        self._names = {}      # id(tensor) -> "$n"
        self._alive = []      # the named tensors, kept so that no id is reused

    def name(self, t):
        key = id(t)
        if key not in self._names:
            self._names[key] = f"${len(self._names)}"
            self._alive.append(t)
        return self._names[key]

    def arg(self, value):
        if getattr(value, "_impl", None) is not None:
            return self.name(value)
        if isinstance(value, (list, tuple)):
            inner = ", ".join(self.arg(v) for v in value)
            return f"[{inner}]" if isinstance(value, list) else f"({inner})"
        return repr(value)

    def result(self, value):
        impl = getattr(value, "_impl", None)
        if impl is not None:
            return f"{self.name(value)}: {impl.dtype.name}{fmt_shape(impl.sizes)}"
        if isinstance(value, (list, tuple)):
            return ", ".join(self.result(v) for v in value) or "()"
        return repr(value)

    def record(self, func, args, kwargs, out):
        args_text = ", ".join([self.arg(a) for a in args] +
                              [f"{k}={self.arg(v)}" for k, v in (kwargs or {}).items()])
        self.lines.append(f"{self.result(out)} = {func}({args_text})")


class LoggingMode(TensorPlayDispatchMode):
    """Logs every op of the block, forward and backward, into `.lines` (an `OpLog`)."""

    def __init__(self):
        self.log = OpLog()

    @property
    def lines(self):
        return self.log.lines

    def __tensorplay_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        self.log.record(func, args, kwargs, out)
        return out


# ---- FLOPs ---------------------------------------------------------------------------
# The formulas of torch.utils.flop_counter: a multiply and an add per inner-product term
# (2 * m * k * n for an m x k by k x n product), bias additions not counted.

def _prod(sizes):
    n = 1
    for s in sizes:
        n *= s
    return n


def _sizes(t):
    return tuple(t._impl.sizes)


def mm_flops(a, b, out):
    m, k = _sizes(a)
    n = _sizes(b)[-1]
    return 2 * m * k * n


def bmm_flops(a, b, out):
    batch, m, k = _sizes(a)
    n = _sizes(b)[-1]
    return 2 * batch * m * k * n


def product_flops(a, out):
    """matmul / linear (which reach this level only when no decomposition ran above):
    each output element is a k-term inner product, k the last size of `a`."""
    return 2 * _prod(_sizes(out)) * _sizes(a)[-1]


def conv_flop_count(x_shape, w_shape, out_shape, transposed):
    """Each output point (input point, when transposed) meets the whole filter, for each
    pair of input and output channels of a group (`w_shape[:2]` holds that pair)."""
    batch = x_shape[0]
    spatial = (x_shape if transposed else out_shape)[2:]
    c_out, c_in = w_shape[0], w_shape[1]
    return 2 * _prod(spatial) * _prod(w_shape[2:]) * batch * c_out * c_in


def conv_backward_flops(grad_out, x, w, transposed, output_mask, out):
    """grad_input is the transposed convolution of grad_out with the weight; grad_weight
    is a convolution of the input with grad_out (channels and batch swapped)."""
    def swap(shape):
        return (shape[1], shape[0]) + tuple(shape[2:])
    g, xs, ws = _sizes(grad_out), _sizes(x), _sizes(w)
    flops = 0
    if output_mask[0]:
        flops += conv_flop_count(g, ws, _sizes(out[0]), not transposed)
    if output_mask[1]:
        gw = _sizes(out[1])
        if transposed:
            flops += conv_flop_count(swap(g), swap(xs), swap(gw), False)
        else:
            flops += conv_flop_count(swap(xs), swap(g), swap(gw), False)
    return flops


def linear_backward_flops(grad_output, output_mask, out):
    """The two products of _linear_backward, as the mm's of linear's composed backward:
    grad_input (rows x out) @ (out x in), grad_weight (out x rows) @ (rows x in)."""
    g = _sizes(grad_output)
    rows, out_features = _prod(g[:-1]), g[-1]
    flops = 0
    if output_mask[0]:
        flops += 2 * rows * out_features * _sizes(out[0])[-1]
    if output_mask[1]:
        flops += 2 * rows * out_features * _sizes(out[1])[1]
    return flops


# op (the name before the overload) -> flops from (args, out)
FLOP_FORMULAS = {
    "mm": lambda args, out: mm_flops(args[0], args[1], out),
    "addmm": lambda args, out: mm_flops(args[1], args[2], out),
    "bmm": lambda args, out: bmm_flops(args[0], args[1], out),
    "baddbmm": lambda args, out: bmm_flops(args[1], args[2], out),
    "matmul": lambda args, out: product_flops(args[0], out),
    "linear": lambda args, out: product_flops(args[0], out),
    "convolution": lambda args, out: conv_flop_count(
        _sizes(args[0]), _sizes(args[1]), _sizes(out), args[6]),
    "convolution_backward": lambda args, out: conv_backward_flops(
        args[0], args[1], args[2], args[7], args[10], out),
    "_linear_backward": lambda args, out: linear_backward_flops(args[0], args[3], out),
}


class FlopCounterMode(TensorPlayDispatchMode):
    """Counts the FLOPs of the matrix products and convolutions of the block (forward and
    backward), per op, with PyTorch's formulas. `display=True` prints the table on exit.
    PyTorch also splits the counts per nn.Module; here there is one level, "Global"."""

    def __init__(self, display=True):
        self.display = display
        self.flop_counts = defaultdict(int)     # op name -> flops

    def __enter__(self):
        self.flop_counts.clear()
        return super().__enter__()

    def __exit__(self, exc_type, exc, traceback):
        super().__exit__(exc_type, exc, traceback)
        if self.display and exc_type is None:
            print(self.get_table())

    def __tensorplay_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        formula = FLOP_FORMULAS.get(func.packet)
        if formula is not None:
            self.flop_counts[func.packet] += formula(args, out)
        return out

    def get_total_flops(self):
        return sum(self.flop_counts.values())

    def get_flop_counts(self):
        return {"Global": dict(self.flop_counts)}

    def get_table(self):
        rows = [f"{'op':<24}{'FLOPs':>16}"]
        for op, n in sorted(self.flop_counts.items(), key=lambda kv: -kv[1]):
            rows.append(f"{op:<24}{n:>16,}")
        rows.append(f"{'total':<24}{self.get_total_flops():>16,}")
        return "\n".join(rows)
