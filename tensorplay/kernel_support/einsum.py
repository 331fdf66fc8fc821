"""einsum's equation, parsed once for its shape rule, the kernels and the backward formula
(`parse_einsum`), and the strides of its result: PyTorch's, which follow from how it
computes it (`einsum_strides`).

PyTorch's einsum (aten/src/ATen/native/Linear.cpp) aligns every operand to one list of
dims (the output's, then the contracted ones), then contracts the operands left to
right, two at a time (`sumproduct_pair`):

    no dim to sum    a * b: laid out as a pointwise op (`pointwise_strides`)
    otherwise        bmm of a and b, each permuted to (both, only a | summed, only b):
                     the row-major (both, only a, summed, only b) result, permuted back
                     (a and b swap first when b's dims all come before a's)

and at the end views away the contracted dims (all of size 1 by then). Only the last
step decides the layout, but a `*` step needs its operands' strides, so every step's
sizes and strides are followed here (a sum is a reduction: row-major). One operand:
PyTorch returns a permuted view of it (a sum when a dim is contracted); a result of our
own gets that view's layout where it is dense.
"""
from __future__ import annotations

import string
from dataclasses import dataclass

from tensorplay._impl import contiguous_strides
from tensorplay.errors import ArgumentError, ShapeError, fmt_shape
from tensorplay.kernel_support.layout import clone_strides, pointwise_strides, view_strides

__all__ = ["Einsum", "parse_einsum", "einsum_strides"]

# PyTorch's order of labels: A-Z, then a-z.
_LABEL_ORDER = {c: i for i, c in enumerate(string.ascii_uppercase + string.ascii_lowercase)}


def einsum_strides(parsed, operands):
    """`parsed`: the Einsum of parse_einsum below; `operands`: (sizes, strides) of
    each tensor. Returns the result's strides."""
    out_labels = list(parsed.output)
    used = set("".join(parsed.inputs))
    contracted = [c for c in parsed.ellipsis if c not in out_labels and c in used]
    contracted += sorted((c for c in used if c not in out_labels and c not in contracted),
                         key=_LABEL_ORDER.get)
    labels = out_labels + contracted
    n_out = len(out_labels)

    ops = [_aligned(sub, sizes, strides, labels) for sub, (sizes, strides) in
           zip(parsed.inputs, operands)]
    counts = [sum(1 for sizes, _ in ops if sizes[d] != 1) for d in range(len(labels))]

    if len(ops) == 1:
        sizes, strides = ops[0]
        if contracted:      # a sum: a reduction's row-major result
            return contiguous_strides(tuple(sizes[:n_out]))
        return clone_strides(sizes, strides)

    while len(ops) > 1:
        a, b = ops.pop(0), ops.pop(0)
        sum_dims, a_sum, b_sum = [], [], []
        for d in range(n_out, len(labels)):
            if a[0][d] != 1 and b[0][d] != 1:
                counts[d] -= 1
                if counts[d] == 1:
                    sum_dims.append(d)
                    counts[d] = 0
            elif counts[d] == 1:
                if a[0][d] != 1:
                    a_sum.append(d)
                    counts[d] = 0
                elif b[0][d] != 1:
                    b_sum.append(d)
                    counts[d] = 0
        a, b = _summed(a, a_sum), _summed(b, b_sum)
        ops.insert(0, _sumproduct_pair(a, b, sum_dims))

    sizes, strides = ops[0]
    if len(labels) > n_out:
        return view_strides(sizes, strides, sizes[:n_out])
    return tuple(strides)


def _aligned(sub, sizes, strides, labels):
    """An operand permuted to `labels`: a repeated label is its diagonal (the strides
    add up), a missing one a size-1 dim (stride 1: PyTorch unsqueezes at the end)."""
    out_sizes, out_strides = [], []
    for c in labels:
        dims = [i for i, x in enumerate(sub) if x == c]
        if dims:
            out_sizes.append(sizes[dims[0]])
            out_strides.append(sum(strides[i] for i in dims))
        else:
            out_sizes.append(1)
            out_strides.append(1)
    return tuple(out_sizes), tuple(out_strides)


def _summed(op, dims):
    """op.sum(dims, keepdim=True): a row-major result."""
    if not dims:
        return op
    sizes = tuple(1 if d in dims else n for d, n in enumerate(op[0]))
    return sizes, contiguous_strides(sizes)


