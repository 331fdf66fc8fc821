"""Random kernels: normal_, uniform_, exponential_, bernoulli, multinomial, random_,
cauchy_, log_normal_, geometric_, poisson, binomial.

Every draw comes from the given tp.Generator or the default one, consumed exactly as
PyTorch's CPU kernels consume theirs (tensorplay/_random_draws.py), so after the same
`manual_seed` these kernels give PyTorch's numbers. The in-place forms write into the
tensor's own memory (any strides, visited in PyTorch's order) and return it.
"""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay import _random_draws as draws
from tensorplay._random import get
from tensorplay.errors import ArgumentError
from tensorplay.kernel_support.ops import shape_rule
from tensorplay.kernel_support.random_bounds import random_bounds
from cpu_kernels._common import out


def normal_(self, mean, std, generator):
    """self[i] = mean + std * N(0, 1)."""
    shape_rule("random.random_float_inplace")("normal_", (self, mean, std, generator))
    draws.fill_normal(get(generator), self._impl.array(), mean, std)
    return self


def uniform_(self, from_, to, generator):
    """self[i] drawn uniformly from [from_, to)."""
    shape_rule("random.random_float_inplace")("uniform_", (self, from_, to, generator))
    draws.fill_uniform(get(generator), self._impl.array(), from_, to)
    return self


def exponential_(self, lambd, generator):
    """self[i] drawn from the exponential distribution of rate lambd (mean 1 / lambd)."""
    shape_rule("random.random_float_inplace")("exponential_", (self, lambd, generator))
    draws.fill_exponential(get(generator), self._impl.array(), lambd)
    return self


def _check_probabilities(op, arg, p):
    if p.size and not ((p >= 0) & (p <= 1)).all():
        bad = p[~((p >= 0) & (p <= 1))].flat[0]
        raise ArgumentError(f"{op}(): argument '{arg}' must hold probabilities in [0, 1], but "
                            f"it contains {bad}", op=op, arg=arg)


def bernoulli(self, generator):
    """out[i] = 1 with probability self[i], else 0 (in self's dtype; a contiguous output
    filled in order, as PyTorch's empty_like(self, contiguous).bernoulli_(self))."""
    shape_rule("pointwise.unary_floating")("bernoulli", (self,))
    p = self._impl.array()
    _check_probabilities("bernoulli", "self", p)
    result = np.empty(p.shape, p.dtype)
    draws.fill_bernoulli_tensor(get(generator), result, p)
    return out(result, self._impl.dtype)


def bernoulli_p(self, p, generator):
    """out[i] = 1 with probability p, else 0 (in self's dtype; self gives only the shape)."""
    shape_rule("pointwise.unary_floating")("bernoulli", (self,))
    _check_probabilities("bernoulli", "p", np.asarray(p, np.float64))
    result = np.empty_like(self._impl.array())    # keeps self's layout, as empty_like
    draws.fill_bernoulli_scalar(get(generator), result, p)
    return out(result.copy(order="C"), self._impl.dtype)


def bernoulli__float(self, p, generator):
    shape_rule("random.random_float_inplace")("bernoulli_", (self, p, generator))
    _check_probabilities("bernoulli_", "p", np.asarray(p, np.float64))
    draws.fill_bernoulli_scalar(get(generator), self._impl.array(), p)
    return self


def bernoulli__tensor(self, p, generator):
    shape_rule("random.bernoulli_tensor_inplace")("bernoulli_", (self, p, generator))
    probs = p._impl.array()
    _check_probabilities("bernoulli_", "p", probs)
    draws.fill_bernoulli_tensor(get(generator), self._impl.array(), probs)
    return self


