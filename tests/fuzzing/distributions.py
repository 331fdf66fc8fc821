"""tp.distributions against torch.distributions, on random parameters.

A share of the programs (DISTRIBUTION_SHARE) ends with one distribution drawn from
FAMILIES: random parameters of a random batch shape and dtype (float32 or float64),
requiring grad, the same numbers in both libraries, built with validate_args=True. Then

    log_prob   of a random value in the support (with a sample shape in front): values,
               dtype, shape, and the gradients of a weighted sum wrt the parameters
    entropy    where PyTorch has one: values and gradients alike
    sample     the shape and dtype of sample((2,)), and of rsample where it exists
    errors     a parameter outside its constraint (now and then) and a value outside
               the support: a ValueError in both libraries, or in neither

A float32 result past the tolerance goes to the float64 oracle (programs.Program._compare):
PyTorch's distribution of the same numbers in float64 (ContinuousBernoulli near probs 0.5
cancels in float32 in both libraries, either may be the nearer). Silent differences are
of kind "distribution"; error-path ones are missing or spurious
errors at step "dist:<family>". tests/test_distributions.py checks each family on fixed
parameters; here they are random, broadcast and batched.
"""
from __future__ import annotations

import numpy as np
import torch

import tensorplay as tp
from opinfo.core import to_torch

DISTRIBUTION_SHARE = 0.1


def _real(rng, shape):
    return rng.uniform(-2, 2, shape)


def _positive(rng, shape):
    return rng.uniform(0.3, 3, shape)


def _unit(rng, shape):
    return rng.uniform(0.05, 0.95, shape)


def _simplex(rng, shape):
    p = rng.uniform(0.1, 1, shape)
    return p / p.sum(-1, keepdims=True)


def _tril(rng, shape):
    m = np.tril(rng.uniform(-1, 1, shape), -1)
    return m + np.eye(shape[-1]) * rng.uniform(0.5, 2, shape[:-1])[..., None]


K = 3       # the event size of the families with one (Categorical, Dirichlet, MVN...)

