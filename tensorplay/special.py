"""`tp.special`: PyTorch's special-function namespace (`torch.special`).

The functions are the `special_*` ops of ops.yaml, named here as `torch.special` names
them (one a line). Most are computed on the CPU by SciPy's `scipy.special`; the common
ones have Triton kernels. Their pieces live in the modules of two families: `special`
(gamma, erf and the normal distribution's functions) and `bessel` (Bessel and Airy
functions, zeta, the orthogonal polynomials).
"""

# ---- family `special`: gamma, erf, the normal distribution, logit/expit, entr, ...


# ---- family `bessel`: Bessel and Airy functions, zeta, the orthogonal polynomials
