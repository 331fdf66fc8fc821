"""tp.compile in the programs: a whole program compiled gives eager TensorPlay's values
and gradients (no PyTorch here: compiled is compared with eager).

While a program runs, its Tape records each step that ran as a function of the live
values (`env`, the pool's TensorPlay tensors by position): the fresh inputs as the
function's arguments, then the ops, views, in-place writes and indexing in order. A
share of the programs (COMPILE_SHARE) that end without a finding are then replayed as
one function `replay(*inputs) -> every live value`:

    eagerly              on fresh copies of the inputs (the reference)
    through tp.compile   twice, each on fresh copies: the first call captures, the
                         second runs what was lowered (what this check is about)

and the second compiled call must give every live value as eager does (shape, dtype,
requires_grad, values; kind "compiled"), and, after the same weighted backward, the
inputs' gradients (kind "compiled"). Graph breaks are fine (that guard set runs
eagerly); an error the eager replay does not raise is a spurious error at step "compile".
"""
from __future__ import annotations

import tensorplay as tp
from opinfo.core import make_tensor

COMPILE_SHARE = 0.1

_INPUT = object()       # a tape entry: the next argument of the replay is a fresh input


class Tape:
    """The steps of a program as functions of the live values (see the docstring)."""

    def __init__(self):
        self.entries = []       # _INPUT, or fn(env) that appends or writes live values
        self.inputs = []        # a copy of each fresh input as it was made

    def input(self, t):
        with tp.no_grad():
            self.inputs.append((t.detach().clone(), t.requires_grad))
        self.entries.append(_INPUT)

    def step(self, fn):
        self.entries.append(fn)

    def replay(self, *inputs):
        env = []
        given = iter(inputs)
        for entry in self.entries:
            if entry is _INPUT:
                env.append(next(given))
            else:
                entry(env)
        return env

    def fresh_inputs(self):
        out = []
        for t, requires_grad in self.inputs:
            with tp.no_grad():
                copy = t.clone()
            out.append(copy.requires_grad_(True) if requires_grad else copy)
        return out


def check_compiled(program):
    """Replay the program eagerly and compiled (the module's docstring); raises the
    program's _Found on a difference."""
    from fuzzing.programs import _Found, _attempt, _looser
    tape = program.tape
    program.step = "compile"
    program.counts["compiled"] += 1
    eager_inputs = tape.fresh_inputs()
    eager, err = _attempt(lambda: tape.replay(*eager_inputs))
    if err is not None:
        return      # (a step's outcome depended on state the replay does not have)
    program.lines.append("compiled = tp.compile(the program above); compiled(inputs) twice")
    compiled = tp.compile(tape.replay)
    got = None
    for call in ("capture", "lowered"):
        inputs = tape.fresh_inputs()
        got, err = _attempt(lambda: compiled(*inputs))
        if err is not None:
            raise _Found("spurious error", f"compiled ({call} call): TensorPlay raises "
                         f"{type(err).__name__}: {err}; eager does not")
    if len(got) != len(eager):
        raise _Found("compiled", f"{len(got)} live values, eager {len(eager)}")
    for v, a, b in zip(program.pool, got, eager):
        if not isinstance(b, tp.Tensor):
            continue
        where = f"{v.name} compiled"
        if a.requires_grad != b.requires_grad:
            raise _Found("compiled", f"{where}: requires_grad {a.requires_grad}, eager "
                         f"{b.requires_grad}")
        _compare(program, a, b, where, v.depth, v.precision)
    # the same weighted backward through both
    terms = [(i, b) for i, b in enumerate(eager) if isinstance(b, tp.Tensor)
             and b.requires_grad and b.numel() < 10_000]
    if not terms:
        return
    program.lines.append("(both) sum of the live values that require grad, weighted"
                         ".backward()")
    weights = [make_tensor(_real_shape(b), b.dtype.to_real() if b.dtype.is_complex
                           else b.dtype, rng=program.check_rng, low=-1, high=1)
               for _, b in terms]

    def loss(values):
        return sum((_real(values[i]) * w).sum() for (i, _), w in zip(terms, weights))
    ran_eager = _attempt(lambda: loss(eager).backward())[1] is None
    err = _attempt(lambda: loss(got).backward())[1]
    if not ran_eager:
        return
    if err is not None:
        raise _Found("spurious error", f"compiled backward: TensorPlay raises "
                     f"{type(err).__name__}: {err}; eager does not")
    depth = max(v.depth for v in program.pool) + 2
    precision = _looser(*(v.precision for v in program.pool))
    for k, (a, b) in enumerate(zip(inputs, eager_inputs)):
        if b.grad is None and a.grad is None:
            continue
        if (a.grad is None) != (b.grad is None):
            raise _Found("compiled", f"input {k}'s grad: "
                         f"{'None' if a.grad is None else 'a tensor'} compiled, "
                         f"{'None' if b.grad is None else 'a tensor'} eager")
        _compare(program, a.grad, b.grad, f"input {k}'s grad compiled", depth, precision)


def _real_shape(t):
    return tuple(t.shape) + ((2,) if t.dtype.is_complex else ())


def _real(t):
    return tp.view_as_real(t) if t.dtype.is_complex else t


def _compare(program, a, b, where, depth, precision):
    """Compiled `a` against eager `b` with the programs' tolerances (the compiled code may
    fuse and reorder the arithmetic)."""
    from opinfo.core import to_torch
    program._compare(a, to_torch(b, requires_grad=False), where, "compiled", depth,
                     strides=False, precision=precision)