# name: (build(M, **params), {param: (maker, event shape)}, value kind). Value kinds are
# in _value and _outside; a parameter named like a constraint's (scale, rate) is
# checked by the distribution with validate_args.
FAMILIES = {
    "Normal": (lambda M, loc, scale: M.Normal(loc, scale),
               {"loc": (_real, ()), "scale": (_positive, ())}, "real"),
    "Laplace": (lambda M, loc, scale: M.Laplace(loc, scale),
                {"loc": (_real, ()), "scale": (_positive, ())}, "real"),
    "Cauchy": (lambda M, loc, scale: M.Cauchy(loc, scale),
               {"loc": (_real, ()), "scale": (_positive, ())}, "real"),
    "Gumbel": (lambda M, loc, scale: M.Gumbel(loc, scale),
               {"loc": (_real, ()), "scale": (_positive, ())}, "real"),
    "StudentT": (lambda M, df, loc, scale: M.StudentT(df, loc, scale),
                 {"df": (_positive, ()), "loc": (_real, ()), "scale": (_positive, ())}, "real"),
    "LogNormal": (lambda M, loc, scale: M.LogNormal(loc, scale),
                  {"loc": (_real, ()), "scale": (_positive, ())}, "positive"),
    "HalfNormal": (lambda M, scale: M.HalfNormal(scale), {"scale": (_positive, ())},
                   "positive"),
    "HalfCauchy": (lambda M, scale: M.HalfCauchy(scale), {"scale": (_positive, ())},
                   "positive"),
    "Exponential": (lambda M, rate: M.Exponential(rate), {"rate": (_positive, ())},
                    "positive"),
    "Gamma": (lambda M, concentration, rate: M.Gamma(concentration, rate),
              {"concentration": (_positive, ()), "rate": (_positive, ())}, "positive"),
    "InverseGamma": (lambda M, concentration, rate: M.InverseGamma(concentration, rate),
                     {"concentration": (_positive, ()), "rate": (_positive, ())}, "positive"),
    "Chi2": (lambda M, df: M.Chi2(df), {"df": (_positive, ())}, "positive"),
    "Weibull": (lambda M, scale, concentration: M.Weibull(scale, concentration),
                {"scale": (_positive, ()), "concentration": (_positive, ())}, "positive"),
    "Beta": (lambda M, concentration1, concentration0: M.Beta(concentration1, concentration0),
             {"concentration1": (_positive, ()), "concentration0": (_positive, ())}, "unit"),
    "Kumaraswamy": (lambda M, concentration1, concentration0: M.Kumaraswamy(
        concentration1, concentration0),
        {"concentration1": (_positive, ()), "concentration0": (_positive, ())}, "unit"),
    "ContinuousBernoulli": (lambda M, probs: M.ContinuousBernoulli(probs),
                            {"probs": (_unit, ())}, "unit"),
    "VonMises": (lambda M, loc, concentration: M.VonMises(loc, concentration),
                 {"loc": (_real, ()), "concentration": (_positive, ())}, "real"),
    "Uniform": (lambda M, low, scale: M.Uniform(low, low + scale),
                {"low": (_real, ()), "scale": (_positive, ())}, "uniform"),
    "Pareto": (lambda M, scale, alpha: M.Pareto(scale, alpha),
               {"scale": (_positive, ()), "alpha": (_positive, ())}, "pareto"),
    "Bernoulli": (lambda M, probs: M.Bernoulli(probs), {"probs": (_unit, ())}, "binary"),
    "BernoulliLogits": (lambda M, logits: M.Bernoulli(logits=logits),
                        {"logits": (_real, ())}, "binary"),
    "Geometric": (lambda M, probs: M.Geometric(probs), {"probs": (_unit, ())}, "count"),
    "Poisson": (lambda M, rate: M.Poisson(rate), {"rate": (_positive, ())}, "count"),
    "Binomial": (lambda M, probs: M.Binomial(5, probs), {"probs": (_unit, ())}, "count5"),
    "NegativeBinomial": (lambda M, total_count, probs: M.NegativeBinomial(total_count, probs),
                         {"total_count": (_positive, ()), "probs": (_unit, ())}, "count"),
    "Categorical": (lambda M, probs: M.Categorical(probs), {"probs": (_simplex, (K,))},
                    "category"),
    "CategoricalLogits": (lambda M, logits: M.Categorical(logits=logits),
                          {"logits": (_real, (K,))}, "category"),
    "OneHotCategorical": (lambda M, probs: M.OneHotCategorical(probs),
                          {"probs": (_simplex, (K,))}, "onehot"),
    "Multinomial": (lambda M, probs: M.Multinomial(4, probs), {"probs": (_simplex, (K,))},
                    "multinomial4"),
    "Dirichlet": (lambda M, concentration: M.Dirichlet(concentration),
                  {"concentration": (_positive, (K,))}, "simplex"),
    "MultivariateNormal": (lambda M, loc, scale_tril: M.MultivariateNormal(
        loc, scale_tril=scale_tril), {"loc": (_real, (K,)), "scale_tril": (_tril, (K, K))},
        "vector"),
    "LowRankMultivariateNormal": (lambda M, loc, cov_factor, cov_diag:
                                  M.LowRankMultivariateNormal(loc, cov_factor, cov_diag),
                                  {"loc": (_real, (K,)), "cov_factor": (_real, (K, 2)),
                                   "cov_diag": (_positive, (K,))}, "vector"),
    "Independent": (lambda M, loc, scale: M.Independent(M.Normal(loc, scale), 1),
                    {"loc": (_real, (K,)), "scale": (_positive, (K,))}, "vector"),
}
_BATCH_SHAPES = [(), (3,), (2, 3), (1, 2)]
_SAMPLE_SHAPES = [(), (2,), (2, 1)]


