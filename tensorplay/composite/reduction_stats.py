"""Reductions PyTorch defines from others: var/std with `unbiased`, var_mean/std_mean, norm with a
string p, argsort from sort. No derivatives.yaml entries: autograd records the ops they
call (composite implicit autograd), and the Meta backend runs them unchanged."""
from __future__ import annotations

from tensorplay._generated import functional as F
from tensorplay.errors import ArgumentError


def var_unbiased(self, dim, unbiased, keepdim):
    return F.var(self, dim, correction=1 if unbiased else 0, keepdim=keepdim)


def std_unbiased(self, dim, unbiased, keepdim):
    return F.std(self, dim, correction=1 if unbiased else 0, keepdim=keepdim)


def var_mean(self, dim, correction, keepdim):
    return (F.var(self, dim, correction=correction, keepdim=keepdim),
            F.mean(self, dim, keepdim=keepdim))


def std_mean(self, dim, correction, keepdim):
    return (F.std(self, dim, correction=correction, keepdim=keepdim),
            F.mean(self, dim, keepdim=keepdim))


def norm_str(self, p, dim, keepdim, dtype):
    """p="fro": the Frobenius norm, i.e. the 2-norm of the elements (over `dim`)."""
    if p != "fro":
        raise ArgumentError(f"norm(): argument 'p' must be a number or 'fro', but got {p!r} "
                            f"('nuc' needs a singular value decomposition, which TensorPlay "
                            f"does not have)", op="norm", arg="p")
    return F.norm(self, 2, dim, keepdim, dtype=dtype)


def argsort(self, dim, descending):
    return F.sort(self, dim, descending)[1]


def argsort_stable(self, stable, dim, descending):
    return F.sort(self, dim, descending)[1]
