"""`tp.dispatch.explain()`: the teaching view of a call, every hop printed.

    >>> a = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> with tp.dispatch.explain():
    ...     c = a + tp.ones(3)
    add.Tensor(float32[3] requires_grad, float32[3], 1)
      key set   {AutogradCPU, CPU} = given {AutogradCPU, CPU} | included {} - excluded {}
        dispatch  AutogradCPU -> tensorplay._generated.autograd_wrappers.add_Tensor
      add.Tensor(float32[3] requires_grad, float32[3], 1)
        key set   {CPU} = given {CPU} | included {} - excluded {AutogradMeta, AutogradSparse, AutogradCUDA, AutogradCPU}
          dispatch  CPU -> kernel registry (1 candidate)
          candidate cpu_kernels.pointwise.add (priority 0): accepted
          cache     miss (float32, float32) -> cpu_kernels.pointwise.add
          kernel    cpu_kernels.pointwise.add
        result    float32[3]
      result    float32[3] requires_grad

Key sets leave out the keys numbered ahead of their use (`Dispatcher.shown_keys`). The
hot path pays one attribute check (`state.active`) for all of this.
"""
from __future__ import annotations

import sys

from tensorplay._layout import strided
from tensorplay.dispatch.keys import DispatchKey, NUM_BACKENDS, format_keys
from tensorplay.dispatch.tls import local_keys


class _State:
    active = False
    depth = 0
    sinks = []


state = _State()


def hop(kind, text):
    line = "  " * state.depth + f"  {kind:<10}{text}"
    for sink in state.sinks:
        sink.emit(line)


def _line(text):
    line = "  " * state.depth + text
    for sink in state.sinks:
        sink.emit(line)


def describe(value):
    """`float32[2, 3]` for a tensor, repr for the rest (kept short)."""
    impl = getattr(value, "_impl", None)
    if impl is not None:
        text = f"{impl.dtype.name}[{', '.join(map(str, impl.sizes))}]"
        if impl.device.type != "cpu":
            text += f"@{impl.device}"
        if impl.layout is not strided:
            text += f" {impl.layout.name}"
        elif not impl.is_contiguous:
            text += " non-contiguous"
        if impl.requires_grad:
            text += " requires_grad"
        return text
    if isinstance(value, (list, tuple)):
        inner = ", ".join(describe(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    text = repr(value)
    return text if len(text) < 40 else text[:37] + "..."


def traced_call(handle, ks, args):
    from tensorplay.dispatch.dispatcher import FALLTHROUGH, dispatcher
    from tensorplay.dispatch.registry import KernelRegistry
    lk = local_keys
    eff = (ks | lk.included) & ~lk.excluded
    shown = dispatcher.shown_keys()
    _line(f"{handle.name}({', '.join(describe(a) for a in args)})")
    hop("key set", f"{format_keys(eff, shown)} = given {format_keys(ks, shown)} | included "
        f"{format_keys(lk.included, shown)} - excluded {format_keys(lk.excluded, shown)}")
    state.depth += 1
    try:
        while True:
            key = eff.bit_length() - 1
            kernel = handle.resolved[key] if key >= 0 else None
            name = DispatchKey(key).name if key >= 0 else "<none>"
            if key < NUM_BACKENDS:
                if kernel is None:
                    hop("miss", f"{name}: no kernel and no Composite fallback")
                    handle.miss(key)
                reg = getattr(kernel, "registry", kernel)
                if isinstance(reg, KernelRegistry):
                    bump = " (then bump the version of the written tensor)" \
                        if reg is not kernel else ""
                    hop("dispatch", f"{name} -> kernel registry ({len(reg.candidates)} "
                        f"candidate{'s' if len(reg.candidates) != 1 else ''}){bump}")
                else:
                    hop("dispatch", f"{name} -> Composite fallback "
                        f"{handle.kernel_names[DispatchKey.Composite]}")
                out = kernel(*args)
                break
            if kernel is FALLTHROUGH:
                hop("skip", f"{name}: nothing registered, fall through")
                eff &= ~(1 << key)
                continue
            what = handle.kernel_names[key] or (
                f"Composite (implicit autograd) {handle.kernel_names[DispatchKey.Composite]}")
            hop("dispatch", f"{name} -> {what}")
            out = kernel(eff, *args)
            break
    finally:
        state.depth -= 1
    hop("result", describe(out))
    return out


class explain:
    """Context manager: log every hop of every op call inside it.

    Lines are printed to `file` (stdout by default) as they happen and kept in
    `.lines`; pass `file=False` to only collect them."""

    def __init__(self, file=None):
        self.file = file
        self.lines = []

    def emit(self, line):
        self.lines.append(line)
        if self.file is not False:
            print(line, file=self.file or sys.stdout)

    def __enter__(self):
        state.sinks.append(self)
        state.active = True
        return self

    def __exit__(self, *exc):
        state.sinks.remove(self)
        state.active = bool(state.sinks)

    @property
    def text(self):
        return "\n".join(self.lines)