def _value(kind, rng, shape, params):
    """A value in the support of shape sample + batch + event, as a NumPy array."""
    if kind in ("real", "vector"):
        return rng.uniform(-3, 3, shape)
    if kind == "positive":
        return rng.uniform(0.1, 4, shape)
    if kind == "unit":
        return rng.uniform(0.05, 0.95, shape)
    if kind == "binary":
        return (rng.random(shape) < 0.5).astype(np.float64)
    if kind == "count":
        return rng.integers(0, 7, shape).astype(np.float64)
    if kind == "count5":
        return rng.integers(0, 6, shape).astype(np.float64)
    if kind == "category":
        return rng.integers(0, K, shape)
    if kind == "onehot":
        return np.eye(K)[rng.integers(0, K, shape[:-1])]
    if kind == "multinomial4":
        return rng.multinomial(4, [1 / K] * K, shape[:-1]).astype(np.float64)
    if kind == "simplex":
        return _simplex(rng, shape)
    if kind == "uniform":
        return params["low"] + rng.uniform(0.05, 0.95, shape) * params["scale"]
    if kind == "pareto":
        return params["scale"] * rng.uniform(1.05, 4, shape)
    raise ValueError(kind)


def _outside(kind, value, params):
    """The value with one element moved outside the support, or None (the reals)."""
    out = np.array(value, dtype=np.float64, copy=True)
    flat = out.reshape(-1)
    if kind in ("real", "vector") or flat.size == 0:
        return None
    if kind in ("positive", "count", "count5"):
        flat[0] = -1.0
    elif kind in ("unit", "binary"):
        flat[0] = 1.5
    elif kind == "category":
        return np.full(out.shape, K, dtype=np.int64)
    elif kind in ("onehot", "simplex", "multinomial4"):
        flat[0] += 0.5
    elif kind == "uniform":
        return np.broadcast_to(params["low"] + params["scale"] + 1.0, out.shape).copy()
    elif kind == "pareto":
        return np.broadcast_to(params["scale"] * 0.5, out.shape).copy()
    return out


