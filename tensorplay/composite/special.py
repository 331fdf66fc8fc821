"""Special functions that PyTorch defines by other ops: the multivariate log-gamma
(mvlgamma), the normal distribution's CDF (special_ndtr), xlog1py with a number on
either side, and the torch.special names of round, log_softmax and xlogy(number, tensor)
whose arguments differ from the op's (the other torch.special names are ops.yaml's
`alias_of:` entries)."""
from __future__ import annotations

import math

from tensorplay import _creation, _dtype as dt
from tensorplay._frontdoor import wrap_number
from tensorplay._generated import functional as F
from tensorplay.errors import ArgumentError, DTypeError
from tensorplay.kernel_support.checks import check_inplace_cast


def _check_mvlgamma(op, self, p):
    if self.dtype is dt.bool:
        raise DTypeError(f"{op}(): argument 'self' may not be a bool tensor (expected a "
                         f"number tensor, got bool)", op=op, arg="self")
    if p < 1:
        raise ArgumentError(f"{op}(): argument 'p' must be greater than or equal to 1, but "
                            f"got {p}", op=op, arg="p")


def mvlgamma(self, p):
    """log of the multivariate gamma function of dimension p:

        mvlgamma(x, p) = p (p - 1) / 4 * log(pi) + sum_{j=0}^{p-1} lgamma(x - j / 2)

    PyTorch's decomposition: the p shifts -(p-1)/2, ..., -1/2, 0 along a new last dim,
    lgamma of each, summed."""
    _check_mvlgamma("mvlgamma", self, p)
    dtype = self.dtype if self.dtype.is_floating_point else dt.get_default_dtype()
    shifts = _creation.arange(-p * 0.5 + 0.5, 0.5, 0.5, dtype=dtype, device=self.device)
    args = F.add(self.unsqueeze(-1), shifts)
    return F.add(F.sum(F.lgamma(args), -1), p * (p - 1) * math.log(math.pi) / 4)


def mvlgamma_(self, p):
    _check_mvlgamma("mvlgamma_", self, p)
    result = mvlgamma(self, p)
    check_inplace_cast("mvlgamma_", result.dtype, self)     # a float result into ints
    return self.copy_(result)


def special_ndtr(self):
    """The standard normal CDF, (1 + erf(x / sqrt(2))) / 2 (PyTorch's decomposition)."""
    return F.mul(F.add(F.erf(F.mul(self, 0.7071067811865476)), 1), 0.5)


def special_xlog1py_self_scalar(self, other):
    """xlog1py(number, tensor): the number wrapped, promoting as a Python scalar."""
    return F.special_xlog1py(wrap_number(self, other), other)


def special_xlog1py_other_scalar(self, other):
    return F.special_xlog1py(self, wrap_number(other, self))


def special_xlogy_self_scalar(self, other):
    """xlogy(number, tensor): PyTorch's xlogy.Scalar_Self, the number wrapped."""
    return F.xlogy(wrap_number(self, other), other)


def special_round(self, decimals):
    return F.round(self) if decimals == 0 else F.round(self, decimals=decimals)


def special_log_softmax(self, dim, dtype):
    return F.log_softmax(self, dim, dtype=dtype)
