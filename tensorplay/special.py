"""`tp.special`: PyTorch's special-function namespace (`torch.special`).

The functions are the `special_*` ops of ops.yaml, named here as `torch.special` names
them (one a line). Most are computed on the CPU by SciPy's `scipy.special`; the common
ones have Triton kernels. Their pieces live in the modules of two families: `special`
(gamma, erf and the normal distribution's functions) and `bessel` (Bessel and Airy
functions, zeta, the orthogonal polynomials).
"""

# ---- family `special`: gamma, erf, the normal distribution, logit/expit, entr, ...
from tensorplay._generated.functional import special_digamma as digamma  # noqa: F401
from tensorplay._generated.functional import special_entr as entr  # noqa: F401
from tensorplay._generated.functional import special_erf as erf  # noqa: F401
from tensorplay._generated.functional import special_erfc as erfc  # noqa: F401
from tensorplay._generated.functional import special_erfcx as erfcx  # noqa: F401
from tensorplay._generated.functional import special_erfinv as erfinv  # noqa: F401
from tensorplay._generated.functional import special_exp2 as exp2  # noqa: F401
from tensorplay._generated.functional import special_expit as expit  # noqa: F401
from tensorplay._generated.functional import special_expm1 as expm1  # noqa: F401
from tensorplay._generated.functional import special_gammainc as gammainc  # noqa: F401
from tensorplay._generated.functional import special_gammaincc as gammaincc  # noqa: F401
from tensorplay._generated.functional import special_gammaln as gammaln  # noqa: F401
from tensorplay._generated.functional import special_i0 as i0  # noqa: F401
from tensorplay._generated.functional import special_i0e as i0e  # noqa: F401
from tensorplay._generated.functional import special_i1 as i1  # noqa: F401
from tensorplay._generated.functional import special_i1e as i1e  # noqa: F401
from tensorplay._generated.functional import special_log1p as log1p  # noqa: F401
from tensorplay._generated.functional import special_log_ndtr as log_ndtr  # noqa: F401
from tensorplay._generated.functional import special_log_softmax as log_softmax  # noqa: F401
from tensorplay._generated.functional import special_logit as logit  # noqa: F401
from tensorplay._generated.functional import special_logsumexp as logsumexp  # noqa: F401
from tensorplay._generated.functional import special_multigammaln as multigammaln  # noqa: F401
from tensorplay._generated.functional import special_ndtr as ndtr  # noqa: F401
from tensorplay._generated.functional import special_ndtri as ndtri  # noqa: F401
from tensorplay._generated.functional import special_polygamma as polygamma  # noqa: F401
from tensorplay._generated.functional import special_psi as psi  # noqa: F401
from tensorplay._generated.functional import special_round as round  # noqa: F401,A004
from tensorplay._generated.functional import special_sinc as sinc  # noqa: F401
from tensorplay._generated.functional import special_softmax as softmax  # noqa: F401
from tensorplay._generated.functional import special_xlog1py as xlog1py  # noqa: F401
from tensorplay._generated.functional import special_xlogy as xlogy  # noqa: F401


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
