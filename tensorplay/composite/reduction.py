"""Numeric helpers from NumPy's vocabulary, composed of existing ops: square, the
NaN-skipping reductions (nansum, nanmean), finite differences (diff), the trapezoidal
rule (trapezoid, cumulative_trapezoid), pointwise helpers (deg2rad, logaddexp, fmax,
sinc, float_power, heaviside, ...) and covariance (cov, corrcoef); aminmax, vdot, addbmm,
the older norms (frobenius_norm, nuclear_norm, norm_except_dim), renorm, and the
histograms (histogram, histogramdd: the counting kernels and the bin edges they used).

No derivatives.yaml entries but addbmm's: autograd records the ops they call (composite
implicit autograd), so every backend, the Meta one included, runs them unchanged.
addbmm has PyTorch's formula, so that its backward saves batch1 and batch2 themselves.
"""
from __future__ import annotations

import math

from tensorplay import _creation
from tensorplay._dtype import bool as bool_, complex128, float64
from tensorplay._generated import functional as F
from tensorplay.composite.pointwise import _as_floating
from tensorplay.composite.scan import _spacing_product, _trapezoid_args
from tensorplay._frontdoor import wrap_dim
from tensorplay.errors import ArgumentError, DTypeError, fmt_shape, ShapeError
from tensorplay.kernel_support.complex_refusals import reject_complex
from tensorplay.meta.reduction import check_bin_counts, check_bin_tensors, check_histogram_input


def _nan_to_zero(self):
    """self with its NaNs replaced by 0. NOTE: the gradient is PyTorch's nansum rule,
    grad * (self is not NaN), a product: an infinite incoming gradient (nanmean of a slice
    that is all NaN divides by a count of 0) gives NaN, not 0, at the NaN positions.
    nan_to_num's gradient is grad * isfinite(self), so the infinities are routed around it
    by `where`, whose gradient goes to them unchanged."""
    if not self.is_floating_point():
        return self
    return F.where(F.isinf(self), self, F.nan_to_num(self, 0.0))


def nansum(self, dim, keepdim, dtype):
    """sum with NaNs counted as zero (integers have none); not for complex numbers (as
    PyTorch's CPU kernel)."""
    reject_complex("nansum", self)
    return F.sum(_nan_to_zero(self), dim, keepdim, dtype=dtype)


def nanmean(self, dim, keepdim, dtype):
    """nansum / the number of non-NaN values (NaN where every value is NaN, as 0 / 0;
    there the gradient is NaN too, as in PyTorch)."""
    reject_complex("nanmean", self)
    if not self.is_floating_point():
        raise DTypeError(f"nanmean(): expected input to have floating point dtype but got "
                         f"{self.dtype.name} (argument 'self')", op="nanmean", arg="self")
    count = F.sum(F.logical_not(F.isnan(self)), dim, keepdim, dtype=dtype or self.dtype)
    return nansum(self, dim, keepdim, dtype) / count


def _trapezoid(y, x, dx, dim):
    """The integral of y along dim by the trapezoidal rule, samples at x (or dx apart)."""
    samples, d = _trapezoid_args("trapezoid", y, x, dim)
    if samples.shape[d] == 0:
        # no interval: new zeros of y's own dtype, outside the graph, as in PyTorch
        return F.sum(y, [d], dtype=y.dtype).detach()
    y = samples
    if x is None:
        # PyTorch's form for a constant spacing: (sum - (first + last) / 2) * dx, so an
        # infinite first or last sample gives inf - inf = NaN, as in PyTorch
        ends = (y.select(d, 0) + y.select(d, -1)) * 0.5
        return (F.sum(y, [d]) - ends) * dx
    return F.sum(_spacing_product(y, d, x, dx), [d])


def trapezoid_x(y, x, dim):
    return _trapezoid(y, x, None, dim)


def trapezoid_dx(y, dx, dim):
    return _trapezoid(y, None, dx, dim)


