"""Random kernels: normal_, uniform_, exponential_, bernoulli, multinomial.

Every draw comes from `rng(generator)`: the NumPy generator of the given tp.Generator,
or of the default one, so `tp.manual_seed(n)` makes a run reproducible. Values are drawn
in float64 and rounded once to the tensor's dtype; the in-place forms write into the
tensor's own memory (any strides) and return it.
"""
from __future__ import annotations

import numpy as np

from tensorplay import _dtype as dt
from tensorplay._random import rng
from tensorplay.errors import ArgumentError
from tensorplay.meta import pointwise as rules
from cpu_kernels._common import out


def _fill(self, values):
    np.copyto(self._impl.array(), values, casting="unsafe")
    return self


def normal_(self, mean, std, generator):
    """self[i] = mean + std * N(0, 1)."""
    rules.random_float_inplace("normal_", (self, mean, std, generator))
    draw = rng(generator).standard_normal(self._impl.sizes)
    return _fill(self, mean + std * draw)


def uniform_(self, from_, to, generator):
    """self[i] drawn uniformly from [from_, to)."""
    rules.random_float_inplace("uniform_", (self, from_, to, generator))
    return _fill(self, rng(generator).uniform(from_, to, self._impl.sizes))


def exponential_(self, lambd, generator):
    """self[i] drawn from the exponential distribution of rate lambd (mean 1 / lambd)."""
    rules.random_float_inplace("exponential_", (self, lambd, generator))
    return _fill(self, rng(generator).exponential(1.0 / lambd, self._impl.sizes))


def _check_probabilities(op, arg, p):
    if p.size and not ((p >= 0) & (p <= 1)).all():
        bad = p[~((p >= 0) & (p <= 1))].flat[0]
        raise ArgumentError(f"{op}(): argument '{arg}' must hold probabilities in [0, 1], but "
                            f"it contains {bad}", op=op, arg=arg)


def bernoulli(self, generator):
    """out[i] = 1 with probability self[i], else 0 (in self's dtype)."""
    rules.unary_floating("bernoulli", (self,))
    p = self._impl.array().astype(np.float64)
    _check_probabilities("bernoulli", "self", p)
    return out(rng(generator).random(p.shape) < p, self._impl.dtype)


def bernoulli_p(self, p, generator):
    """out[i] = 1 with probability p, else 0 (in self's dtype; self gives only the shape)."""
    rules.unary_floating("bernoulli", (self,))
    _check_probabilities("bernoulli", "p", np.asarray(p, np.float64))
    return out(rng(generator).random(self._impl.sizes) < p, self._impl.dtype)


def bernoulli__float(self, p, generator):
    rules.random_float_inplace("bernoulli_", (self, p, generator))
    _check_probabilities("bernoulli_", "p", np.asarray(p, np.float64))
    return _fill(self, rng(generator).random(self._impl.sizes) < p)


def bernoulli__tensor(self, p, generator):
    rules.bernoulli_tensor_inplace("bernoulli_", (self, p, generator))
    probs = np.broadcast_to(p._impl.array().astype(np.float64), self._impl.sizes)
    _check_probabilities("bernoulli_", "p", probs)
    return _fill(self, rng(generator).random(self._impl.sizes) < probs)


def multinomial(self, num_samples, replacement, generator):
    """Indices drawn from the categories 0..n-1 with weights self[..., j] (each row of a
    2-D input on its own).

    With replacement, inverse-CDF sampling:
        u ~ U[0, 1);  out = the first j with cdf[j] > u   (zero weights are never drawn)
    Without, an exponential race (equivalent to drawing one by one and renormalising):
        key[j] = Exp(1) / w[j];  out = the num_samples smallest keys
    so zero-weight categories come last, in index order, once the others are used up
    (PyTorch's behaviour too).
    """
    rules.multinomial("multinomial", (self, num_samples, replacement, generator))
    w = self._impl.array().astype(np.float64)
    rows = w.reshape(1, -1) if w.ndim == 1 else w
    if not np.all(np.isfinite(rows)) or np.any(rows < 0):
        raise ArgumentError("multinomial(): argument 'self' must hold finite, non-negative "
                            "weights", op="multinomial", arg="self")
    totals = rows.sum(axis=1, keepdims=True)
    if np.any(totals <= 0):
        raise ArgumentError("multinomial(): every row of argument 'self' needs a positive "
                            "weight sum", op="multinomial", arg="self")
    p = rows / totals
    g = rng(generator)
    if replacement:
        cdf = np.cumsum(p, axis=1)
        cdf[:, -1] = 1.0   # rounding must not leave a gap below 1
        u = g.random((rows.shape[0], num_samples))
        picks = np.stack([np.searchsorted(c, x, side="right") for c, x in zip(cdf, u)])
    else:
        with np.errstate(divide="ignore"):
            keys = g.exponential(size=rows.shape) / p
        picks = np.argsort(keys, axis=1, kind="stable")[:, :num_samples]
    return out(picks.reshape(w.shape[:-1] + (num_samples,)), dt.int64)
