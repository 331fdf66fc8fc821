"""The Scalar overloads of tp.special's polynomials and of zeta: the number is wrapped as
a 0-dim tensor (a "wrapped number": it promotes like a Python scalar, so an int64 n with a
float32 x stays float32) and the Tensor overload runs, as PyTorch's own decompositions of
these overloads do (`special_chebyshev_polynomial_t(wrapped_scalar_tensor(x), n)`)."""
from __future__ import annotations

from tensorplay._frontdoor import wrap_number
from tensorplay._generated import functional as F


def _x_scalar(name):
    op = getattr(F, name)

    def x_scalar(x, n):
        return op(wrap_number(x, n), n)
    x_scalar.__name__ = x_scalar.__qualname__ = f"{name}_x_scalar"
    return x_scalar


def _n_scalar(name):
    op = getattr(F, name)

    def n_scalar(x, n):
        return op(x, wrap_number(n, x))
    n_scalar.__name__ = n_scalar.__qualname__ = f"{name}_n_scalar"
    return n_scalar


_POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
                "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
                "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")

# special_chebyshev_polynomial_t_x_scalar, special_chebyshev_polynomial_t_n_scalar, ...
for _name in _POLYNOMIALS:
    globals()[f"special_{_name}_x_scalar"] = _x_scalar(f"special_{_name}")
    globals()[f"special_{_name}_n_scalar"] = _n_scalar(f"special_{_name}")
del _name


def zeta_self_scalar(self, other):
    return F.special_zeta(wrap_number(self, other), other)


def zeta_other_scalar(self, other):
    return F.special_zeta(self, wrap_number(other, self))