# ---- covariance --------------------------------------------------------------------------
def _check_weights(name, w, n, integral):
    op = "cov"
    if w.dim() > 1:
        raise ShapeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                         f"{name} with {w.dim()} dimensions (argument '{name}')", op=op, arg=name)
    if w.numel() != n:
        raise ShapeError(f"cov(): expected {name} to have the same numel as there are "
                         f"observations in the input but got {w.numel()} != {n} (argument "
                         f"'{name}')", op=op, arg=name)
    # (bool and complex weights are neither: PyTorch refuses both kinds for both weights)
    if integral and (w.is_floating_point() or w.is_complex() or w.dtype == bool_):
        raise DTypeError(f"cov(): expected {name} to have integral dtype but got "
                         f"{w.dtype.name} (argument '{name}')", op=op, arg=name)
    if not integral and not w.is_floating_point():
        raise DTypeError(f"cov(): expected {name} to have floating point dtype but got "
                         f"{w.dtype.name} (argument '{name}')", op=op, arg=name)
    # written as "not all >= 0" so that a NaN weight fails too, as in PyTorch
    if w.device.type != "meta" and not bool((w >= 0).all()):
        raise ArgumentError(f"cov(): {name} cannot be negative (argument '{name}')", op=op,
                            arg=name)


def cov(self, correction, fweights, aweights):
    """The covariance of the variables in self's rows over the observations in its
    columns, PyTorch's (and NumPy's) formula with frequency and observation weights:

        w = fweights * aweights;  avg = sum(x * w) / sum(w)
        cov = (x - avg) * w @ (x - avg)^H / (sum(w) - correction * sum(w * aweights) / sum(w))

    (^H: the conjugate transpose, for complex variables; ^T for real ones.)
    """
    if self.dim() > 2:
        raise ShapeError(f"cov(): expected input to have two or fewer dimensions but got an "
                         f"input with {self.dim()} dimensions (argument 'self')", op="cov",
                         arg="self")
    x = self.reshape([1, -1]) if self.dim() < 2 else self
    n = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights("fweights", fweights, n, integral=True)
        w = fweights
    if aweights is not None:
        _check_weights("aweights", aweights, n, integral=False)
        w = aweights if w is None else w * aweights
    if w is None or not (w.dtype.is_floating_point or w.dtype.is_complex):
        # an integer x becomes the default float type, as PyTorch's sum / count makes it;
        # a floating weight decides itself through x * w (int64 x, float16 aweights:
        # float16, as PyTorch's)
        x = _as_floating(x)
    if w is None:
        avg = x.mean([1])
        norm = max(n - correction, 0)
    else:
        # (no conversion of w, as in PyTorch: x * w promotes, and the weights themselves are
        # what that mul saves, so an in-place change of them makes backward raise)
        w_sum = w.sum()
        if w.device.type != "meta" and bool(w_sum == 0):
            raise ArgumentError("cov(): weights sum to zero, can't be normalized (arguments "
                                "'fweights' and 'aweights')", op="cov",
                                arg="aweights" if aweights is not None else "fweights")
        avg = (x * w).sum([1]) / w_sum
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = w_sum - correction
        else:
            norm = w_sum - correction * (w * aweights).sum() / w_sum
        norm = F.clamp_min(norm, 0)
    centered = x - avg.unsqueeze(1)
    weighted = centered if w is None else centered * w
    return (F.mm(weighted, centered.t().conj()) / norm).squeeze()


def corrcoef(self):
    """Pearson correlation coefficients: cov / (std_i std_j), clamped to [-1, 1] (for
    complex variables, each part clamped, as PyTorch does: complex numbers have no order)."""
    c = cov(self, 1, None, None)
    if c.dim() == 0:
        return c / c
    std = F.sqrt(F.diagonal(c, 0, 0, 1))
    c = c / std.unsqueeze(1) / std.unsqueeze(0)
    if c.dtype.is_complex:
        return F.complex(F.clamp(F.real(c), -1, 1), F.clamp(F.imag(c), -1, 1))
    return F.clamp(c, -1, 1)


def var_unbiased(self, dim, unbiased, keepdim):
    return F.var(self, dim, correction=1 if unbiased else 0, keepdim=keepdim)


def std_unbiased(self, dim, unbiased, keepdim):
    return F.std(self, dim, correction=1 if unbiased else 0, keepdim=keepdim)


def var_mean(self, dim, correction, keepdim):
    return _welford_moments(F.var, self, dim, correction, keepdim)


def std_mean(self, dim, correction, keepdim):
    return _welford_moments(F.std, self, dim, correction, keepdim)


