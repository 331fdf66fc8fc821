"""What the observer checks cost when nothing listens: `tp.add` per call as shipped, against
the same front door entering a build of `OperatorHandle.call` with the check removed, in
one run.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_observer_check.py

The check: `call`'s `if observers.active:` (explain() and the profiler send the call
through `trace.observed` then). The wrappers' `redispatch` and `below_autograd` test
`trace_state.watch` the same way. The unchecked build is made from the source of the real
`call` with that line and its statement deleted (so it cannot drift from it), compiled in
the dispatcher's module globals. Target (issue 18): under 3% of tp.add's time.
"""
from __future__ import annotations

import inspect
import os
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))     # this checkout's tensorplay, not an installed one
from common import fmt_time, paired_min  # noqa: E402

import tensorplay as tp  # noqa: E402
from tensorplay._generated import functional  # noqa: E402
from tensorplay.dispatch import dispatcher as dispatcher_module  # noqa: E402


def _without_checks(lines, start_marker):
    """Drop each `if <check>:` line and the one statement under it."""
    out, skip = [], False
    for line in lines:
        if skip:
            skip = False
            continue
        stripped = line.strip()
        if stripped.startswith(start_marker):
            skip = True
            continue
        out.append(line)
    return out


def unchecked_call():
    """OperatorHandle.call without `if observers.active:`."""
    source = textwrap.dedent(inspect.getsource(dispatcher_module.OperatorHandle.call))
    lines = _without_checks(source.splitlines(), "if observers.active:")
    namespace = {}
    exec("\n".join(lines).replace("def call(self,", "def call_unchecked(self,"),
         vars(dispatcher_module), namespace)
    code = namespace["call_unchecked"].__code__
    assert "observers" not in code.co_names, "call changed: update this benchmark"
    return namespace["call_unchecked"]


def unchecked_add(call):
    """The generated `tp.add`, entering the unchecked `call`."""
    source = inspect.getsource(functional.add)
    text = source.replace("def add(", "def add_unchecked(")
    text = text.replace("ops.add_Tensor.call(", "_call_unchecked(ops.add_Tensor, ")
    text = text.replace("ops.add_Scalar.call(", "_call_unchecked(ops.add_Scalar, ")
    assert "_call_unchecked(ops.add_Tensor, " in text, "tp.add changed: update this benchmark"
    namespace = dict(vars(functional), _call_unchecked=call)
    exec(text, namespace)
    return namespace["add_unchecked"]


def main():
    add_unchecked = unchecked_add(unchecked_call())
    a = tp.tensor([1.0])
    b = tp.tensor([2.0])
    assert add_unchecked(a, b).item() == tp.add(a, b).item() == 3.0
    print(f"tensorplay from {os.path.dirname(tp.__file__)}")
    print("tp.add(a, b), 1-element float32, nothing listening; each the fastest of 200 "
          "batches of 200, the two timed in alternation")
    print(f"  {'trial':<8}{'shipped':>12}{'no checks':>12}{'cost':>9}")
    costs = []
    for trial in range(7):
        shipped, bare = paired_min(lambda: tp.add(a, b), lambda: add_unchecked(a, b),
                                   batch=200, rounds=200)
        costs.append(shipped / bare - 1)
        print(f"  {trial:<8}{fmt_time(shipped):>12}{fmt_time(bare):>12}"
              f"{costs[-1]:>8.1%}")
    costs.sort()
    print(f"median cost of the checks: {costs[len(costs) // 2]:.1%} of tp.add "
          f"(target under 3%)")


if __name__ == "__main__":
    main()