def multinomial(self, num_samples, replacement, generator):
    """Indices drawn from the categories 0..n-1 with weights self[..., j] (each row of a
    2-D input on its own), as PyTorch's CPU kernel draws them.

    Without replacement, or one sample: an exponential race (Gumbel-max in disguise),
        q = exponential_(1) shaped as self;  key = self / q
        out = argmax(key) (one sample) or the num_samples largest keys, largest first
    so zero-weight categories come last once the others are used up.
    With replacement, inverse-CDF sampling, row by row, sample by sample:
        cdf = cumsum(w) / sum(w) (in self's dtype; float for half/bfloat16), cdf[-1] = 1
        u ~ U[0, 1) (double);  out = the first j with cdf[j] >= u
    """
    shape_rule("random.multinomial")("multinomial", (self, num_samples, replacement, generator))
    w = self._impl.array()
    rows = w.reshape(1, -1) if w.ndim == 1 else w
    if not np.all(np.isfinite(rows)) or np.any(rows < 0):
        raise ArgumentError("multinomial(): argument 'self' must hold finite, non-negative "
                            "weights", op="multinomial", arg="self")
    acc = rows.dtype if rows.dtype in (np.float32, np.float64) else np.float32
    totals = rows.astype(acc).sum(axis=1, keepdims=True)
    if np.any(totals <= 0):
        raise ArgumentError("multinomial(): every row of argument 'self' needs a positive "
                            "weight sum", op="multinomial", arg="self")
    gen = get(generator)
    if not replacement or num_samples == 1:
        q = draws.fill_exponential(gen, np.empty(rows.shape, rows.dtype), 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            keys = rows / q
        picks = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    else:
        cdf = np.cumsum(rows.astype(acc), axis=1, dtype=acc)
        cdf /= cdf[:, -1:]
        cdf[:, -1] = 1
        u = draws.uniform01_double(gen, rows.shape[0] * num_samples)
        u = u.reshape(rows.shape[0], num_samples)
        # (an input with no rows draws nothing: np.stack of no rows would raise)
        picks = np.empty((0, num_samples), np.int64) if not len(cdf) else np.stack(
            [np.searchsorted(c.astype(np.float64), x, side="left") for c, x in zip(cdf, u)])
    return out(picks.reshape(w.shape[:-1] + (num_samples,)), dt.int64)


# ---- random_, cauchy_, log_normal_, geometric_ ------------------------------------------
# Whole 64-bit words for these dtypes (PyTorch's uniform_int distributions).
_WIDE = (dt.int64, dt.float64)


def random_(self, generator):
    """Integers from 0 to the dtype's largest exactly representable one (2^digits for a
    float; bool: 0 or 1)."""
    shape_rule("random.random_inplace")("random_", (self, generator))
    draws.fill_random_full(get(generator), self._impl.array(), self._impl.dtype in _WIDE)
    return self


def random__to(self, to, generator):
    """Integers drawn uniformly from [0, to)."""
    shape_rule("random.random_inplace")("random_", (self, to, generator))
    draws.fill_random_from_to(get(generator), self._impl.array(), 0, to)
    return self


def random__from(self, from_, to, generator):
    """Integers drawn uniformly from [from_, to); to=None: up to the dtype's largest
    integer (inclusive), or every int64 when from_ is the int64 minimum."""
    shape_rule("random.random_inplace")("random_", (self, from_, to, generator))
    low, high = random_bounds("random_", self._impl.dtype, from_, to)
    if high is None:
        draws.fill_random_64_bits(get(generator), self._impl.array())
    else:
        draws.fill_random_from_to(get(generator), self._impl.array(), low, high)
    return self


def cauchy_(self, median, sigma, generator):
    """self[i] = median + sigma * tan(pi * (U - 0.5))."""
    shape_rule("random.random_inplace")("cauchy_", (self, median, sigma, generator))
    draws.fill_cauchy(get(generator), self._impl.array(), median, sigma)
    return self


def log_normal_(self, mean, std, generator):
    """self[i] = exp(mean + std * N(0, 1))."""
    shape_rule("random.random_inplace")("log_normal_", (self, mean, std, generator))
    draws.fill_log_normal(get(generator), self._impl.array(), mean, std)
    return self


def geometric_(self, p, generator):
    """self[i] = the number of Bernoulli(p) trials up to the first success."""
    shape_rule("random.random_inplace")("geometric_", (self, p, generator))
    draws.fill_geometric(get(generator), self._impl.array(), p)
    return self


# ---- poisson, binomial ------------------------------------------------------------------
def poisson(self, generator):
    """out[i] ~ Poisson(self[i]), in self's dtype (a new contiguous tensor)."""
    shape_rule("random.poisson")("poisson", (self, generator))
    rates = np.array(self._impl.array(), np.float64, order="C")   # (0-d stays 0-d)
    if rates.size and not (rates >= 0).all():
        raise ArgumentError("poisson(): invalid Poisson rate, expected rate to be "
                            "non-negative (argument 'self')", op="poisson", arg="self")
    return out(draws.poisson(get(generator), rates), self._impl.dtype)


def binomial(count, prob, generator):
    """out[i] ~ Binomial(count[i], prob[i]) (count and prob broadcast together)."""
    spec = shape_rule("random.binomial")("binomial", (count, prob, generator))
    counts = np.array(np.broadcast_to(count._impl.array(), spec.sizes), order="C")
    probs = np.array(np.broadcast_to(prob._impl.array(), spec.sizes), order="C")
    return out(draws.binomial(get(generator), counts, probs), spec.dtype)