def _pair(array, dtype, requires_grad=False):
    """The same numbers as a TensorPlay tensor and its PyTorch twin."""
    dtype = tp.int64 if np.asarray(array).dtype.kind in "iu" else dtype
    t = tp.tensor(np.asarray(array), dtype=dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t, to_torch(t)


def check_distribution(program):
    """One random distribution compared with PyTorch's (the module's docstring says
    what); raises the program's _Found on a difference."""
    from fuzzing.programs import _Found, _attempt
    rng = program.check_rng
    name = list(FAMILIES)[int(rng.integers(len(FAMILIES)))]
    build, specs, kind = FAMILIES[name]
    dtype = (tp.float32, tp.float64)[int(rng.integers(2))]
    batch = _BATCH_SHAPES[int(rng.integers(len(_BATCH_SHAPES)))]
    sample_shape = _SAMPLE_SHAPES[int(rng.integers(len(_SAMPLE_SHAPES)))]
    arrays = {p: make(rng, batch + event) for p, (make, event) in specs.items()}
    bad = None
    if rng.random() < 0.15:         # a parameter outside its constraint
        bad = [p for p, (make, _) in specs.items() if make in (_positive, _unit)]
        bad = bad[int(rng.integers(len(bad)))] if bad else None
        if bad is not None:
            arrays[bad] = np.array(arrays[bad], copy=True)
            arrays[bad].reshape(-1)[0] = -0.5
    pairs = {p: _pair(a, dtype, requires_grad=True) for p, a in arrays.items()}
    program.step = f"dist:{name}"
    program.counts["distribution"] += 1
    construct = f"d = {name}(" + ", ".join(
        f"{p}={dtype.name}{list(a.shape)}" + (" with -0.5 at [0]" if p == bad else "")
        for p, a in arrays.items()) + ", validate_args=True)"

    def both(text, tp_fn, th_fn):
        th_out, th_err = _attempt(th_fn)
        tp_out, tp_err = _attempt(tp_fn)
        program.lines.append(text + ("   # raises in both" if th_err and tp_err else ""))
        if th_err is not None and tp_err is None:
            raise _Found("missing error", f"{text}: PyTorch raises {type(th_err).__name__}: "
                         f"{th_err}; TensorPlay does not")
        if tp_err is not None and th_err is None:
            raise _Found("spurious error", f"{text}: TensorPlay raises "
                         f"{type(tp_err).__name__}: {tp_err}; PyTorch does not")
        if tp_err is not None and type(tp_err) is not type(th_err) and not isinstance(
                tp_err, tp.errors.TensorPlayError):
            raise _Found("untyped error", f"{text}: TensorPlay raised {type(tp_err).__name__}"
                         f": {tp_err} (PyTorch: {type(th_err).__name__}: {th_err})")
        return None if tp_err is not None else (tp_out, th_out)

    def compare(a, b, where, wide=None):
        program._compare(a, b, where, "distribution", depth=3, strides=False, precision=dtype,
                         wide=wide)

    def in_float64(what, weights=None):
        """The float64 oracle (programs.Program._compare): PyTorch's `what` ("log_prob",
        "entropy") of the same numbers in float64, or with `weights` the gradients of its
        weighted sum, by parameter; None where PyTorch cannot."""
        def run():
            params = {p: b.detach().double().requires_grad_() for p, (_, b) in pairs.items()}
            d64 = build(torch.distributions, **params)
            out = d64.log_prob(tx.double()) if what == "log_prob" else d64.entropy()
            if weights is None:
                return out
            (out * weights.double()).sum().backward()
            return {p: t.grad for p, t in params.items()}
        return _attempt(run)[0]

    def grads(out, what):
        """Gradients of a weighted sum of `out` wrt the parameters, in both."""
        weights = rng.uniform(-1, 1, tuple(out[1].shape))
        w, tw = _pair(weights, dtype)
        wide = {}

        def wide_grad(p):
            if not wide:
                wide.update(in_float64(what, tw) or {"": None})
            return wide.get(p)
        ran = both(f"({what} * w).sum().backward()",
                   lambda: (out[0] * w).sum().backward(),
                   lambda: (out[1] * tw).sum().backward())
        if ran is None:
            return
        for p, (a, b) in pairs.items():
            if b.grad is None:
                continue
            if a.grad is None:
                raise _Found("distribution", f"{p}.grad of {what} is None, PyTorch's is "
                             f"{b.grad.flatten()[:6].tolist()}")
            compare(a.grad, b.grad, f"{p}.grad of {what}", wide=lambda p=p: wide_grad(p))
            a.grad, b.grad = None, None

    made = both(construct,
                lambda: build(tp.distributions, **{p: a for p, (a, _) in pairs.items()}),
                lambda: build(torch.distributions, **{p: b for p, (_, b) in pairs.items()}))
    if made is None:
        return
    d, td = made
    if bad is not None:
        return                          # (validation is off for it: nothing more to compare)
    event = tuple(td.event_shape)
    value = _value(kind, rng, sample_shape + tuple(td.batch_shape) + event, arrays)
    x, tx = _pair(value, dtype)
    out = both(f"d.log_prob({x.dtype.name}{list(x.shape)})",
               lambda: d.log_prob(x), lambda: td.log_prob(tx))
    if out is not None:
        compare(out[0], out[1], "log_prob", wide=lambda: in_float64("log_prob"))
        grads(out, "log_prob")
    if isinstance(_attempt(lambda: td.entropy())[1], NotImplementedError):
        pass        # PyTorch has no entropy for it (TensorPlay may)
    else:
        out = both("d.entropy()", d.entropy, td.entropy)
        if out is not None:
            compare(out[0], out[1], "entropy", wide=lambda: in_float64("entropy"))
            grads(out, "entropy")
    if d.has_rsample != td.has_rsample:
        raise _Found("distribution", f"has_rsample is {d.has_rsample}, PyTorch's is "
                     f"{td.has_rsample}")
    draws = [("sample", d.sample, td.sample)]
    if td.has_rsample:
        draws.append(("rsample", d.rsample, td.rsample))
    for what, fn, tfn in draws:
        out = both(f"d.{what}((2,))", lambda: fn((2,)), lambda: tfn((2,)))
        if out is not None and (tuple(out[0].shape) != tuple(out[1].shape)
                                or out[0].dtype.name != str(out[1].dtype).split(".")[-1]):
            raise _Found("distribution", f"{what}((2,)): {out[0].dtype.name}"
                         f"{list(out[0].shape)}, PyTorch {out[1].dtype}{list(out[1].shape)}")
    outside = _outside(kind, value, arrays)
    if outside is not None:
        y, ty = _pair(outside, dtype)
        both("d.log_prob(a value outside the support)", lambda: d.log_prob(y),
             lambda: td.log_prob(ty))
