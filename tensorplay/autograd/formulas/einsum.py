"""einsum's backward: each operand's gradient is an einsum of the gradient with the
other operands, parsed as the forward parses its equation.

Written with TensorPlay ops only, so they can be differentiated again.
"""
from __future__ import annotations

from tensorplay import _creation
from tensorplay._generated import functional as F
from tensorplay.autograd.formulas.complex import handle_r_to_c
from tensorplay.autograd.formulas.core import sum_to
from tensorplay.kernel_support.einsum import parse_einsum


def einsum_backward(grad, equation, tensors, sizes, dtypes):
    """The gradients of einsum's operands (None where one does not require grad).

    An operand no other operand's gradient reads was not saved (None in `tensors`,
    others_require_grad): it requires grad, and only its shape plays a part, so a
    zero stand-in of its size and dtype (one element, expanded) takes its place.

    Two operands: `_operand_grad`. Three or more: the forward contracts them pairwise from
    left to right (PyTorch's order, see the CPU kernel), so the gradient goes back through
    that chain of two-operand einsums, as PyTorch's does: the partial products are
    recomputed and each step's two gradients taken in turn. The order matters for more than
    rounding: an inf in one operand meets the others' values in a different order."""
    spec = parse_einsum("einsum", equation, [tuple(size) for size in sizes])
    needed = [t is None or t.requires_grad for t in tensors]
    tensors = [_creation.zeros((), dtype=dtype, device=grad.device).expand(list(size))
               if t is None else t for t, size, dtype in zip(tensors, sizes, dtypes)]
    # In the output's dtype (operands of mixed dtypes were promoted by the forward); each
    # gradient goes back to its operand's dtype at the end.
    tensors = [t.to(grad.dtype) for t in tensors]
    return [g if g is None else handle_r_to_c(dtype, g).to(dtype)
            for g, dtype in zip(_einsum_grads(grad, spec, tensors, needed), dtypes)]


def _einsum_grads(grad, spec, tensors, needed):
    if len(tensors) <= 2:
        return [_operand_grad(grad, spec, tensors, i) if needed[i] else None
                for i in range(len(tensors))]
    # The subscripts of each partial product: the letters still needed later, in order.
    steps, acc = [], spec.inputs[0]
    for k in range(1, len(tensors)):
        later = spec.output + "".join(spec.inputs[k + 1:])
        res = spec.output if k == len(tensors) - 1 else "".join(
            c for c in dict.fromkeys(acc + spec.inputs[k]) if c in later)
        steps.append((acc, spec.inputs[k], res))
        acc = res
    partials = [tensors[0]]
    for k, (a, b, r) in enumerate(steps[:-1], start=1):
        partials.append(F.einsum(f"{a},{b}->{r}", [partials[-1], tensors[k]]))
    grads = [None] * len(tensors)
    g = grad
    for k in range(len(tensors) - 1, 0, -1):
        a, b, r = steps[k - 1]
        pair = [partials[k - 1], tensors[k]]
        pair_spec = parse_einsum("einsum", f"{a},{b}->{r}", [tuple(t.shape) for t in pair])
        if needed[k]:
            grads[k] = _operand_grad(g, pair_spec, pair, 1)
        if not any(needed[:k]):
            break
        g = _operand_grad(g, pair_spec, pair, 0)
    else:
        grads[0] = g
    return grads


def _operand_grad(grad, spec, tensors, i):
    """The gradient of operand i is itself an einsum: the output's gradient contracted with
    every other operand, written to operand i's subscripts.

        'ij,jk->ik':  d A = einsum('ik,jk->ij', grad, conj(B)),
                      d B = einsum('ik,ij->jk', grad, conj(A))

    Two cases need help:
    - a letter only operand i has ('ij->i' sums j away): a ones vector brings it back;
    - a letter repeated in operand i ('ii->i', a diagonal): the gradient is taken for the
      distinct letters and written onto the diagonal of zeros (not multiplied by an
      identity matrix: 0 * inf would put NaN off the diagonal).
    Broadcast (size-1) dims of operand i are summed back with sum_to."""
    t = tensors[i]
    subs = [spec.output] + [s for j, s in enumerate(spec.inputs) if j != i]
    # complex numbers: the other operands' conjugates (d A of A @ B is grad @ B^H)
    operands = [grad] + [x.conj() for j, x in enumerate(tensors) if j != i]
    target = "".join(dict.fromkeys(spec.inputs[i]))
    for c in target:
        if not any(c in s for s in subs):
            subs.append(c)
            operands.append(_creation.ones(spec.sizes[c], dtype=grad.dtype,
                                           device=grad.device))
    g = F.einsum(",".join(subs) + "->" + target, operands)
    if len(target) < len(spec.inputs[i]):
        full = _creation.zeros([spec.sizes[c] for c in spec.inputs[i]], dtype=grad.dtype,
                               device=grad.device)
        strides = full.stride()
        diagonal = full.as_strided([spec.sizes[c] for c in target],
                                   [sum(st for d, st in zip(spec.inputs[i], strides) if d == c)
                                    for c in target])
        diagonal.copy_(g)
        g = full
    return sum_to(g, tuple(t.shape))


# ---- tangents (forward mode) -------------------------------------------------------------
def einsum_jvp(equation, tensors_p, tensors_t):
    """einsum is multilinear: the sum over operands of the einsum with that operand's
    tangent in its place."""
    out = None
    for i, t in enumerate(tensors_t):
        if t is None:
            continue
        term = F.einsum(equation, [t if j == i else p for j, p in enumerate(tensors_p)])
        out = term if out is None else out + term
    return out
