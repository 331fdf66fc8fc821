"""Batching rule of einsum: one more letter for the batch."""
from __future__ import annotations

from tensorplay.func.batching_rules import call, to_front


# ---- einsum: one more letter for the batch ------------------------------------------------
def einsum_rule(op, args, bdims):
    """`ij,jk->ik` with the first operand batched becomes `Zij,jk->Zik` (Z unused)."""
    equation, tensors = args
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if not arrow:
        # Implicit output: the letters used once, in order, after any ellipsis.
        letters = [c for c in lhs if c.isalpha()]
        rhs = ("..." if "..." in lhs else "") + \
            "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    free = next(c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba"
                if c not in equation)
    new_terms, new_tensors = [], []
    for term, t, d in zip(terms, tensors, bdims[1]):
        if d is None:
            new_terms.append(term)
            new_tensors.append(t)
        else:
            new_terms.append(free + term)
            new_tensors.append(to_front(t, d))
    return call(op, f"{','.join(new_terms)}->{free}{rhs}", new_tensors), 0