def _welford_moments(reduce, self, dim, correction, keepdim):
    """(var or std, mean) as PyTorch's one-pass var_mean / std_mean leave them: Welford's
    algorithm in float64, over everything as along dims (so for float32 [3e38, 3e38] the
    mean is 3e38 and the variance 0, though mean() alone overflows to inf).

    Its running mean of identical values is exactly their value, and their variance
    exactly 0 (std's derivative is masked to 0 there), where var() over everything takes
    two plain passes and leaves a rounding residue: so the mean here is the plain one
    refined once by the mean of the deviations from it (as the var kernel's _deviations
    refines its own), and over everything the variance is that of the deviations from
    it (along dims var refines its mean itself: its variance of x is that already)."""
    dtype = self.dtype
    if not dtype.is_floating_point and not dtype.is_complex:   # (refused as var refuses)
        return reduce(self, dim, correction=correction, keepdim=keepdim), \
            _welford_mean(self, dim, keepdim, F.mean(self, dim, keepdim))
    wide = complex128 if dtype.is_complex else float64
    x = self if dtype == wide else self.to(wide)
    # (an overflowing sum or an infinity gives no finite mean or shift: then the plain
    # mean stays, and the spread is var's own of x)
    mean = F.mean(x, dim, keepdim=True)
    shift = F.mean(x - mean, dim, keepdim=True)
    mean = mean + F.where(F.isfinite(shift), shift, 0.0)
    if x.numel() == _reduced_count(x, dim):     # the kernel's two plain passes
        x = x - F.where(F.isfinite(mean), mean, 0.0)
    spread = reduce(x, dim, correction=correction, keepdim=keepdim)
    # (a mean of its own, not a reshaped view of the keepdim one: the op's outputs are no
    # views, and an in-place write into one must not reach a temporary's base)
    mean = F.clone(mean.reshape(spread.shape).to(dtype)) if mean.dim() != spread.dim() \
        else mean.to(dtype)
    return spread.to(dtype.to_real() if dtype.is_complex else dtype), \
        _welford_mean(self, dim, keepdim, mean)


def _welford_mean(self, dim, keepdim, mean):
    """`mean` as PyTorch's one-pass (Welford) var_mean leaves it.

    NOTE: Welford's update subtracts the running mean from each next value, so once an
    infinity is in, the next value makes it inf - inf: the mean is NaN whenever an
    infinity comes before the last value (in row-major order over the reduced dims),
    where mean() alone would give the infinity."""
    if not self.dtype.is_floating_point or self.dtype.is_complex or self.dim() == 0:
        return mean
    n = self.dim()
    dims = list(range(n)) if not dim else sorted(d % n for d in dim)
    kept = [d for d in range(n) if d not in dims]
    reduced = _reduced_count(self, dim)
    # (the reduced count spelled out: -1 cannot be inferred when a kept dim is empty)
    flat = self.permute(kept + dims).reshape([self.shape[d] for d in kept] + [reduced])
    if flat.shape[-1] <= 1:
        return mean
    early_inf = F.any(F.isinf(flat.narrow(-1, 0, flat.shape[-1] - 1)), -1)
    # Added, not selected by where: the mean's gradient still flows through every
    # element (PyTorch's var_mean backward is mean_backward whatever the value)
    nan = _creation.zeros_like(mean.detach()).masked_fill(early_inf.reshape(mean.shape),
                                                           float("nan"))
    return mean + nan


def _reduced_count(self, dim):
    """How many elements a reduction over `dim` (None or []: all) takes into one value."""
    n = self.dim()
    count = 1
    for d in (range(n) if not dim else {d % n for d in dim}) if n else ():
        count *= self.shape[d]
    return count


def norm_str(self, p, dim, keepdim, dtype):
    """p="fro": the Frobenius norm, i.e. the 2-norm of the elements (over `dim`);
    p="nuc": the nuclear norm, linalg_matrix_norm's over `dim` (all dims when None: a
    matrix), as PyTorch's torch.norm calls it."""
    if p == "nuc":
        dims = list(dim) if dim is not None and len(dim) else list(range(self.dim()))
        return F.linalg_matrix_norm(self, "nuc", dims, keepdim, dtype=dtype)
    if p != "fro":
        raise ArgumentError(f"norm(): argument 'p' must be a number, 'fro' or 'nuc', but got "
                            f"{p!r}", op="norm", arg="p")
    return F.norm(self, 2, dim, keepdim, dtype=dtype)


