"""`--explain`: the dispatch route of one training step, summarised.

tp.dispatch.explain() logs every hop of every op call: one step of the CNN makes a few
hundred calls and thousands of lines. This module folds that log into one row per
distinct route, phase by phase (forward, backward, optimizer step):

    conv2d                 x1  AutogradCPU: composite -> cpu_kernels.conv.convolution
    relu                   x2  AutogradCPU: autograd -> cpu_kernels.pointwise.relu

(the op, how many calls took that route, the first dispatch key and what it reached,
then the kernels that finally ran, nested calls included).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

# The hops trace.py writes, each as `kind` padded to 10 characters, then its text.
HOP_WIDTH = 10
HOP_KINDS = {"key set", "dispatch", "skip", "miss", "candidate", "cache", "kernel",
             "hand-over", "fallback", "triton", "result", "cast", "tls", "version",
             "formula", "grad in", "grad out", "accum"}
MAX_KERNELS_SHOWN = 3


@dataclass
class Call:
    """One top-level op call of the log, reduced to its route."""
    op: str
    entry: str          # 'AutogradCPU: autograd', 'CPU: registry', ...
    kernels: tuple      # the kernels (and Triton launches) that ran, in order, distinct

    @property
    def route(self):
        shown = list(self.kernels[:MAX_KERNELS_SHOWN])
        if len(self.kernels) > MAX_KERNELS_SHOWN:
            shown.append(f"+{len(self.kernels) - MAX_KERNELS_SHOWN} more")
        return f"{self.entry} -> {', '.join(shown) if shown else '(no kernel)'}"


def split_hop(line):
    """(kind, text) of a hop line, or None for an op-call line."""
    body = line.lstrip()
    kind = body[:HOP_WIDTH].rstrip()
    if kind in HOP_KINDS and len(body) > HOP_WIDTH:
        return kind, body[HOP_WIDTH:].strip()
    return None


def short(name):
    """'tensorplay.composite.views.flatten' -> 'composite.views.flatten'."""
    return name.removeprefix("tensorplay.").removeprefix("_generated.")


def describe_entry(text):
    """The first `dispatch` hop of a call, e.g. 'AutogradCPU -> tensorplay._generated.
    autograd_wrappers.relu', as 'AutogradCPU: autograd'."""
    key, _, target = text.partition(" -> ")
    if target.startswith("Composite (implicit autograd)"):
        what = "composite " + short(target.split()[-1])
    elif target.startswith("Composite fallback"):
        what = "composite " + short(target.split()[-1])
    elif "autograd_wrappers" in target:
        what = "autograd"
    elif target.startswith("kernel registry"):
        what = "registry"
    else:
        what = short(target)
    return f"{key}: {what}"


def leaf(kind, text):
    """The name of what ran, for the hops that run something; None for the others."""
    if kind == "kernel":
        return short(text)
    if kind == "triton":
        return "triton " + text.split()[0]
    if kind == "fallback":
        return "fallback: " + text
    if kind == "dispatch" and "Composite fallback" in text:
        return short(text.split()[-1])
    return None


def parse(lines):
    """The top-level calls of an explain() log (lines without indentation start one)."""
    calls = []
    op = entry = None
    kernels = []
    for line in lines:
        if not line.startswith(" "):
            if op is not None:
                calls.append(Call(op, entry or "?", tuple(dict.fromkeys(kernels))))
            # an op call, or a backward node ("MulBackward0 (backward of mul.Tensor)")
            op, entry, kernels = line.split("(", 1)[0].strip(), None, []
            continue
        hop = split_hop(line)
        if hop is None:
            continue
        kind, text = hop
        if kind == "formula" and entry is None:
            entry = "backward node"
        if kind == "dispatch" and entry is None:
            entry = describe_entry(text)
        name = leaf(kind, text)
        if name is not None:
            kernels.append(name)
    if op is not None:
        calls.append(Call(op, entry or "?", tuple(dict.fromkeys(kernels))))
    return calls


def summarise(phases, max_rows=40):
    """Text of the route table. `phases`: [(title, explain log lines)]; each phase lists
    its distinct (op, route) pairs in order of first appearance, at most `max_rows`."""
    total = sum(len(parse(lines)) for _, lines in phases)
    out = [f"dispatch route of one training step: {total} top-level op calls"]
    for title, lines in phases:
        calls = parse(lines)
        rows = OrderedDict()
        for call in calls:
            rows[(call.op, call.route)] = rows.get((call.op, call.route), 0) + 1
        out.append(f"\n{title}: {len(calls)} calls, {len(rows)} distinct routes")
        for i, ((op, route), count) in enumerate(rows.items()):
            if i == max_rows:
                out.append(f"  ... {len(rows) - max_rows} more routes")
                break
            out.append(f"  {op:<32} x{count:<4} {route}")
    return "\n".join(out)
