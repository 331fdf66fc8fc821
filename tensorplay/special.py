"""`tp.special`: PyTorch's special-function namespace (`torch.special`).

The functions are the `special_*` ops of ops.yaml, named here as `torch.special` names
them (one a line). Most are computed on the CPU by SciPy's `scipy.special`; the common
ones have Triton kernels. Their pieces live in the modules of two families: `special`
(gamma, erf and the normal distribution's functions) and `bessel` (Bessel and Airy
functions, zeta, the orthogonal polynomials).
"""

# ---- family `special`: gamma, erf, the normal distribution, logit/expit, entr, ...


# ---- family `bessel`: Bessel and Airy functions, zeta, the orthogonal polynomials
from tensorplay._generated.functional import (  # noqa: F401
    special_airy_ai as airy_ai,
    special_bessel_j0 as bessel_j0,
    special_bessel_j1 as bessel_j1,
    special_bessel_y0 as bessel_y0,
    special_bessel_y1 as bessel_y1,
    special_chebyshev_polynomial_t as chebyshev_polynomial_t,
    special_chebyshev_polynomial_u as chebyshev_polynomial_u,
    special_chebyshev_polynomial_v as chebyshev_polynomial_v,
    special_chebyshev_polynomial_w as chebyshev_polynomial_w,
    special_hermite_polynomial_h as hermite_polynomial_h,
    special_hermite_polynomial_he as hermite_polynomial_he,
    special_laguerre_polynomial_l as laguerre_polynomial_l,
    special_legendre_polynomial_p as legendre_polynomial_p,
    special_modified_bessel_i0 as modified_bessel_i0,
    special_modified_bessel_i1 as modified_bessel_i1,
    special_modified_bessel_k0 as modified_bessel_k0,
    special_modified_bessel_k1 as modified_bessel_k1,
    special_scaled_modified_bessel_k0 as scaled_modified_bessel_k0,
    special_scaled_modified_bessel_k1 as scaled_modified_bessel_k1,
    special_shifted_chebyshev_polynomial_t as shifted_chebyshev_polynomial_t,
    special_shifted_chebyshev_polynomial_u as shifted_chebyshev_polynomial_u,
    special_shifted_chebyshev_polynomial_v as shifted_chebyshev_polynomial_v,
    special_shifted_chebyshev_polynomial_w as shifted_chebyshev_polynomial_w,
    special_spherical_bessel_j0 as spherical_bessel_j0,
    special_zeta as zeta,
)