def sum_to_size(self, size):
    """Sum self down to `size` (which self must be expandable from): the reverse of
    expand, as the gradient of a broadcast is."""
    size = tuple(size)
    sizes = tuple(self.shape)
    lead = len(sizes) - len(size)
    ok = lead >= 0 and all(s == 1 or s == t for s, t in zip(size, sizes[lead:]))
    if not ok:
        raise ShapeError(f"sum_to_size(): size {fmt_shape(size)} is not expandable to size "
                         f"{fmt_shape(sizes)} (argument 'size')", op="sum_to_size",
                         arg="size")
    out = self
    if lead:
        out = out.sum(list(range(lead)))
    dims = [i for i, s in enumerate(size) if s == 1 and sizes[lead + i] != 1]
    if dims:
        out = out.sum(dims, True)
    return out if out is not self else self.view(sizes)


# ---- aminmax, vdot, addbmm, the older norms, renorm ---------------------------------------
def aminmax(self, dim, keepdim):
    """(amin, amax) over everything (dim None) or along one dim. Their gradients are
    amin's and amax's (shared by ties), which is PyTorch's aminmax_backward."""
    op = "aminmax"
    reject_complex(op, self)
    dims = [] if dim is None else [wrap_dim(op, "dim", dim, self.dim())]
    if self.numel() == 0 and (dim is None or self.dim() == 0 or self.shape[dims[0]] == 0):
        raise ShapeError(f"{op}(): cannot compute aminmax over an empty dimension as the "
                         f"operation has no identity (argument 'self' has shape "
                         f"{fmt_shape(self.shape)})", op=op, arg="self")
    return F.amin(self, dims, keepdim), F.amax(self, dims, keepdim)


def vdot(self, other):
    """sum(conj(self) * other) of two 1-D tensors; for real numbers, dot."""
    op = "vdot"
    if self.dim() != 1 or other.dim() != 1:
        raise ShapeError(f"{op}(): 1D tensors expected, but got {self.dim()}D and "
                         f"{other.dim()}D tensors (arguments 'self' and 'other')", op=op,
                         arg="self" if self.dim() != 1 else "other")
    if self.shape[0] != other.shape[0]:
        raise ShapeError(f"{op}(): inconsistent tensor size, expected tensor [{self.shape[0]}] "
                         f"and src [{other.shape[0]}] to have the same number of elements, "
                         f"but got {self.shape[0]} and {other.shape[0]} elements respectively "
                         f"(argument 'other')", op=op, arg="other")
    if self.dtype is not other.dtype:
        raise DTypeError(f"{op}(): expected both vectors to have same dtype, but found "
                         f"{self.dtype.name} and {other.dtype.name} (argument 'other')", op=op,
                         arg="other")
    # conj is the tensor itself for a real one; for a complex one, a copy autograd records
    return F.dot(self.conj(), other)


def _addbmm_operands(op, self, batch1, batch2):
    """batch1 [b, n, m] and batch2 [b, m, p] as the matrices [n, b*m] and [b*m, p]: the sum
    of the b products batch1[i] @ batch2[i] is the one product of these two."""
    for name, t in (("batch1", batch1), ("batch2", batch2)):
        if t.dim() != 3:
            raise ShapeError(f"{op}(): {name} must be a 3D tensor (argument '{name}' has "
                             f"shape {fmt_shape(t.shape)})", op=op, arg=name)
    b, n, m = batch1.shape
    if batch2.shape[0] != b or batch2.shape[1] != m:
        raise ShapeError(f"{op}(): Incompatible matrix sizes for bmm ({n}x{m} and "
                         f"{batch2.shape[1]}x{batch2.shape[2]}); batch1 is "
                         f"{fmt_shape(batch1.shape)}, batch2 {fmt_shape(batch2.shape)} "
                         f"(argument 'batch2')", op=op, arg="batch2")
    left = batch1.permute(1, 0, 2).reshape([n, b * m])
    right = batch2.reshape([b * m, batch2.shape[2]])
    if b == 0:
        # no batches: PyTorch returns beta * self before its dtype checks, so empty
        # batches of another dtype are taken (cast to self's dtype: they hold nothing)
        left, right = left.to(self.dtype), right.to(self.dtype)
    return left, right