def _sumproduct_pair(a, b, sum_dims):
    (a_sizes, a_strides), (b_sizes, b_strides) = a, b
    if not sum_dims:
        sizes = tuple(max(x, y) if 1 in (x, y) else x for x, y in zip(a_sizes, b_sizes))
        return sizes, pointwise_strides(sizes, [a, b])
    both, only_a, only_b = [], [], []
    for d, (x, y) in enumerate(zip(a_sizes, b_sizes)):
        if d in sum_dims:
            if x != 1 and y != 1:
                continue
            if x != 1:
                a_sizes = a_sizes[:d] + (1,) + a_sizes[d + 1:]
            elif y != 1:
                b_sizes = b_sizes[:d] + (1,) + b_sizes[d + 1:]
        elif x != 1 and y != 1:
            both.append(d)
        elif x != 1:
            only_a.append(d)
        else:
            only_b.append(d)
    if only_a and only_b and only_b[-1] < only_a[0]:
        # PyTorch swaps the two then, so that bmm writes the dims in their output order.
        only_a, only_b = only_b, only_a
    order = both + only_a + list(sum_dims) + only_b       # dims of the bmm's result
    full = [x if x != 1 else y for x, y in zip(a_sizes, b_sizes)]
    out_sizes = tuple(1 if d in sum_dims else full[d] for d in order)
    flat = contiguous_strides(out_sizes)
    sizes = [0] * len(order)
    strides = [0] * len(order)
    for position, d in enumerate(order):
        sizes[d] = out_sizes[position]
        strides[d] = flat[position]
    return tuple(sizes), tuple(strides)


# ---- einsum ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Einsum:
    """An einsum equation with '...' replaced by letters and the output made explicit.

    inputs: one subscript string per operand;  output: the output's subscripts;
    sizes: letter -> size (broadcast: a size-1 letter takes the other operands' size);
    ellipsis: the letters that spell '...', in order."""
    inputs: tuple
    output: str
    sizes: dict
    ellipsis: str = ""

    @property
    def equation(self):
        return ",".join(self.inputs) + "->" + self.output


def parse_einsum(op, equation, shapes):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    subs = lhs.split(",")
    if len(subs) != len(shapes):
        raise ArgumentError(f"{op}(): the equation {equation!r} names {len(subs)} operands "
                            f"(argument 'equation') but {len(shapes)} tensors were given",
                            op=op, arg="equation")
    for part in subs + [rhs]:
        bad = set(part.replace("...", "")) - set(string.ascii_letters)
        if bad:
            raise ArgumentError(f"{op}(): invalid subscript {sorted(bad)[0]!r} in the equation "
                                f"{equation!r} (argument 'equation'): subscripts are letters "
                                f"[a-zA-Z] and '...'", op=op, arg="equation")
    free = [c for c in string.ascii_letters if c not in eq]
    ell_rank = max([len(s) - len(sub) + 3 for sub, s in zip(subs, shapes) if "..." in sub],
                   default=0)
    ell = "".join(free[:ell_rank])
    inputs = []
    for i, (sub, shape) in enumerate(zip(subs, shapes)):
        if "..." in sub:
            k = len(shape) - (len(sub) - 3)
            sub = sub.replace("...", ell[ell_rank - k:] if k > 0 else "")
        if len(sub) != len(shape):
            raise ShapeError(f"{op}(): the subscripts {subs[i]!r} of operand {i} do not match "
                             f"its {len(shape)} dims (shape {fmt_shape(shape)}; argument "
                             f"'equation')", op=op, arg="equation")
        inputs.append(sub)
    sizes = {}
    for i, (sub, shape) in enumerate(zip(inputs, shapes)):
        for c, n in zip(sub, shape):
            have = sizes.get(c, 1)
            if have != n and have != 1 and n != 1:
                raise ShapeError(f"{op}(): subscript {c!r} has size {n} in operand {i} but "
                                 f"size {have} elsewhere (argument 'tensors')", op=op,
                                 arg="tensors")
            sizes[c] = n if have == 1 else have
    if arrow:
        output = rhs.replace("...", ell)
        for c in output:
            if c not in sizes or output.count(c) > 1:
                raise ArgumentError(f"{op}(): output subscript {c!r} in {equation!r} must "
                                    f"appear once, and in an operand (argument 'equation')",
                                    op=op, arg="equation")
    else:   # implicit: the '...' dims, then the letters used once, in alphabetical order
        letters = lhs.replace("...", "").replace(",", "")
        output = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return Einsum(tuple(inputs), output, sizes, ell)
