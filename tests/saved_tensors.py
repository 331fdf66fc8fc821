"""Which tensors an op's backward saves, observed from outside, in TensorPlay and PyTorch.

A backward node version-checks every tensor it saved: after `y = op(x, w)`, an in-place
change of a saved tensor makes `backward()` raise "one of the variables needed for
gradient computation has been modified by an inplace operation". So the set of tensors
an op saves is a visible contract, and PyTorch's is the oracle (its derivatives.yaml: a
formula reading `self` saves self, one reading `result` saves the output, one reading
only `self.sizes()` saves nothing, and a tensor only a skipped gradient reads is not
saved at all).

We observe it without looking inside either node: for one sample of an op and one
choice of which inputs require grad, run the op afresh once per tensor involved (each
input, each output), bump that tensor's version counter (as an in-place op would, its
values unchanged), run backward and note whether it raised. The tensors whose bump
raises are the saved ones.

    python tests/saved_tensors.py [op-name ...]     prints every difference with PyTorch

`tests/test_saved_tensors_match_torch.py` runs it over the operator database.
`raises_after_inplace` and `raises_in_both` run a hand-written program instead, changing
one input in place under no_grad (tests/test_saved_tensors.py and
tests/test_regressions_einsum_saves.py).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

if __name__ == "__main__":
    # Run as a script: this checkout's tensorplay, not an installed one.
    sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).parent)]

import torch  # noqa: E402

import tensorplay as tp  # noqa: E402
from opinfo import op_db  # noqa: E402
from opinfo.core import to_torch  # noqa: E402

VERSION_ERROR = "modified by an inplace operation"


def _flat(value):
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flat(v)]
    return [value]


def _bump(t):
    """An in-place op's effect on the version counter, without changing any value."""
    if isinstance(t, torch.Tensor):
        torch.autograd.graph.increment_version(t)
    else:
        t._impl.version.value += 1


def raises_after_inplace(lib, make, change):
    """Build inputs with `make(lib)`, run the op, change one input in place under no_grad,
    and report whether backward raised the saved-tensor version error."""
    inputs, out = make(lib)
    with lib.no_grad():
        change(inputs)
    try:
        out.sum().backward()
    except Exception as e:  # noqa: BLE001 - each library's own error type
        assert VERSION_ERROR in str(e), e
        return True
    return False


def raises_in_both(make, change):
    """raises_after_inplace in TensorPlay and in PyTorch: (TensorPlay's, PyTorch's)."""
    return (raises_after_inplace(tp, make, change), raises_after_inplace(torch, make, change))


class _Library:
    """How one library is driven: its tensor type, its op, its error when a saved tensor
    was modified."""

    def __init__(self, tensor_type, call):
        self.tensor_type = tensor_type
        self.call = call

    def tensors(self, value):
        return [t for t in _flat(value) if isinstance(t, self.tensor_type)]

    def fresh(self, value, grad_positions, counter):
        """`value` with every tensor detached (new leaves sharing storage and version
        counter), those at `grad_positions` (in `tensors()` order) requiring grad."""
        if isinstance(value, self.tensor_type):
            position = counter[0]
            counter[0] += 1
            return value.detach().requires_grad_(position in grad_positions)
        if isinstance(value, tuple):
            return tuple(self.fresh(v, grad_positions, counter) for v in value)
        if isinstance(value, list):
            return [self.fresh(v, grad_positions, counter) for v in value]
        if isinstance(value, dict):
            return {k: self.fresh(v, grad_positions, counter) for k, v in value.items()}
        return value

    def saved(self, args, grad_positions):
        """The outcome of bumping each input, then each output: 'saved', 'free', or the
        error backward raised for another reason. None when nothing to differentiate."""
        outcome = []
        n_inputs = len(self.tensors(args))
        n_outputs = None
        target = 0
        while n_outputs is None or target < n_inputs + n_outputs:
            fresh = self.fresh(args, grad_positions, [0])
            inputs = self.tensors(fresh)
            result = self.call(fresh)
            outputs = self.tensors(result)
            n_outputs = len(outputs)
            losses = [o.sum() for o in outputs if o.requires_grad and o.is_floating_point()]
            if not losses:
                return None
            if target < n_inputs + n_outputs:
                _bump((inputs + outputs)[target])
                try:
                    sum(losses).backward()
                    outcome.append("free")
                except RuntimeError as e:
                    outcome.append("saved" if VERSION_ERROR in str(e) else
                                   f"error: {str(e)[:80]}")
            target += 1
        return outcome


@dataclass
class Difference:
    op: str
    sample: str
    requires_grad: tuple      # positions (among the sample's tensors) that require grad
    tensor: str               # "input 1" / "output 0"
    ours: str
    torch: str

    def __str__(self):
        return (f"{self.op} {self.sample} requires_grad={list(self.requires_grad)}: "
                f"{self.tensor} is {self.ours} in TensorPlay, {self.torch} in PyTorch")


def _grad_choices(floating):
    """All floating inputs requiring grad, then each one alone (PyTorch saves a tensor
    only when a gradient that reads it is wanted)."""
    choices = [tuple(floating)]
    if len(floating) > 1:
        choices += [(p,) for p in floating]
    return choices


def op_differences(op, max_samples=None, dtype=tp.float64):
    """Every difference in saved tensors between TensorPlay and PyTorch over the samples
    of `op` (an OpInfo)."""
    if not op.supports_autograd or op.mutates_input or dtype not in op.dtypes:
        return []
    ours = _Library(tp.Tensor, lambda a: op.op(a[0], *a[1], **a[2]))
    theirs = _Library(torch.Tensor, lambda a: op.ref(a[0], *a[1], **a[2]))
    found = []
    samples = op.sample_inputs("cpu", dtype, requires_grad=True)
    for sample in samples[:max_samples]:
        args = (sample.input, sample.args, sample.kwargs)
        t_args = to_torch(args, requires_grad=False)
        floating = [i for i, t in enumerate(ours.tensors(args)) if t.dtype.is_floating_point]
        if len(ours.tensors(args)) != len(theirs.tensors(t_args)):
            continue
        for grad_positions in _grad_choices(floating):
            try:
                expected = theirs.saved(t_args, grad_positions)
            except Exception:  # noqa: BLE001 - PyTorch refuses this call: nothing to compare
                continue
            if expected is None:
                continue
            actual = ours.saved(args, grad_positions)
            if actual is None:
                continue     # no gradient here (a non-differentiable input): not our topic
            n_inputs = len(ours.tensors(args))
            for k, (a, e) in enumerate(zip(actual, expected)):
                if a != e:
                    tensor = f"input {k}" if k < n_inputs else f"output {k - n_inputs}"
                    found.append(Difference(op.full_name, repr(sample), grad_positions,
                                            tensor, a, e))
    return found


def main(names):
    print(f"tensorplay from {Path(tp.__file__).parent}")
    selected = [op for op in op_db if not names or op.name in names or op.full_name in names]
    total = 0
    for op in selected:
        try:
            differences = op_differences(op)
        except Exception as e:  # noqa: BLE001 - reported, the sweep goes on
            print(f"{op.full_name}: the check itself failed: {type(e).__name__}: {e}")
            continue
        for d in differences:
            print(d)
        total += len(differences)
    print(f"{total} differences over {len(selected)} database entries")


if __name__ == "__main__":
    main(sys.argv[1:])