def addbmm(self, batch1, batch2, beta, alpha):
    left, right = _addbmm_operands("addbmm", self, batch1, batch2)
    return F.addmm(self, left, right, beta=beta, alpha=alpha)


def addbmm_(self, batch1, batch2, beta, alpha):
    left, right = _addbmm_operands("addbmm_", self, batch1, batch2)
    return self.addmm_(left, right, beta=beta, alpha=alpha)


def frobenius_norm(self, dim, keepdim):
    """linalg.vector_norm(self, 2, dim, keepdim), over at most two dims."""
    op = "frobenius_norm"
    if len(dim) > 2:
        raise ArgumentError(f"{op}(): Expected at most 2 dimensions, but got {len(dim)} "
                            f"dimensions instead (argument 'dim').", op=op, arg="dim")
    _as_float_norm_input(op, self)
    return F.linalg_vector_norm(self, 2, dim, keepdim)


def _as_float_norm_input(op, self):
    if not self.dtype.is_differentiable:
        raise DTypeError(f"{op}(): input dtype should be either floating point or complex. "
                         f"Got {self.dtype.name} instead (argument 'self').", op=op, arg="self")


def nuclear_norm(self, keepdim):
    return nuclear_norm_dim(self, [-2, -1], keepdim)


def nuclear_norm_dim(self, dim, keepdim):
    """The sum of the singular values of the matrices over the two dims in `dim`."""
    op = "nuclear_norm"
    _as_float_norm_input(op, self)
    if self.dim() >= 2 and len(dim) == 2:
        d0, d1 = (wrap_dim(op, "dim", d, self.dim()) for d in dim)
        if d0 == d1:
            raise ArgumentError(f"{op}(): dims must be different. Got ({dim[0]}, {dim[1]}) "
                                f"(argument 'dim')", op=op, arg="dim")
    try:
        return F.linalg_matrix_norm(self, "nuc", dim, keepdim)
    except (ArgumentError, ShapeError) as e:
        raise type(e)(str(e).replace("linalg_matrix_norm(", "nuclear_norm(", 1),
                      op="nuclear_norm", arg=e.arg) from None


def norm_except_dim(v, pow, dim):  # noqa: A002 - PyTorch's argument name
    """The pow-norm of each slice v[..., i, ...] along `dim`, shaped [1, .., n, .., 1]
    (dim == -1: the norm of all of v). As PyTorch writes it: the slices as the rows (dim 0)
    or columns (the last dim) of a contiguous matrix, another dim moved to the front."""
    if dim == -1:
        return F.norm(v, pow)
    d = wrap_dim("norm_except_dim", "dim", dim, v.dim())
    ones = [1] * (v.dim() - 1)
    if d == 0:
        return F.norm(v.contiguous().view([v.shape[0], -1]), pow, [1]).view([v.shape[0]] + ones)
    if d == v.dim() - 1:
        return F.norm(v.contiguous().view([-1, v.shape[-1]]), pow, [0]).view(ones + [v.shape[-1]])
    return norm_except_dim(v.transpose(0, d), pow, 0).transpose(0, d)


def _check_renorm(op, self, p, dim, maxnorm):
    if self.dim() < 2:
        raise ShapeError(f"{op}(): input needs at least 2 dimensions, got {self.dim()} "
                         f"dimensions (argument 'self')", op=op, arg="self")
    if not self.dtype.is_differentiable:     # complex too: its slices' norms are real
        raise DTypeError(f"{op}(): expected a floating point or complex input, got "
                         f"{self.dtype.name} (argument 'self')", op=op, arg="self")
    if not p > 0:
        raise ArgumentError(f"{op}(): non-positive-norm not supported: argument 'p' must be "
                            f"> 0, got {p}", op=op, arg="p")
    if maxnorm < 0:
        raise ArgumentError(f"{op}(): expected maxnorm to be >= 0 but got {maxnorm} (argument "
                            f"'maxnorm')", op=op, arg="maxnorm")
    return wrap_dim(op, "dim", dim, self.dim())


