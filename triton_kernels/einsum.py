"""einsum on the `cuda` device, composed on the host from views, sums and batched
matrix products, so the contraction runs the Triton matmul kernel (linalg.py).

The equation is parsed as the shape rule parses it (parse_einsum, kernel_support/einsum.py:
'...' spelled out as letters, the output explicit). Then:

1. each operand: a letter repeated within it takes the diagonal (one dim whose stride is
   the sum of the repeated dims' strides, a view); a letter that appears nowhere else
   (not in another operand, not in the output) is summed out at once;
2. operands are contracted left to right. For A (letters a) and B (letters b):

       batch   = letters of both that are still needed (the output, a later operand)
       summed  = letters of both that are not
       A: [batch, a only, summed] -> [Bt, M, K];  B: [batch, summed, b only] -> [Bt, K, N]
       bmm -> [Bt, M, N] -> letters batch + a only + b only

   (a size-1 letter broadcasts: both operands are expanded to the letters' sizes first);
3. the result is permuted to the output's letters and copied (einsum always returns a
   new tensor, as the CPU kernel).

Half types: every product accumulates in float32 and rounds once per contraction.
"""
from __future__ import annotations

from tensorplay.kernel_support.einsum import einsum_strides, parse_einsum
from tensorplay.kernel_support.ops import call_below_autograd, shape_rule
from tensorplay.kernel_support.results import factory
from triton_kernels._launch import operands
from triton_kernels.pointwise import run


def _diagonal(t, letters):
    """Repeated letters of one operand -> one dim each (its diagonal, as a view)."""
    if len(set(letters)) == len(letters):
        return t, letters
    kept = "".join(dict.fromkeys(letters))
    sizes = [t._impl.sizes[letters.index(c)] for c in kept]
    strides = [sum(s for c2, s in zip(letters, t._impl.strides) if c2 == c) for c in kept]
    return t.as_strided(sizes, strides, t._impl.offset), kept


def _sum_out(t, letters, needed):
    """Sum the letters that are not `needed` elsewhere."""
    dims = [i for i, c in enumerate(letters) if c not in needed]
    if not dims:
        return t, letters
    summed = call_below_autograd("sum.dim_IntList", t, tuple(dims), False, None)
    return summed, "".join(c for c in letters if c in needed)


def _arrange(t, letters, groups, sizes):
    """t permuted to the letters of `groups` in order, expanded to their sizes, and
    reshaped to one dim per group."""
    order = "".join(groups)
    t = t.permute([letters.index(c) for c in order]).expand([sizes[c] for c in order])
    shape = []
    for group in groups:
        n = 1
        for c in group:
            n *= sizes[c]
        shape.append(n)
    return t.reshape(shape)


def _contract(a, la, b, lb, needed, sizes):
    batch = "".join(c for c in la if c in lb and c in needed)
    summed = "".join(c for c in la if c in lb and c not in needed)
    a_only = "".join(c for c in la if c not in lb)
    b_only = "".join(c for c in lb if c not in la)
    left = _arrange(a, la, (batch, a_only, summed), sizes)
    right = _arrange(b, lb, (batch, summed, b_only), sizes)
    product = call_below_autograd("bmm", left, right)
    letters = batch + a_only + b_only
    return product.reshape([sizes[c] for c in letters]), letters


def einsum(equation, tensors):
    spec = shape_rule("einsum.einsum")("einsum", (equation, tensors))
    device, tensors = operands("einsum", **{f"tensors[{i}]": t for i, t in enumerate(tensors)})
    parsed = parse_einsum("einsum", equation, [t._impl.sizes for t in tensors])
    sizes, output = parsed.sizes, parsed.output
    terms = []
    for i, (t, letters) in enumerate(zip(tensors, parsed.inputs)):
        t, letters = _diagonal(t, letters)
        elsewhere = output + "".join(s for j, s in enumerate(parsed.inputs) if j != i)
        terms.append(_sum_out(t, letters, elsewhere))
    result, letters = terms[0]
    for i, (t, lt) in enumerate(terms[1:], start=1):
        needed = output + "".join(s for _, s in terms[i + 1:])
        result, letters = _contract(result, letters, t, lt, needed, sizes)
    result = result.permute([letters.index(c) for c in output]).expand(spec.sizes)
    # Laid out as PyTorch's result (kernel_support/einsum.py), as on the CPU.
    strides = einsum_strides(parsed, [(t._impl.sizes, t._impl.strides) for t in tensors])
    target = factory.empty_strided(spec.sizes, strides, dtype=spec.dtype, device=device)
    return run("copy", target, (result,), spec.dtype)