def renorm(self, p, dim, maxnorm):
    """Each slice along `dim` whose p-norm is above maxnorm scaled by maxnorm / norm
    (PyTorch adds 1e-7 to the norm, so the new norm is just under maxnorm). Its backward
    is derivatives.yaml's (PyTorch's renorm_backward), not this composite's."""
    d = _check_renorm("renorm", self, p, dim, maxnorm)
    norms = F.norm(self, p, [i for i in range(self.dim()) if i != d], True)
    # (row-major whatever self's layout: PyTorch's renorm allocates its result so)
    return self.contiguous() * F.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)


def renorm_(self, p, dim, maxnorm):
    # renorm of a clone: its backward reads the values self had, which the copy_ below
    # overwrites (a saved tensor changed in place makes backward raise).
    _check_renorm("renorm_", self, p, dim, maxnorm)
    return self.copy_(F.renorm(self.clone(), p, dim, maxnorm))


# ---- histograms: the counting kernels, and the bin edges they used ---------------------------
def _outer_edges(op, x, range_, d):
    """Along dim d of the points x [N, D]: range's pair, else the data's min and max (an
    empty range widened by 0.5 each way); what the kernel computes too, checked here so
    that the error names the op called."""
    if range_ is not None:
        lo, hi = range_[2 * d], range_[2 * d + 1]
    elif x.shape[0]:
        lo, hi = (float(v) for v in F.aminmax(x.select(1, d)))
    else:
        lo, hi = 0.0, 1.0   # no points: PyTorch's default range
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ArgumentError(f"{op}(): dimension {d}'s range [{lo}, {hi}] is not finite "
                            f"(argument 'self')", op=op, arg="self")
    if lo > hi:
        raise ArgumentError(f"{op}(): min should not exceed max, but got min {lo} max {hi} "
                            f"for dimension {d} (argument 'range')", op=op, arg="range")
    return (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)


def _edges_from_counts(op, x, bins, range_):
    """torch._histogramdd_bin_edges: bins[d] + 1 evenly spaced edges per dim."""
    return tuple(_creation.linspace(*_outer_edges(op, x, range_, d), n + 1, dtype=x.dtype,
                                    device=x.device) for d, n in enumerate(bins))


def _dd_from_counts(op, self, bins, range_, weight, density, points):
    check_histogram_input(op, self, weight, 2 if op == "histogramdd" else 0)
    check_bin_counts(op, bins, points.shape[-1], range_)
    edges = _edges_from_counts(op, points, bins, range_)
    w = None if weight is None else weight.reshape([-1])
    hist = F._histogramdd_from_bin_cts(points, bins, range=range_, weight=w, density=density)
    return hist, edges


def _dd_from_tensors(op, self, bins, weight, density, points):
    check_histogram_input(op, self, weight, 2 if op == "histogramdd" else 0)
    check_bin_tensors(op, self, bins, points.shape[-1])
    w = None if weight is None else weight.reshape([-1])
    hist = F._histogramdd_from_bin_tensors(points, list(bins), weight=w, density=density)
    return hist, tuple(b.clone() for b in bins)


def histogram_bin_ct(self, bins, range, weight, density):  # noqa: A002 - schema's name
    """`bins` equal bins over range (the data's min and max by default): a 1-d histogramdd
    of the flattened input."""
    hist, edges = _dd_from_counts("histogram", self, [bins], range, weight, density,
                                  self.reshape([-1, 1]))
    return hist, edges[0]


def histogram_bins_tensor(self, bins, weight, density):
    hist, edges = _dd_from_tensors("histogram", self, [bins], weight, density,
                                   self.reshape([-1, 1]))
    return hist, edges[0]


def _points(self):
    check_histogram_input("histogramdd", self, None, 2)
    return self if self.dim() == 2 else self.reshape([-1, self.shape[-1]])


def histogramdd(self, bins, range, weight, density):  # noqa: A002
    """The D-dimensional histogram of the points self[..., :] (the last dim holds the D
    coordinates of each point), and the bin edges of each dim."""
    return _dd_from_counts("histogramdd", self, list(bins), range, weight, density,
                           _points(self))


def histogramdd_int_bins(self, bins, range, weight, density):  # noqa: A002
    points = _points(self)
    return _dd_from_counts("histogramdd", self, [bins] * points.shape[-1], range, weight,
                           density, points)


def histogramdd_tensor_bins(self, bins, range, weight, density):  # noqa: A002
    return _dd_from_tensors("histogramdd", self, bins, weight, density, _points(self))
