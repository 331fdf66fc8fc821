"""Random programs of 1-8 steps, run side by side in TensorPlay and PyTorch.

A program keeps a pool of live values, each held twice: the TensorPlay tensor and the
PyTorch tensor made by the same steps. A step is one of

    op       an op of the operator database (tests/opinfo) on one of its samples, its
             input often replaced by a live value (so ops chain), sometimes in place;
             new inputs are sometimes poisoned with NaN or inf (half the time on the
             border, next to where zero padding goes); one op step in four turns its
             sample into an edge case (_EDGE_CASES: empty, integer, mixed, huge), and a
             complex dtype is drawn more often than its share
    view     a view of a live value (transpose, slicing, expand, diagonal, view(-1)...)
    inplace  an in-place write into a live value (often a view, so its base changes too)
    index    indexing a live value with ints, slices, lists, index tensors or masks

After every step *every* live value is compared (shape, dtype, values, requires_grad,
and strides where PyTorch documents them: views and clone), so a wrong alias or a lost
in-place write shows up at the step that caused it (an op's new result, or the target of
an in-place write, that differs is first compared with PyTorch's op re-run on TensorPlay's
own inputs: Program._resync). A float32, float16 or bfloat16 result (a value after that
re-run, or a gradient) still apart from PyTorch's is judged against float64: "the float64
oracle" says how. Where the math leaves a result undefined (the gradient of
a nuclear norm of a rank-deficient matrix, ...) only its defined parts are compared:
"results that are not unique" lists those rules with their reasons.
A step must run in both libraries or raise in both; TensorPlay's errors must be its
typed errors. At the end a backward through everything that requires grad compares the
leaves' gradients.

Three checks ride along (each its own module, drawing from `check_rng` so that the
programs stay as they were): tangents.py compares a share of the op steps' forward-mode
tangents with PyTorch's, compiled.py replays a share of the programs through tp.compile
against eager TensorPlay, distributions.py ends a share of them with a tp.distributions
family against torch.distributions.

Every program is a pure function of its seed: `Program(seed).run()` replays it, and a
mismatch carries the listing of the steps that led to it. KNOWN lists the error-path
mismatches left as they are, each with its reason.
"""
from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch

import tensorplay as tp
from opinfo import op_db
from opinfo.core import (DEFAULT_TOLERANCES, TORCH_DTYPE, describe, make_tensor, to_torch,
                         tp_to_numpy, torch_to_numpy, yaml_ops)
from fuzzing.compiled import COMPILE_SHARE, Tape, check_compiled
from fuzzing.distributions import DISTRIBUTION_SHARE, check_distribution
from fuzzing.tangents import (TANGENT_SHARE, check_tangents, duals_of,
                              pytorch_tangent_is_wrong)

# ---- which ops a program may call -------------------------------------------------------
# Random ops draw from generators the two libraries seed differently inside a program;
# they have their own determinism tests. The fused optimizer steps write several lists
# of tensors at once and have their own parity tests in test_optim.py.
_RANDOM = {name.split(".")[0] for name, entry in yaml_ops().items() if "random" in entry.tags}
_SKIPPED = _RANDOM | {"dropout", "native_dropout", "_fused_adam_", "_fused_sgd_"}
# `_unsafe_view` and `_linear_backward` are aten-internal (PyTorch has no public function
# for them: only torch.ops.aten), a building block of composites like kron and linear's
# fused backward; test_ops.py compares them with PyTorch's. Left out so that adding them
# kept every seed's program as it was (the fuzzer's own tests replay chosen seeds).
_SKIPPED |= {"_unsafe_view", "_linear_backward"}
OPS = [op for op in op_db if op.name not in _SKIPPED]

# Ops whose index outputs are unspecified between equal values (which of two equal
# maxima `topk` reports): with ties in the input only their values are compared.
_TIE_INDEX_OPS = {"topk", "kthvalue", "mode", "median", "sort", "argsort", "msort",
                  "cummax", "cummin", "unique"}

# Ops with an argument that must be sorted (their result is undefined otherwise). Their
# input is never a live value either: a live value is not sorted.
_SORTED_ARGS = {"bucketize", "searchsorted"}

# Ops that address the input's storage rather than its elements: as_strided reads the
# slots between a strided tensor's elements and the layout of an op's fresh result
# (which the programs do not compare). The PyTorch twin of a live value copies its
# elements only (to_torch), so those slots hold different bytes in the two libraries.
# Their input is never a live value (the samples' own inputs are contiguous/transposed).
_STORAGE_ADDRESSING = {"as_strided"}

# Ops whose result on a NaN or inf input depends on which of PyTorch's kernels runs:
# scaled_dot_product_attention's CPU flash kernel and its math kernel disagree where an
# infinite query or key meets the causal mask (-inf + inf); gelu(inf) is NaN from the
# vectorized float32 loop, inf from the scalar one (a 1-element tensor) and in float64.
# No single answer is right, so these ops get finite inputs only.
_FINITE_ONLY = {"scaled_dot_product_attention", "gelu"}
# Also grid_sampler_3d, whose non-finite grid coordinates PyTorch's scalar 3-D CPU kernel
# handles unlike its vectorised 2-D one (which TensorPlay follows for both): the forward's
# clip (std::min/max) turns a NaN into the upper border, its backward's clip keeps the NaN
# and then reads nothing (-100, out of bounds), and a NaN or inf under zeros padding reads
# nothing (0) where the 2-D kernel gives NaN. Open: TensorPlay's 3-D kernel gives the 2-D
# kernel's NaN there. The same holds for grid_sampler of a 5-D input (it runs the 3-D
# kernel), and the 2-D kernel's nearest mode with border or reflection padding picks
# another pixel for a NaN coordinate than TensorPlay's (open).
_FINITE_ONLY |= {"grid_sampler_3d", "grid_sampler", "grid_sampler_2d"}
# And the orthogonal polynomials: PyTorch's CPU kernels return garbage for a NaN x of
# degree n > 6 (6.9e-310, or the previous element's result: the value left in a register,
# not NaN), where the recurrence they write would give NaN, as TensorPlay's does.
_FINITE_ONLY |= {op.name for op in OPS if "polynomial" in op.name}
# And histogram/histogramdd with bin edges given as tensors: a NaN edge has no place in
# their order, and PyTorch's std::upper_bound and NumPy's searchsorted (NaN sorts last) put
# the values around it into other bins. (Their samples draw the data and the edges alike.)
_FINITE_ONLY |= {"histogramdd", "histogram"}


# An FFT of an inf: each output is a sum of inf * e^(i theta) terms, and whether a part
# comes out 0, inf or nan (inf * cos(pi/2) in exact arithmetic is 0 * inf) depends on the
# algorithm's butterflies (PyTorch's MKL, NumPy's pocketfft). No single answer is right:
# the transforms (tests/opinfo/db_fft.py's entries) get finite inputs.
def _fft_names():
    from opinfo import db_fft
    return {e.name for e in db_fft.op_db if "shift" not in e.name}   # (shifts are rolls)


_FFT = _fft_names()


# The layout of an FFT's result is the backend's: PyTorch's MKL path permutes the batch
# dims into stride order and lays the transformed dims out last, its pocketfft path (other
# platforms) returns a contiguous result; neither is documented. The twin of such a result
# is given TensorPlay's strides (same values, same history), so that the views taken of it
# later compare their own strides like for like.
_LAYOUT_BY_BACKEND = _FFT
# So is the layout of unique_consecutive's and unique_dim's values along a dim: PyTorch
# returns them as the view of its working copy with that dim moved first (strides (1, 4)
# for a [4, 3] result along dim 1; seed 710679), undocumented; TensorPlay's are contiguous.
_LAYOUT_BY_BACKEND = _LAYOUT_BY_BACKEND | {"_unique_consecutive", "unique_consecutive",
                                           "unique_dim"}


def _restrided(t, strides):
    """PyTorch tensor t's values and autograd history in a tensor with these strides."""
    out = torch.empty_strided(tuple(t.shape), tuple(strides), dtype=t.dtype)
    return out.copy_(t)


# PyTorch's batch_norm updates the running statistics before it checks the dtypes of
# weight and bias: when it raises, the running statistics may hold its writes, and
# TensorPlay's (which checks first) do not. Nothing after such a step is compared.
_WRITES_BEFORE_CHECKS = {"batch_norm", "native_batch_norm", "instance_norm"}


# PyTorch's float64 Bessel functions of the first and second kind are accurate to about
# float32's precision only: J0 near its zero at 5.52 is off by 1.6e-7 (absolute; mpmath
# agrees with SciPy, which TensorPlay's CPU kernels use, to 1e-14). Their results are
# compared at float32's tolerance, whatever their dtype.
_FLOAT32_ACCURATE = {"special_bessel_j0", "special_bessel_j1", "special_bessel_y0",
                     "special_bessel_y1", "special_airy_ai"}

# lobpcg iterates until its residual is below sqrt(eps): its results agree with PyTorch's to
# that, not to the dtype's rounding (its OpInfo entry's tolerances say the same). A float32
# result is compared at float16's tolerance, a float64 one at float32's.
_CONVERGED_TO_SQRT_EPS = {"lobpcg"}

# svd_lowrank and pca_lowrank project onto a random matrix, drawn by each library from its
# own generator (TensorPlay's randn, PyTorch's: different draws even when both are seeded
# alike). U diag(S) V^T (what their entries compare) is the input itself whatever the
# draw, but rounded through the projection, whose conditioning depends on the draw
# (seed 263134: float32 1.29242 against 1.29239). Compared one precision looser, as their
# OpInfo entries' tolerances (1e-4 in float32) are loose for the same reason.
_CONVERGED_TO_SQRT_EPS |= {"svd_lowrank", "pca_lowrank"}

# pinv keeps eigenvalues (singular values) down to rtol * the largest (0.1 in the samples):
# the gradient through their inverses scales as 1 / sigma**2, 100-fold past the rounding
# of float32's decomposition. Their results are compared one precision looser, as
# _CONVERGED_TO_SQRT_EPS's (seed 2743: TensorPlay's float32 gradient is 3e-7 from the
# float64 one, PyTorch's 5e-6).
_AMPLIFIES_ROUNDING = {"linalg_pinv", "pinverse"}
# PyTorch's float32 polygamma near a negative pole reflects with sin(pi x) in float32,
# which loses the digits the pole amplifies: at x = -2.05 its trigamma is 4.7e-6 from the
# float64 value, TensorPlay's (SciPy's, rounded once) 2e-8 (seed 993340: 1.7e-5 apart).
_AMPLIFIES_ROUNDING |= {"polygamma"}
# digamma's derivative (its tangent, its gradient) is that trigamma, polygamma(1, x)
# (seed 67892: at x near -2 PyTorch's float32 tangent is 8.84473, TensorPlay's 8.84466,
# the float64 value rounded).
_AMPLIFIES_ROUNDING |= {"digamma"}

# Results that are sums of terms much larger than themselves carry the rounding of the
# terms, and the two libraries round them in another order:
# - a chain of four or five products: each entry of the result sums terms up to ten times
#   its own size (seed 902712: |terms| 1e4 against |result| 9e2 in complex64; TensorPlay's
#   error from the complex128 product 1.4e-4, PyTorch's 1.0e-4);
# - a transform: an output that cancels to 0 sums terms of the input's whole size (an FFT
#   of uint8 values up to 255: pocketfft's -3e-5 where MKL's is 0.0).
# And the orthogonal polynomials of a large degree n, evaluated as sin((n + 1/2) acos x) /
# sin(acos(x) / 2) in the input's precision: the argument (9e3 at n = 6930) carries an
# ulp of 1e-3, and NumPy's float32 sin and libm's sinf round it apart (0.8498 against
# 0.8512, the float64 value being 0.8508).
# Compared one precision looser, as _AMPLIFIES_ROUNDING's.
_CANCELLING_SUMS = ({"chain_matmul", "linalg_multi_dot"} | _FFT
                    | {op.name for op in OPS if "polynomial" in op.name})

# PyTorch's CPU flash-attention backward rounds its intermediates (the scores' gradient)
# to bfloat16 or float16 when its inputs are; TensorPlay's accumulates in float32 (seed 29:
# TensorPlay's bfloat16 dQ is 0.0056 from the float64 result of the same formula,
# PyTorch's 0.027, past bfloat16's tolerance). These ops are drawn in float32 and float64.
_HALF_INTERMEDIATES = {"_scaled_dot_product_flash_attention_backward"}


# PyTorch's CPU mode sorts each slice with std::sort and `a < b`, which is no strict weak
# order once a NaN is in the slice: the order, hence which value's run counts as the
# mode, is unspecified (it depends on the sort's internals). These ops get finite inputs.
_NAN_UNORDERED = {"mode", "unique"}   # (unique with dim sorts its slices by `<` too)


# The mean these ops return for a row holding an inf is NaN or that inf depending on how
# PyTorch's RowwiseMoments splits the row into SIMD lanes (Welford's update: inf then
# a finite x gives inf + (x - inf) / n = NaN; an inf last, or alone in its lane, stays
# inf), so on the machine's vector width (AVX2 or AVX512). Their input is finite; the
# weight and bias may still be poisoned.
_FINITE_INPUT = {"native_layer_norm", "native_group_norm"}


# The gradient of elu, celu and selu at a NaN input is NaN from PyTorch's vectorized
# float64 loop and grad * scale from its scalar tail and its float32 loop (7 elements
# give 1.0, 24 give NaN); hardtanh's (relu6's) is 0 from the vectorized loop and grad
# from the scalar tail; hardswish's is NaN from the vectorized loop and grad from the
# scalar tail (seeds 8307990, 11211919, 11502155), hardshrink's 0 and grad (seed 11707677).
# No single answer is right: these ops get finite inputs.
_NAN_GRAD_BY_LOOP = {"elu", "celu", "selu", "hardtanh", "relu6", "hardswish", "hardshrink"}


def _zero_padded_conv(op, sample):
    """A convolution with zero padding multiplies a weight by the padding's zeros, or
    does not, depending on PyTorch's kernel: its oneDNN kernel (float16, bfloat16, and
    float32 when its heuristics pick it, e.g. conv1d with 3 channels) skips the padded
    positions, its im2col kernel (float64; float32 conv2d of 1 channel) computes
    0 * inf = NaN there. Such calls get finite inputs only, like _FINITE_ONLY's ops,
    except in float64, which only the im2col kernel takes: there an inf or a NaN next to
    the padding (_poison puts one on the border half the time) is compared."""
    return (op.name == "convolution" and any(p != 0 for p in sample.args[3])
            and sample.input.dtype is not tp.float64)

# PyTorch 2.13's median.dim and nanmedian.dim read past the data of an input with a zero
# stride (an expanded tensor): values like 1e-19 come back. Such inputs are not chained in.
_NO_ZERO_STRIDE = {"median", "nanmedian"}

# PyTorch's vander cannot be differentiated: its backward always raises "modified by an
# inplace operation" (it computes into a slice of its output with cumprod_out, and the
# saved result is then stale; pytorch/pytorch#60197, still so in 2.13). Its input never
# requires grad here.
# Also: as_strided_scatter, whose self PyTorch 2.13 hands the gradient of the elements
# src overwrote instead of the others' (the OpInfo entry's xfail says so; gradcheck
# checks ours).
_NO_BACKWARD = {"vander", "as_strided_scatter"}

# LAPACK on a NaN or inf: what comes back (a NaN, a finite number, an error from an
# iteration that does not converge) depends on the routine's blocking and pivoting and on
# the library (NumPy's and SciPy's OpenBLAS here, PyTorch's own LAPACK build there); no
# result is documented. The factorizations, solves and what is built on them (tensorinv,
# matrix_power's inverse, the spectral norms) get finite inputs. The Householder products
# are Composite here (each reflector applied to the whole matrix): a NaN in a reflector
# also reaches the rows LAPACK's dlarf leaves alone, a difference left as it is.
def _lapack_names():
    from opinfo import db_eigen, db_linalg, db_qr, db_triangular
    entries = db_eigen.op_db + db_qr.op_db + db_triangular.op_db + db_linalg.FACTORIZATIONS
    return {e.name for e in entries} | {"linalg_tensorinv", "linalg_tensorsolve",
                                        "linalg_matrix_exp", "matrix_exp",
                                        "linalg_matrix_power", "matrix_power",
                                        "nuclear_norm"}


_LAPACK = _lapack_names()
_NORMS = {"linalg_matrix_norm", "linalg_norm", "norm"}


def _calls_lapack(op, sample):
    """An op of _LAPACK, or a norm whose order is a spectral one (through the SVD)."""
    if op.name in _LAPACK or op.name == "nuclear_norm":
        return True
    orders = list(sample.args) + list(sample.kwargs.values())
    return op.name in _NORMS and any(type(o) in (int, float, str) and o in (2, -2, "nuc")
                                     for o in orders)


# ---- results that are not unique ----------------------------------------------------
# Where the math leaves a result undefined, PyTorch's value is its LAPACK's choice, no
# contract; those parts are checked for what IS defined and the twin then takes
# TensorPlay's values there (so that later steps compare like for like), and the
# gradients (and tangents) that flow through such a result are not compared
# (Program.undefined_grads: only the leaves they reach). Each rule holds only where its
# non-uniqueness does:
#
# - the nuclear norm of a rank-deficient matrix (an expanded input: every row the same,
#   seeds 205325, 257001): its value is defined, but its (sub)gradient U V^T sums u v^T
#   over the zero singular values too, whose vectors are any basis of the null spaces
#   (LAPACK's choice). Gradients and tangents not compared.
# - linalg_cond of a numerically singular matrix: exactly inf; in floating point 1 / (a
#   rounding error), huge or inf (seed 283575: float32 'nuc' 1.97e16 against 5.8e7; a
#   float64 p=2 3.2e33 against inf). Both must be at least _HUGE_COND / eps of the dtype
#   (or inf), or, for p=-2 (sigma_min / sigma_max, exactly 0), both at most
#   eps / _HUGE_COND (seed 4003142: 3.7e-18 against 6.1e-17); their gradients not compared.
# - slogdet, linalg_slogdet and logdet of a numerically singular matrix (a pinv at its
#   cutoff, seed 689916): det is 0 to within rounding, so its sign and log|det| are those
#   of the last rounding error in the LU factors (float64 sign -1 here, 1 in PyTorch).
#   Neither is compared for those matrices, nor the gradients.
# - linalg_eigh of a matrix with a repeated eigenvalue (to within rounding; seed 3021705:
#   -0.3866 twice): its eigenvectors are any basis of the eigenspace, so the database's
#   sign-free form of them (Q * Q) is not unique either. The eigenvalues and the
#   reconstruction are compared; Q * Q and the gradients through the step are not.
# - the index ops of _TIE_INDEX_OPS on an input with ties: which equal value they pick
#   is no contract; their indices are not compared, nor the gradients of their values.
#   nanmedian.dim's comparator leaves the NaNs unordered too (PyTorch's CPU kernel:
#   std::nth_element, whose NaNs are all "equal"), so on a slice of NaNs only (seed
#   5032386: a batch norm by a NaN variance) its index is where libstdc++'s introselect
#   leaves position 0 of the index array: 0, 0, 0, 2, 2, 3, 5, 6, 7, 8, 8, 9, 8 for 1 to
#   13 NaNs, a pattern of that library's partitioning, not of the data (the docs say only
#   that the value is NaN). That index must be one of the slice's and takes
#   TensorPlay's (its first); the value stays compared (NaN), and so do the indices of
#   the other slices (NaNs skipped, ties by position, as PyTorch's comparator breaks
#   them). The gradients are not (where the slice's gradient goes is that index).
# - linalg_cholesky_ex of a matrix that is not positive-definite: info > 0 says "the
#   decomposition could not be completed" (torch.linalg.cholesky_ex's docs) and L's
#   values are what LAPACK's potrf left behind (PyTorch: A's own entries where it stopped,
#   seed 263344). L is compared only for the matrices whose info is 0; info always.
# - linalg_solve_ex and linalg_inv_ex of a numerically singular matrix (two rows alike,
#   seed 967204): there is no (unique) solution, and whether elimination meets an exact
#   zero pivot (info > 0, inf) or a rounding error (info 0, 1e17) depends on the order of
#   its operations. Neither the result nor info is compared for such a matrix (nor, as
#   for cholesky_ex, the result where either info is > 0).
# - polygamma at a pole (x a non-positive integer: seed 5365, trigamma of an int32 -2):
#   the value is infinite; PyTorch's reflection divides by sin(pi x), which rounds to
#   1e-7 rather than 0, and returns 3.2e14 (float32) or 1.6e32 (float64). Both must be
#   at least _HUGE_COND / eps in magnitude (or inf, or NaN: the sign of an even order's
#   pole depends on the side); their gradients not compared.
# - the singular vectors of repeated singular values (seed 684460: lgamma of integers,
#   a rank-2 3x4 matrix): any rotation of their block is as good; a zero singular value
#   of a non-square matrix has a null space of two or more dimensions on the long side. The database compares the SVD by invariants (S,
#   U * U, Vh * Vh, U @ Vh: tests/opinfo/db_eigen.py); S stays compared, the three others
#   take TensorPlay's values for such matrices, and their gradients (PyTorch's backward
#   divides by s_i^2 - s_j^2) are not compared.
# - not undefined but wrong in PyTorch: ldexp(x, n) of an integer n holding a negative
#   value (seed 285624) or one past its dtype's bits (seed 663869, uint8 n = 200): PyTorch's
#   backward and tangent multiply by 2 ** n computed in n's integer dtype, 0 for n < 0 and
#   wrapped past the bits (ldexp(1.5, -2): a tangent of 0 for the derivative 0.25;
#   tests/test_forward_ad_ops.py checks TensorPlay's against finite differences). The
#   value is compared, its gradients and tangent are not.
#   Likewise atan2 of an integer tensor and a float one (seed 11904111, a uint8 self):
#   PyTorch's atan2_backward computes -self and self * self in the integer's dtype, which
#   wrap (uint8 -3 is 253), so the float argument's gradient was 44.8 for the derivative's
#   -0.327 (TensorPlay's, and NumPy's in float64).
# - the QR (geqrf, linalg_qr in its three modes, qr) of a matrix whose leading columns
#   are numerically rank-deficient (seed 2070024: geqrf of a 3x4 matrix of ones; seed
#   5073991: linalg_qr 'complete' of a 3x3 matrix of 2s): Householder step j reflects
#   what is left of column j once the j reflectors before it are applied; where columns
#   0..j are dependent to within rounding that is a vector of rounding errors (here
#   -3.1e-17 and 7.3e-33 with SciPy's OpenBLAS, exact zeros with PyTorch's MKL), and its
#   direction, so reflector j, tau[j] and everything steps j.. leave (rows j.. from
#   column j on) is the order of the BLAS's operations (tau 0.414 against 0): Q's
#   columns j.. are any orthonormal completion of the first j (Q[0, 1] 0.816 against
#   -0.577). Compared: Q's columns before j, tau[:j], R's rows above j (and its zeros
#   below the diagonal before column j), the reflectors of the columns before j; the
#   rest takes TensorPlay's values. Gradients not compared (PyTorch has none for geqrf;
#   linalg_qr's divides by R's diagonal, a rounding error from j on).
_NUCLEAR = {"nuclear_norm"}
# op -> whether a numerically singular input leaves its result (and info) undefined too
_INFO_OUTPUT = {"linalg_cholesky_ex": False, "linalg_solve_ex": True, "linalg_inv_ex": True}
# The logarithm of a determinant: of a matrix singular to within rounding, its sign and
# log|det| are those of the LU factors' last rounding error (slogdet of a pinv at its
# cutoff: sign -1 here, 1 in PyTorch; logdet NaN or -80).
_LOG_DETERMINANTS = {"linalg_slogdet", "slogdet", "logdet"}
_HUGE_COND = 0.01


def _is_nuclear(op, sample):
    orders = list(sample.args) + list(sample.kwargs.values())
    return op.name in _NUCLEAR or (op.name in _NORMS and any(
        isinstance(o, str) and o == "nuc" for o in orders))


def _matrices(op, sample):
    """The input as a float64 (complex128) PyTorch batch of the matrices the op reduces
    (the first pair of dims given among its arguments, else the last two)."""
    a = to_torch(sample.input, requires_grad=False)
    dims = (-2, -1)
    for arg in list(sample.args) + list(sample.kwargs.values()):
        if isinstance(arg, (list, tuple)) and len(arg) == 2 and all(
                type(d) is int for d in arg):
            dims = tuple(arg)
            break
    return a.movedim(dims, (-2, -1)).to(torch.complex128 if a.is_complex() else torch.float64)


def _singular_values(op, sample):
    """(the singular values of each matrix the op reduces, the rounding of zero: max(m, n)
    ulps of the largest, in the input's dtype, whether the matrices are square), or None
    for an empty or non-finite input."""
    a = _matrices(op, sample)
    if a.numel() == 0 or not torch.isfinite(a).all():
        return None
    s = torch.linalg.svdvals(a)
    dtype = sample.input.dtype
    eps = torch.finfo(TORCH_DTYPE[dtype] if dtype.is_floating_point or dtype.is_complex
                      else torch.float64).eps
    return s, max(a.shape[-2:]) * eps * s[..., 0], a.shape[-2] == a.shape[-1]


def _no_matrix(op, sample):
    return torch.zeros(_matrices(op, sample).shape[:-2], dtype=torch.bool)


def _singular(op, sample):
    """Per matrix: whether its smallest singular value is within rounding of zero."""
    found = _singular_values(op, sample)
    if found is None:
        return _no_matrix(op, sample)
    s, tol, _ = found
    return s[..., -1] <= tol


def _repeated_singular_values(op, sample):
    """Per matrix: whether two of its singular values are within rounding of each other,
    or, not square, one of zero."""
    found = _singular_values(op, sample)
    if found is None:
        return _no_matrix(op, sample)
    s, tol, square = found
    repeated = ((s[..., :-1] - s[..., 1:]) <= tol.unsqueeze(-1)).any(-1)
    if not square:      # a zero of a non-square matrix: its long side's null space has
        repeated |= s[..., -1] <= tol       # two or more dimensions
    return repeated


def _first_dependent_column(op, sample):
    """Per matrix: the first j whose columns 0..j are linearly dependent to within
    rounding (the smallest singular value of A[:, :j+1] within max(m, n) ulps of A's
    largest), min(m, n) where there is none; None for an empty or non-finite input."""
    found = _singular_values(op, sample)
    if found is None:
        return None
    _, tol, _ = found
    a = _matrices(op, sample)
    k = min(a.shape[-2:])
    first = torch.full(a.shape[:-2], k, dtype=torch.int64)
    for j in range(k - 1, -1, -1):
        dependent = torch.linalg.svdvals(a[..., :j + 1])[..., -1] <= tol
        first = torch.where(dependent, j, first)
    return first


# The parts of a QR's outputs past the first dependent column j (see "results that are
# not unique"): "columns", the last dim's entries j.. (Q's columns, tau); "trailing", rows
# j.. from column j on (R; geqrf's R with the reflectors below it).
_QR_PARTS = {"geqrf": ("trailing", "columns"), "linalg_qr": ("columns", "trailing"),
             "qr": ("columns", "trailing")}


def _past_first_dependent(part, shape, first):
    """Where an output of `shape` is past each matrix's first dependent column (`first`,
    of the batch's shape) in the sense of `part` (see _QR_PARTS)."""
    j = first.reshape(first.shape + (1,) * (len(shape) - first.dim()))
    later = torch.arange(shape[-1]) >= j
    if part == "trailing":
        later = later & (torch.arange(shape[-2]).reshape(-1, 1) >= j)
    return later


def _qr_rule(op, sample):
    """The rule of "results that are not unique" of a QR (geqrf, linalg_qr, qr; see
    there) of a matrix with leading columns dependent to within rounding, or None."""
    first = _first_dependent_column(op, sample)
    if first is None or not bool((first < min(sample.input.shape[-2:])).any()):
        return None

    def rounding_decides(tp_outs, th_outs, where):
        kept = []
        for a, b, part in zip(tp_outs, th_outs, _QR_PARTS[op.name]):
            if b.numel() == 0:      # (linalg_qr's Q in mode 'r')
                kept.append(b)
                continue
            mask = _past_first_dependent(part, b.shape, first)
            kept.append(_undefined_values_of(b, torch.where(
                mask, to_torch(a, requires_grad=False), b.detach())))
        return kept, True
    return rounding_decides


def _nanmedian_rule(op, sample):
    """nanmedian.dim's rule of "results that are not unique" (see there) where a slice
    it reduces holds NaNs only, or None."""
    if op.full_name != "nanmedian.dim":
        return None
    x = to_torch(sample.input, requires_grad=False)
    if not x.is_floating_point() or x.numel() == 0:
        return None
    dim = sample.args[0] if sample.args else sample.kwargs.get("dim", -1)
    all_nan = torch.isnan(x).all(dim=dim, keepdim=True)
    if not bool(all_nan.any()):
        return None
    length = x.shape[dim] if x.dim() else 1

    def any_index_of_the_slice(tp_outs, th_outs, where):
        (_, a), (values, b) = tp_outs, th_outs
        mine, at = to_torch(a, requires_grad=False), all_nan.reshape(b.shape)
        if not bool(((mine[at] >= 0) & (mine[at] < length)).all()):
            raise _Found("value", f"{where}: indices {mine[at].tolist()} of slices of "
                         f"{length} NaNs, PyTorch {b[at].tolist()}")
        return [values, torch.where(at, mine, b)], True
    return any_index_of_the_slice


# The ops whose rule below marks only the gradients undefined (the values compared): the
# rule holds for their in-place form too.
_GRADIENTS_ONLY_UNDEFINED = {"ldexp"}


def _wraps_in_square(t):
    """Whether -t or t * t leaves t's integer dtype for some element (an unsigned t's
    negation always does, but for 0)."""
    if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype is tp.bool or not t.numel():
        return False
    values = to_torch(t, requires_grad=False).to(torch.float64)
    info = torch.iinfo(TORCH_DTYPE[t.dtype])
    return bool(((values * values > info.max) | ((info.min == 0) & (values != 0))).any())


def _undefined_parts(op, sample):
    """The rule of "results that are not unique" for this call, or None where its result
    is unique: a function (TensorPlay's outputs, PyTorch's, where) that checks what is
    defined and returns (PyTorch's outputs to keep, whether the gradients through them
    are undefined)."""
    if not isinstance(sample.input, tp.Tensor):
        return None
    if op.name == "ldexp":
        n = sample.args[0] if sample.args else None
        if isinstance(n, tp.Tensor) and not (n.dtype.is_floating_point or n.dtype.is_complex
                                             or n.dtype is tp.bool):
            bits = torch.iinfo(TORCH_DTYPE[n.dtype]).bits
            if bool(((n < 0) | (n >= bits - 1)).any()):      # 2 ** n not exact in n's dtype
                return lambda tp_outs, th_outs, where: (th_outs, True)
        return None
    if op.name == "atan2":
        other = sample.args[0] if sample.args else None
        if any(isinstance(t, tp.Tensor) and _wraps_in_square(t) for t in (sample.input, other)):
            return lambda tp_outs, th_outs, where: (th_outs, True)
        return None
    if op.name == "polygamma":
        x = to_torch(sample.input, requires_grad=False).to(torch.float64)   # (or bool)
        poles = (x <= 0) & (x == x.round()) & torch.isfinite(x)
        if not bool(poles.any()):
            return None

        def infinite(tp_outs, th_outs, where):
            (a,), (b,) = tp_outs, th_outs
            mine, theirs = to_torch(a, requires_grad=False), b.detach()
            huge = _HUGE_COND / torch.finfo(b.dtype).eps
            # (digamma's pole is a simple one, of no sign: NaN is as fair an answer there)
            big = ((mine.abs() >= huge) | mine.isnan()) & \
                ((theirs.abs() >= huge) | theirs.isnan())
            at = poles.expand(b.shape)
            if not bool(big[at].all()):
                raise _Found("value", f"{where}: polygamma at its poles {mine[at].tolist()}, "
                             f"PyTorch {theirs[at].tolist()}")
            return [_undefined_values_of(b, torch.where(at, mine, theirs))], True
        return infinite
    if op.name == "nanmedian":
        return _nanmedian_rule(op, sample)
    if sample.input.dim() < 2:
        return None
    if op.name == "linalg_eigh":
        def eigenvectors_of(tp_outs, th_outs, where):
            # (the database's eigh gives eigenvalues, Q * Q and Q diag(L) Q^T: sign-free
            # forms of the eigenvectors; with a repeated eigenvalue Q * Q is not unique)
            w = th_outs[0].detach()
            if w.shape[-1] < 2:
                return th_outs, False
            tol = w.shape[-1] * torch.finfo(w.dtype).eps * w.abs().amax(-1, keepdim=True)
            repeated = ((w[..., 1:] - w[..., :-1]) <= tol).any(-1)
            if not bool(repeated.any()):
                return th_outs, False
            mask = repeated.reshape(repeated.shape + (1, 1))
            kept = list(th_outs)
            kept[1] = _undefined_values_of(th_outs[1], torch.where(
                mask, to_torch(tp_outs[1], requires_grad=False), th_outs[1].detach()))
            return kept, True
        return eigenvectors_of
    if op.name in ("linalg_svd", "svd") and sample.kwargs.get("compute_uv", True):
        repeated = _repeated_singular_values(op, sample)
        if not bool(repeated.any()):
            return None

        def vectors_of(tp_outs, th_outs, where):
            kept = [th_outs[0]]
            for a, b in zip(tp_outs[1:], th_outs[1:]):
                mask = repeated.reshape(repeated.shape + (1, 1))
                kept.append(_undefined_values_of(b, torch.where(
                    mask, to_torch(a, requires_grad=False), b.detach())))
            return kept, True
        return vectors_of
    if op.name in _QR_PARTS:
        return _qr_rule(op, sample)
    if _is_nuclear(op, sample):
        if not bool(_singular(op, sample).any()):
            return None
        return lambda tp_outs, th_outs, where: (th_outs, True)
    if op.name == "linalg_cond":
        singular = _singular(op, sample)
        if not bool(singular.any()):
            return None

        def huge(tp_outs, th_outs, where):
            (a,), (b,) = tp_outs, th_outs
            eps = torch.finfo(b.dtype).eps
            x, y = to_torch(a, requires_grad=False), b.detach()
            big = (x.abs() >= _HUGE_COND / eps) & (y.abs() >= _HUGE_COND / eps)
            # (p=-2: sigma_min / sigma_max, rounding noise near 0)
            big |= (x.abs() <= eps / _HUGE_COND) & (y.abs() <= eps / _HUGE_COND)
            if not bool(big[singular].all()):
                raise _Found("value", f"{where}: condition numbers {x[singular].tolist()} "
                             f"of singular matrices, PyTorch {y[singular].tolist()}")
            return [_undefined_values_of(b, torch.where(singular, x, y))], True
        return huge
    if op.name in _LOG_DETERMINANTS:
        singular = _singular(op, sample)
        if not bool(singular.any()):
            return None

        def rounding_decides(tp_outs, th_outs, where):
            kept = []
            for a, b in zip(tp_outs, th_outs):
                mask = singular.reshape(singular.shape + (1,) * (b.dim() - singular.dim()))
                kept.append(_undefined_values_of(b, torch.where(
                    mask, to_torch(a, requires_grad=False), b.detach())))
            return kept, True
        return rounding_decides
    if op.name in _INFO_OUTPUT:
        singular = _singular(op, sample) if _INFO_OUTPUT[op.name] else False

        def completed(tp_outs, th_outs, where):
            (a, a_info), (b, b_info) = tp_outs, th_outs
            mine_info = to_torch(a_info)
            failed = (mine_info > 0) | (b_info > 0) | singular
            if not bool(failed.any()):
                return th_outs, False
            if _INFO_OUTPUT[op.name]:       # an exact zero pivot or not: rounding decides
                b_info = torch.where(singular, mine_info, b_info)
            mine = to_torch(a, requires_grad=False)
            mask = failed.reshape(failed.shape + (1,) * (b.dim() - failed.dim()))
            kept = torch.where(mask, mine, b.detach())
            return [_undefined_values_of(b, kept), b_info], True
        return completed
    return None


# ---- edge cases an op step may turn its sample into ----------------------------------
# The database's samples are mostly well-formed calls. In about one op step in four the
# fuzzer turns the sample into an edge case (Program._edge_case), the same for every op
# that it applies to (so a new op gets them for free):
#
#   empty    one dim of the input, and of the other tensors that share it, sliced to 0
#            (dim 0 of every tensor with the input's leading size: a batch of none)
#   integer  an op whose entry lists float dtypes only, on a bool or integer input (PyTorch
#            promotes some, sin(int) is float32, and refuses others)
#   mixed    another tensor argument of another dtype (matmul of float32 by float64, an
#            int32 index, a float16 weight): promoted or refused as PyTorch does
#   huge     the input scaled to huge finite values (1e30 in float32, or near the dtype's
#            max) for the ops whose result stays finite in exact arithmetic but whose
#            kernels square or exponentiate: normalisations, softmax, logsumexp, norms
#
# Complex dtypes come from the entries' own dtypes (tests/opinfo/db_complex.py and the
# COMPLEX of each family's entries); _op_step draws one more often than its share.
_EDGE_CASES = ("empty", "integer", "mixed", "huge")
_NORMALISING = {"batch_norm", "native_batch_norm", "layer_norm", "native_layer_norm",
                "rms_norm", "_fused_rms_norm", "group_norm", "native_group_norm",
                "instance_norm", "softmax", "log_softmax", "softmin", "logsumexp",
                "logcumsumexp", "norm", "linalg_vector_norm", "linalg_norm", "var", "std",
                "var_mean", "std_mean", "renorm", "normalize", "cosine_similarity",
                "cross_entropy_loss", "nll_loss", "mean", "kl_div"}
# Ops that get no "empty" case: resize_ grows an empty tensor into uninitialised memory
# (in both libraries); PyTorch 2.13's pixel_unshuffle returns an empty input with its own
# shape, (0, 1, 3, 6) for (0, 1, 3, 6) and r = 3, not (0, 9, 1, 2) (a PyTorch bug: its
# pixel_shuffle and every non-empty input follow the documented shape, as TensorPlay does).
# And native_batch_norm: PyTorch 2.13's CPU backward of an empty input in evaluation mode
# divides an integer by zero (SIGFPE: the process dies; seed 981523).
_NO_EMPTY_CASE = {"resize_", "resize_as_", "pixel_unshuffle", "native_batch_norm"}
# PyTorch has CUDA kernels only for these: tests/opinfo compares them with a Python
# reference, whose dtype rules, empty-input and NaN/inf handling are its own, not
# PyTorch's. They get no edge case, finite inputs, and a live value as input only of the
# sample's own dtype (seed 706491: the reference promotes a float32 input with float64
# statistics to float64).
_CUDA_ONLY_IN_PYTORCH = {"batch_norm_elemt", "batch_norm_stats", "batch_norm_gather_stats",
                         "batch_norm_gather_stats_with_counts", "batch_norm_backward_reduce",
                         "batch_norm_backward_elemt"}
# Ops that get no "integer" or "mixed" case: those, and affine_grid_generator, whose uint8
# grid differs from PyTorch's in wrapped elements (open: an integer theta has no use, the
# difference is not investigated).
_NO_DTYPE_CASES = _CUDA_ONLY_IN_PYTORCH | {"affine_grid_generator"}
# Nor the ops that compare singular values with a tolerance given as a tensor: their
# samples' singular values are round numbers (2, 1.5, 1), and a "mixed" integer tolerance
# rounds to one of them, where which side of it the decomposition's last ulp falls decides
# the rank (seed 702751: atol=1 against a singular value 1.0000001 in PyTorch, 1.0 here).
_NO_DTYPE_CASES |= {"linalg_matrix_rank", "linalg_pinv"}
_INTEGER_DTYPES = (tp.bool, tp.uint8, tp.int32, tp.int64)
_OTHER_DTYPES = (tp.bool, tp.int32, tp.int64, tp.float16, tp.bfloat16, tp.float32,
                 tp.float64, tp.complex64)


def _sorted_along_last(t):
    """Whether tensor t is sorted along its last dim."""
    a = tp_to_numpy(t)
    return a.ndim >= 1 and bool(np.all(a[..., 1:] >= a[..., :-1]))


# The ops that subtract the maximum before they exponentiate: values near the dtype's max
# are fair for them. The others sum their input, and a sum of values near the max
# overflows to inf or to inf - inf = nan depending on the order of the additions (no
# contract): they get values whose squares overflow but whose sums do not.
_MAX_SHIFTED = {"softmax", "log_softmax", "softmin", "logsumexp", "logcumsumexp"}
_SQUARE_OVERFLOWS = {tp.float16: 1e3, tp.bfloat16: 1e30, tp.float32: 1e30, tp.float64: 1e300}


# layer_norm and group_norm take their moments with PyTorch's RowwiseMoments, whose
# result once the squares overflow depends on how the row splits into SIMD lanes, as
# _FINITE_INPUT's note says (float32 rows of 1e30: NaN for 16 elements, 0 for 17): no
# contract. Their huge values are the largest whose squares, summed, stay finite.
_ROWWISE_MOMENTS = {"layer_norm", "native_layer_norm", "group_norm", "native_group_norm"}
_SQUARES_FIT = {tp.float16: 1e3, tp.bfloat16: 1e18, tp.float32: 1e18, tp.float64: 1e150}


def _squares_fit(t):
    """Whether `t` is fair input for _ROWWISE_MOMENTS's ops: no value past the largest
    whose squares, summed, stay finite. A live value made huge for another op (1e300 for
    `norm`) is not (seed 9812563: layer_norm of rows of 1e300, NaN in PyTorch)."""
    limit = _SQUARES_FIT.get(t.dtype)
    if limit is None or not t.numel():
        return True
    values = np.abs(tp_to_numpy(t).astype(np.float64))
    return bool(np.all(~np.isfinite(values) | (values <= limit)))


def _huge_scale(op, dtype, rng):
    """A huge finite magnitude for `dtype`: one whose square overflows (1e30 in float32),
    or, for _MAX_SHIFTED's ops, the dtype's max over 2 or 1.5 (for _ROWWISE_MOMENTS's, the
    largest whose squares fit)."""
    big = float(tp.finfo(dtype).max)
    if op.name in _MAX_SHIFTED and rng.random() < 0.5:
        return (big / 2, big / 1.5)[int(rng.integers(2))]
    if op.name in _ROWWISE_MOMENTS:
        return _SQUARES_FIT[dtype]
    return _SQUARE_OVERFLOWS[dtype]


def _leaf_like(t, new):
    """`new` (computed from t) as a leaf of its own, requiring grad where t did and the
    dtype can."""
    new = new.detach()
    if t.requires_grad and (new.dtype.is_floating_point or new.dtype.is_complex):
        new.requires_grad_(True)
    return new


FAILING_KINDS = ("value", "dtype", "shape", "requires_grad", "strides", "grad",
                 "tangent", "compiled", "distribution",
                 "missing error", "spurious error", "untyped error")


# ---- the mismatches left as they are -----------------------------------------------------
# (kind, steps, phrase of the detail, why). Error paths only (a missing, spurious or
# untyped error): a silent difference (value, dtype, shape, strides, requires_grad, grad)
# is fixed, or the generator stops comparing it with a reason at the place it does.
# `steps`: the op names (Mismatch.step) it applies to, None for any. The long profile
# (`python tests/fuzzing --programs 100000`) counts these apart from the findings.
ERROR_KINDS = ("missing error", "spurious error", "untyped error")
# The linalg ops (and norms) whose complex inputs TensorPlay refuses (KNOWN below).
_COMPLEX_REFUSING_LINALG = (
    "linalg_cond", "linalg_eigh", "linalg_eigvalsh", "linalg_lu", "linalg_lu_factor",
    "linalg_lu_factor_ex", "linalg_cholesky", "linalg_cholesky_ex", "cholesky",
    "linalg_matrix_rank", "lu_unpack", "linalg_solve_triangular", "linalg_inv", "linalg_det",
    "linalg_slogdet", "linalg_svd", "linalg_svdvals", "linalg_qr", "linalg_eig",
    "linalg_eigvals", "linalg_pinv", "linalg_matrix_norm", "linalg_norm", "linalg_solve",
    "linalg_lstsq", "linalg_inv_ex", "linalg_ldl_factor", "linalg_ldl_factor_ex",
    "linalg_householder_product", "logdet", "det", "inverse", "pinverse", "cholesky_inverse",
    "cholesky_solve", "triangular_solve", "lu_solve", "norm", "nuclear_norm")

KNOWN = [
    ("spurious error", ("upsample_bilinear2d", "upsample_bicubic2d", "interpolate",
                        "im2col", "col2im"),
     "floating point",
     "uint8 images through bilinear and bicubic resizing (PyTorch's CPU kernels have their "
     "own fixed-point arithmetic for them), bool columns through im2col/col2im: "
     "TensorPlay's kernels of these are floating point only (nearest resizing takes uint8)"),
    ("spurious error", ("ctc_loss",), "outside the",
     "a target label outside the classes (a float target's inf or NaN, cast to int64 as "
     "PyTorch casts it): PyTorch's kernel reads past log_probs (undefined values); "
     "TensorPlay refuses it"),
    ("spurious error", None, "tensor of indices, but got",
     "an empty index of a float dtype: PyTorch's gather/scatter family returns early on "
     "an empty index before its dtype check; TensorPlay checks the dtype first"),
    ("spurious error", ("grid_sampler", "grid_sampler_2d", "grid_sampler_3d"),
     "to have the dtype of",
     "an empty grid of another dtype: PyTorch returns early before its dtype check"),
    ("missing error", ("backward",), "modified by an inplace operation",
     "PyTorch's backward saves an output its formula reads (slogdet's sign, an output "
     "changed under no_grad) and checks its version; TensorPlay's formula does not read it "
     "(its gradient is right), so there is nothing stale to refuse"),
    ("missing error", ("backward",), "input tensors must have the same dtype",
     "a PyTorch bug: addr's backward of mixed-dtype operands calls addmv on them unpromoted "
     "and raises; TensorPlay's backward promotes"),
    ("missing error", ("backward",), "with a bool tensor is not supported",
     "a bool operand of a promoting op (logaddexp(bool, float)): PyTorch's backward formula "
     "subtracts it unpromoted and raises; TensorPlay's promotes first"),
    ("missing error", ("backward",), "can't be cast to the desired output type",
     "a PyTorch bug: addcdiv(self, tensor1, tensor2) with a bool or integer tensor2, "
     "tensor1 requiring grad: PyTorch's formula `grad * (value / tensor2)` is ATen's "
     "Scalar / Tensor, empty_like(tensor2).fill_(value).div_(tensor2), a true division "
     "written in place into tensor2's dtype, which raises; TensorPlay's backward divides "
     "promoted (the gradient of the forward PyTorch computes)"),
    ("missing error", ("backward",), "PixelShuffleBackward0 returned an invalid gradient",
     "PyTorch's pixel_unshuffle bug on empty inputs (see _NO_EMPTY_CASE) reached through "
     "pixel_shuffle's backward"),
    ("missing error", ("backward",), "A must be batches of square matrices",
     "cholesky of an empty non-square matrix (3 x 0): both forwards return an empty "
     "factor, PyTorch's backward then refuses the shape; TensorPlay's returns the empty "
     "gradient (open: TensorPlay's forward could refuse first)"),
    ("missing error", None, "refer to a single memory location",
     "an in-place write into a complex tensor of its own .imag or .real view (a 0-dim "
     "complex128 times its imag): PyTorch refuses the overlap; TensorPlay does not detect "
     "overlap between a complex tensor and its real views (open)"),
    ("missing error", ("backward",), "input_is_complex == grad_is_complex",
     "a real input summed to a complex dtype (sum(x, dtype=complex128)): PyTorch's sum "
     "backward hands the complex gradient to the real input and its engine refuses it; "
     "TensorPlay's takes the real part, as PyTorch's other real-to-complex formulas do "
     "(handle_r_to_c)"),
    ("missing error", ("backward",), "derivative for aten::",
     "PyTorch has no derivative for the op (batch_norm_update_stats); TensorPlay's "
     "composite is differentiable"),
    ("spurious error", None, "only the real views of a complex",
     "an in-place write into a complex view of a real tensor (view_as_complex) under "
     "autograd: of a leaf that requires grad (under no_grad, then a backward), or with an "
     "operand that requires grad (seed 5005241). TensorPlay's write through a view rebuilds "
     "the base's history by slicing it (CopySlices), which cannot express a view of "
     "another dtype, so it refuses with a typed error saying to clone the view; PyTorch "
     "replays the view (open)"),
    ("spurious error", ("convolution", "conv1d", "conv2d", "conv3d", "conv_tbc"),
     "argument 'bias'",
     "a bias of another dtype: PyTorch's native CPU paths add it cast (float64, float16, "
     "small float32 convolutions), its oneDNN path refuses it (bfloat16; float32 with "
     "groups > 1, a batch > 1, a kernel over 3x3 or a large input: a choice by sizes, "
     "thread count and CPU features), as does its 3-D transposed path; TensorPlay always "
     "refuses (open)"),
    ("spurious error", ("cosine_embedding_loss",), "must hold 1 or -1",
     "a target other than 1 or -1: PyTorch computes with it unchecked; TensorPlay refuses"),
    ("spurious error", ("lerp",), "not implemented for int",
     "an integer weight tensor in lerp_ into a float tensor: PyTorch's in-place kernel "
     "casts it; TensorPlay refuses (open)"),
    ("spurious error", ("huber_loss", "lerp", "binary_cross_entropy"), "bool",
     "a bool operand: PyTorch promotes it; TensorPlay refuses (open)"),
    ("spurious error", ("istft", "stft"), "floating point",
     "a bool or integer window: PyTorch casts it; TensorPlay refuses (open)"),
    ("spurious error", ("max_unpool2d", "max_unpool3d"), "non-empty",
     "an unbatched input with no channels: PyTorch returns an empty result; TensorPlay "
     "refuses it (open)"),
    ("missing error", ("embedding_bag",), "index_size",
     "offsets past the end of the indices with an empty weight: PyTorch's kernel checks "
     "them as it reads; TensorPlay reads nothing from an empty weight (open)"),
    ("missing error", ("batch_norm_update_stats",), "mixed dtype",
     "running statistics of another float dtype: PyTorch's kernel refuses them; TensorPlay "
     "updates them in their own dtype"),
    ("missing error", ("instance_norm",), "expected scalar type",
     "a running_var of another dtype than the input: PyTorch's kernel refuses it (and takes "
     "a running_mean of any dtype, complex or bool too); TensorPlay computes both running "
     "statistics in the parameters' dtype (composite/normalization.py's instance_norm)"),
    ("missing error", ("batch_norm_update_stats",), "expected scalar type",
     "complex running statistics: PyTorch's kernel refuses them by their scalar type; "
     "TensorPlay updates them"),
    ("missing error", ("resize_", "resize_as_"), "not resizable",
     "growing an expanded tensor: PyTorch's twin (tests/opinfo's to_torch of a stride-0 "
     "tensor) has a storage PyTorch will not resize; TensorPlay grows it (open: not "
     "investigated which side the contract is on)"),
    ("missing error", None, "does not support automatic differentiation for outputs with "
     "complex dtype",
     "PyTorch refuses a complex output that requires grad from an op outside its "
     "GRADIENT_IMPLEMENTED_FOR_COMPLEX list (nan_to_num); TensorPlay differentiates it "
     "(open: no such list here)"),
    ("spurious error", ("backward",), "LongTensor []] is at version",
     "flash attention's philox seed or offset written in place, then a backward: "
     "TensorPlay saves them for the backward (which draws the dropout mask again), as "
     "PyTorch's cuda kernel does; the twin here is the math reference "
     "(tests/opinfo/db_attention.py), which saves what PyTorch's CPU kernel saves "
     "(query, key, value, output, logsumexp) and no rng state"),
    ("missing error", ("backward",), "input_is_complex == grad_is_complex",
     "a real input of an op with a complex result whose PyTorch formula has no "
     "handle_r_to_c (where(cond, complex, real)): PyTorch's engine refuses the complex "
     "gradient it then returns for the real input; TensorPlay's engine takes its real "
     "part, the gradient PyTorch's other formulas give"),
    ("spurious error", ("norm", "linalg_norm", "linalg_matrix_norm", "nuclear_norm",
                        "linalg_svdvals", "linalg_svd", "svd", "linalg_pinv", "pinverse",
                        "linalg_matrix_rank", "linalg_cond"),
     "expected a floating point tensor as input",
     "a complex matrix through the SVD: TensorPlay's SVD family takes real matrices only "
     "(open: NumPy's gesdd takes complex ones; their backward is not written)"),
    ("spurious error", _COMPLEX_REFUSING_LINALG, "but got complex",
     "complex matrices: TensorPlay's decompositions (SVD, eigh, QR, LU, Cholesky) and what "
     "is built on them take float32/float64 only, so a complex input to a norm or a "
     "solve whose sample list offers it is refused with a typed error (open, large: "
     "complex LAPACK kernels and the complex backward formulas)"),
    ("spurious error", ("backward",), "The solver failed because the input matrix is singular",
     "the backward of linalg_solve_ex (or linalg_inv_ex) of an exactly singular matrix, "
     "whose gradient is undefined (see \"results that are not unique\"): PyTorch's "
     "backward reuses the forward's LU factors and returns inf/NaN unchecked; "
     "TensorPlay's linalg_solve_backward solves again with A and refuses the singular "
     "matrix"),
    ("spurious error", ("binary_cross_entropy_with_logits",), "complex target",
     "a complex target: PyTorch computes a complex loss (without a gradient); TensorPlay "
     "refuses it with a typed error"),
    ("missing error", ("jvp:huber_loss",), "Found dtype",
     "a PyTorch bug: huber_loss of mixed float dtypes (float32 self, float16 or bfloat16 "
     "target) in forward mode: PyTorch's tangent formula calls huber_loss_backward(self_t, "
     "self_p, target_p) on the unpromoted operands, whose kernel refuses the mixed dtypes; "
     "TensorPlay's tangent promotes (it equals PyTorch's with the target cast to float32)"),
    ("spurious error", ("batch_norm", "native_batch_norm", "_native_batch_norm_legit",
                        "_native_batch_norm_legit_no_training"), "must have the input's dtype",
     "running statistics of another dtype (a bool running_var) in evaluation: PyTorch's CPU "
     "kernel checks their dtype on contiguous inputs only (its channels-last and strided "
     "paths read them cast); TensorPlay refuses them on every layout (open)"),
    ("missing error", ("lstm", "gru", "rnn_tanh", "rnn_relu"),
     "could not create a primitive descriptor",
     "PyTorch's oneDNN RNN path refuses a cell state of another dtype with an internal "
     "error. On a float32 input it always runs (seed 2005579: a float16 c0), and "
     "TensorPlay refuses that too (DTypeError); on a bfloat16 one it runs where the CPU "
     "has AVX512 or ARM bf16 (mkldnn_bf16_device_check), elsewhere PyTorch's addmm steps "
     "compute the cell state promoted, as TensorPlay does"),
    ("missing error", ("lstm", "gru", "rnn_tanh", "rnn_relu"),
     "get_mkldnn_dtype: unsupported data type",
     "the same oneDNN refusal for a bool, integer or float64 cell state (seed 4012415 on "
     "float32, which TensorPlay refuses too): on a bfloat16 input a choice by CPU features"),
    ("missing error", ("jvp:pow",), "with a bool tensor is not supported",
     "a PyTorch bug: pow(x, bool exponent) in forward mode: PyTorch's tangent formula "
     "computes exponent - 1 on the bool exponent and raises; TensorPlay's promotes it "
     "(the tangent is x's tangent times exponent * x ** (exponent - 1), as for an integer "
     "exponent)"),
    ("missing error", ("backward",), "on a bool tensor is not supported",
     "a PyTorch bug: atan2 of a bool self and a float other: PyTorch's backward formula "
     "negates the bool self (-self / (self^2 + other^2)) and raises; TensorPlay's "
     "promotes it first"),
    ("missing error", ("backward",), "value cannot be converted to type ",
     "a PyTorch bug: addcdiv with a complex value and a real tensor2: PyTorch's backward "
     "converts the complex value to tensor2's real dtype (double, int64_t) for a "
     "gradient and raises (seeds 4066399 and the like); TensorPlay's computes it in the complex result's dtype and takes the real "
     "part (handle_r_to_c), as PyTorch's other real-to-complex formulas do"),
    ("missing error", ("backward",), "index_fill_(): Expected dtype int64 for index",
     "a PyTorch bug: index_reduce with an int32 index (which its forward takes) and "
     "reduce='amin'/'amax': its backward masks the gradient with index_fill_, which "
     "refuses that index (seed 5069582); TensorPlay's backward takes the forward's index"),
    ("missing error", None, "This view is the output of a function that returns multiple views",
     "an in-place write into an output of a multi-output view function (unbind, under "
     "where(cond)) made in no_grad mode, later with grad mode on: PyTorch refuses it; "
     "TensorPlay's views do not record that they came from a multi-output function "
     "(open)"),
    ("spurious error", ("logaddexp",), "must have a floating point common dtype",
     "a complex operand (seeds 2008399, 2053926): PyTorch's logaddexp takes complex "
     "numbers; TensorPlay's kernels and derivative are real only and refuse them with a "
     "typed error (open)"),
    ("missing error", ("jvp:logcumsumexp",), "Expected reduction dim",
     "a PyTorch bug: logcumsumexp's tangent of an input whose scan dim is empty (seed "
     "3026285): PyTorch's formula takes a max over that dim first and raises; the output "
     "is empty, and so is TensorPlay's tangent"),
]


def _known_reason(mismatch):
    for kind, steps, phrase, reason in KNOWN:
        if (mismatch.kind == kind and (steps is None or mismatch.step in steps)
                and phrase in mismatch.detail):
            return reason
    return None


@dataclass
class Value:
    tp: object            # the TensorPlay tensor
    th: object            # the PyTorch tensor made by the same steps
    name: str             # how the listing calls it: v0, v1, ...
    strides: bool         # compare strides (views, clone): PyTorch documents them
    depth: int = 0        # float ops since its leaves: rounding differences add up
    # The least precise float dtype it was computed from (a float32 result of a bfloat16
    # input, a float32 leaf whose gradient comes back through a bfloat16 copy): it carries
    # that dtype's rounding, so it is compared with that dtype's tolerance (_looser).
    precision: object = None


@dataclass
class Mismatch:
    kind: str             # one of FAILING_KINDS
    detail: str
    listing: str          # the program up to the step that went wrong
    seed: int
    step: str = ""        # the last step's op name, or view / inplace / index / backward

    @property
    def known(self):
        """Why this kind of mismatch is left as it is (KNOWN), or None: a finding."""
        return _known_reason(self)

    def __str__(self):
        return (f"[{self.kind}] {self.detail}\n  program (seed {self.seed}):\n"
                + "\n".join("    " + line for line in self.listing.splitlines()))


class _Stop(Exception):
    """The program cannot go on comparing (PyTorch lacks a kernel TensorPlay has, and the
    step may have written into a live value): it ends without a finding."""


class _Found(Exception):
    def __init__(self, kind, detail):
        super().__init__(detail)
        self.kind, self.detail = kind, detail


def _attempt(fn):
    """(result, error): run `fn`, keeping what it raised instead of raising it."""
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001 - every error is compared with PyTorch's
        return None, e


def _torch_unsupported(err):
    """PyTorch refuses for want of a kernel, not because the call is wrong: TensorPlay
    supporting the dtype is not a missing error. So is its oneMKL build refusing a valid
    transform ('MKL FFT error ... Inconsistent configuration parameters': an empty batch,
    or an output length its descriptor cannot take; PyTorch's pocketfft builds compute
    them, as TensorPlay does)."""
    text = str(err)
    return ("not implemented for" in text or "\"Half\"" in text or "'Half'" in text
            or "MKL FFT error" in text)


class Program:
    """One random program; `run()` returns the first Mismatch, or None."""

    def __init__(self, seed, max_steps=8, shadow=False):
        self.seed = seed
        # A float64 shadow of the program (_float64_gradients): the same steps, PyTorch's
        # twins of float tensors widened to float64, nothing compared.
        self.shadow = shadow
        self.backward_done = False
        self._wide_grads = None
        self.rng = np.random.default_rng(seed)
        self.max_steps = max_steps
        self.pool: list[Value] = []
        self.leaves: list[Value] = []      # tensors that require grad and have no history
        self.lines: list[str] = []
        self.steps_run = 0
        self.counts = {"op": 0, "view": 0, "inplace": 0, "index": 0, "raised": 0,
                       "jvp": 0, "distribution": 0, "compiled": 0, "oracle": 0}
        self.step = ""
        # The checks beyond the side-by-side run (tangents.py, compiled.py,
        # distributions.py) draw from a generator of their own, so that adding one keeps
        # every seed's program as it was.
        self.check_rng = np.random.default_rng([seed, 1])
        self.tape = Tape()      # the steps, replayed eagerly and compiled (compiled.py)
        # PyTorch results whose gradients are not unique ("results that are not unique"):
        # the leaves they reach get no gradient comparison (_backward).
        self.undefined_grads: list = []
        self.derivatives_undefined = False      # the last op step's (tangents not compared)

    # ---- running ------------------------------------------------------------------------
    def run(self):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            # The ops that draw internally (svd_lowrank's random projection) draw from
            # each library's default generator: seeded here, so that a program is a pure
            # function of its seed and not of the programs run before it in the process.
            tp.manual_seed(self.seed)
            torch.manual_seed(self.seed)
            try:
                n = int(self.rng.integers(1, self.max_steps + 1))
                for _ in range(n):
                    self._step()
                    self.steps_run += 1
                    self._check_pool()
                self.step = "backward"
                self._backward()
                self.backward_done = True
                if self.shadow:
                    return None
                if self.check_rng.random() < COMPILE_SHARE:
                    check_compiled(self)
                if self.check_rng.random() < DISTRIBUTION_SHARE:
                    check_distribution(self)
            except _Stop:
                return None
            except _Found as found:
                return Mismatch(found.kind, found.detail, "\n".join(self.lines), self.seed,
                                self.step)
        return None

    def _step(self):
        kinds = ["op", "op", "op"]
        if self.pool:
            kinds += ["view", "inplace", "index"]
        kind = kinds[int(self.rng.integers(len(kinds)))]
        self.counts[kind] += 1
        self.step = kind        # (an op step names its op)
        getattr(self, f"_{kind}_step")()

    def _both(self, text, tp_fn, th_fn):
        """Run a step in both libraries; (tp result, torch result) when both ran, None when
        both raised; a mismatch when only one raised or TensorPlay's error is untyped."""
        th_out, th_err = _attempt(th_fn)
        tp_out, tp_err = _attempt(tp_fn)
        if th_err is not None and tp_err is not None:
            self.counts["raised"] += 1
            self.lines.append(f"{text}   # raises in both: {type(tp_err).__name__}")
            if not isinstance(tp_err, tp.errors.TensorPlayError):
                raise _Found("untyped error", f"{text}: TensorPlay raised "
                             f"{type(tp_err).__name__}: {tp_err} (PyTorch: {th_err})")
            return None
        self.lines.append(text)
        if th_err is not None:
            if _torch_unsupported(th_err):
                raise _Stop()
            raise _Found("missing error", f"{text}: PyTorch raises "
                         f"{type(th_err).__name__}: {th_err}; TensorPlay does not")
        if tp_err is not None:
            raise _Found("spurious error", f"{text}: TensorPlay raises "
                         f"{type(tp_err).__name__}: {tp_err}; PyTorch does not")
        return tp_out, th_out

    def _add(self, tp_value, th_value, strides, depth, precision=None, recompute=None):
        v = Value(tp_value, th_value, f"v{len(self.pool)}", strides, depth,
                  _looser(tp_value.dtype, precision))
        self.pool.append(v)
        try:
            self._check(v, f"{v.name} (new)")
        except _Found as found:
            # (a shape too: the size of nonzero or where(cond) counts values that an
            # earlier op's rounding leaves at 0 in one library, 3e-18 in the other)
            if found.kind not in ("value", "shape") or recompute is None:
                raise
            self._resync(v, recompute, found)
        return v

    def _resync(self, v, recompute, found, written=False):
        """An op's new result differs from PyTorch's. Its inputs may already differ within
        tolerance (earlier ops round in another order), and an ill-conditioned op (tan
        near pi/2, remainder near a multiple, sinh of a large value) amplifies that past
        the tolerance although the op is right. So PyTorch's op is re-run on TensorPlay's
        own inputs (`recompute`): a result that differs from THAT is the op's fault and
        stays a finding (a wrong kernel is still caught: tests/test_fuzz.py checks it);
        one that matches it is the inputs' rounding amplified. The twin then becomes that
        recomputed result, so that the checks of all live values after each step, and the
        ops that read the twin later, start from the same values instead of flagging the
        same amplification again.

        A new tensor's twin is replaced (with the re-run's autograd history). An in-place
        write (`written`: the target of an in-place op or write, _check_written) re-runs
        PyTorch's in-place op on copies of TensorPlay's values from before the step; its
        twin is a view that other live values alias, so the recomputed values are written
        into the twin's memory instead (through `.data`: autograd does not see that write,
        so the history of the step and the versions it saved stay as they were, and the
        aliases read the new values as TensorPlay's aliases do). Views keep the strict
        rule (`recompute` is None): they compute nothing.

        A float32 (float16, bfloat16) result that differs from the re-run too goes to the
        float64 oracle (_compare), with `recompute(wide=True)`: PyTorch's op on
        TensorPlay's inputs widened to float64. Where it takes TensorPlay's result, the
        twin takes TensorPlay's values (with the re-run's history)."""
        try:
            fresh = recompute()
        except Exception:  # noqa: BLE001 - PyTorch cannot re-run it: the finding stands
            raise found from None
        if not isinstance(fresh, torch.Tensor):
            raise found
        if written and tuple(fresh.shape) != tuple(v.th.shape):
            raise found
        if not written and fresh.requires_grad != v.th.requires_grad:
            raise found
        where = v.name if written else f"{v.name} (new)"
        try:
            decided = self._compare(v.tp, fresh, where, "value", v.depth, strides=False,
                                    precision=v.precision, wide=lambda: _wide_result(recompute))
        except _Found:
            raise found from None
        if decided:
            fresh = _with_values_of(fresh, v.tp)
        if written:
            v.th.data.copy_(fresh.detach())
        else:
            v.th = fresh

    def _check_written(self, v, redo):
        """After an in-place write into live value `v`: compare it first, with _resync's
        rule (`redo`: PyTorch's write on TensorPlay's values from before the step)."""
        try:
            self._check(v, v.name)
        except _Found as found:
            if found.kind != "value":
                raise
            self._resync(v, redo, found, written=True)

    def _sync_after_a_raising_write(self, v):
        """After an in-place write into live value `v` that raised in both libraries: v's
        twin takes TensorPlay's values. Where the error is found inside the kernel, PyTorch
        has already written the elements it visited before it (an integer remainder_,
        fmod_, div_ with a rounding mode or floor_divide_ by a tensor holding a zero
        writes every element before the first zero divisor, in its iteration order: memory
        order, and in chunks across threads for a large tensor) while TensorPlay checks
        first and leaves v as it was. Which elements a failed write leaves changed is no
        contract (seed 5053257: v0.remainder_(v1) of int32 with a zero in v1); the other
        live values are compared as before, and so is v at the next steps. The values go
        into the twin's memory (through `.data`, as _resync's), so its aliases read them
        too, as TensorPlay's do. Only an integer target: PyTorch finds no other error inside
        a kernel (an integer division by zero), and a float twin keeps its own rounding,
        which its saved tensors share (seeds 30356, 49252: matrix_norm's output, synced to
        TensorPlay's last ulps after a write that raised a ShapeError, gave PyTorch a NaN
        gradient)."""
        if v.th.dtype.is_floating_point or v.th.dtype.is_complex:
            return
        values = to_torch(v.tp, requires_grad=False)
        if values.dtype != v.th.dtype:
            values = values.to(v.th.dtype)
        if not _overlaps_itself(v.th):
            v.th.data.copy_(values)
        elif not torch.equal(values, v.th.detach()):
            raise _Stop()       # (its elements share memory: one copy cannot set them all)

    def _check_written_arguments(self, op, sample, twins, before):
        """After an op that writes into arguments it does not return (batch norm's running
        statistics): each argument is compared with _resync's rule for an in-place target
        (`redo`: PyTorch's op on TensorPlay's values from before the step, giving that
        argument as the op left it), so an ill-conditioned update (the mean of 1e30s in
        float32) goes to the float64 oracle like the op's results."""
        for t in {id(t): t for t in sample.tensors()}.values():
            def redo(wide=False, t=t):
                values = before(wide)
                s = sample.map_tensors(lambda x: values[id(x)])
                with torch.no_grad():
                    op.ref(s.input, *to_torch(s.args), **to_torch(s.kwargs))
                return values[id(t)]
            self._check_written(twins[id(t)], redo)

    # ---- the steps ----------------------------------------------------------------------
    def _op_step(self):
        rng = self.rng
        op = OPS[int(rng.integers(len(OPS)))]
        self.step = op.name
        floats = [d for d in op.dtypes if d in (tp.float32, tp.float64)]
        complexes = [d for d in op.dtypes if d.is_complex]
        # float32/float64 half the time, a complex dtype a quarter of the time where the
        # op takes one (10% left about 5% of the op steps complex; this gives about 9%),
        # else any of the op's dtypes.
        draw = rng.random()
        if floats and draw < 0.5:
            dtype = floats[int(rng.integers(len(floats)))]
        elif complexes and draw < 0.75:
            dtype = complexes[int(rng.integers(len(complexes)))]
        else:
            dtypes = [d for d in op.dtypes if op.name not in _HALF_INTERMEDIATES
                      or d not in (tp.float16, tp.bfloat16)]
            dtype = dtypes[int(rng.integers(len(dtypes)))]
        requires_grad = (op.supports_autograd and dtype in op.grad_dtypes
                         and rng.random() < 0.5) and op.name not in _NO_BACKWARD
        samples = op.sample_inputs("cpu", dtype, requires_grad)
        if not samples:
            return
        sample = samples[int(rng.integers(len(samples)))]

        # The torch twin of each tensor: a live value's own twin, or a fresh copy.
        twins = {}
        inp = sample.input
        # Public ops take any dtype they support; internal ones (`_softmax`, the
        # `*_backward` ops) have dtype contracts between their arguments.
        internal = op.name.startswith("_") or "backward" in op.name
        notes = {}
        edge = None if internal or rng.random() > 0.25 else self._edge_case(op, sample, notes)
        if edge is not None:
            sample = edge
            inp = sample.input
        finite_only = (op.name in _FINITE_ONLY or op.name in _NAN_UNORDERED
                       or op.name in _CUDA_ONLY_IN_PYTORCH
                       or op.name in _NAN_GRAD_BY_LOOP or _zero_padded_conv(op, sample)
                       or _calls_lapack(op, sample) or op.name in _FFT)
        if (isinstance(inp, tp.Tensor) and op.name not in _SORTED_ARGS
                and op.name not in _STORAGE_ADDRESSING and edge is None):
            fits = [v for v in self.pool if tuple(v.tp.shape) == tuple(inp.shape)
                    and (v.tp.dtype == inp.dtype if internal or op.name in _CUDA_ONLY_IN_PYTORCH
                         else v.tp.dtype in op.dtypes)
                    and not ((finite_only or op.name in _FINITE_INPUT)
                             and not _all_finite(v.th))
                    and not (op.name in _NO_ZERO_STRIDE and 0 in v.th.stride())
                    and not (op.name in _NO_BACKWARD and v.th.requires_grad)
                    and not (op.name in _ROWWISE_MOMENTS and not _squares_fit(v.tp))]
            if fits and rng.random() < 0.6:
                chosen = fits[int(rng.integers(len(fits)))]
                sample.input = chosen.tp
                twins[id(chosen.tp)] = chosen
        # Poison only what may hold any value: sorted boundaries and the saved
        # statistics a `*_backward` op receives are contracts, not data.
        poison = op.name not in _SORTED_ARGS and not internal and not finite_only
        for t in sample.tensors():
            if id(t) not in twins:
                finite = t is sample.input and op.name in _FINITE_INPUT
                note = notes.get(id(t), "")
                if poison and not finite and "huge" not in note:
                    note += self._poison(t)
                twins[id(t)] = self._leaf(t, note)

        def th(value):
            if isinstance(value, tp.Tensor):
                return twins[id(value)].th
            if isinstance(value, (list, tuple)):
                return type(value)(th(v) for v in value)
            if isinstance(value, dict):
                return {k: th(v) for k, v in value.items()}
            return to_torch(value)

        inplace = op.inplace is not None and rng.random() < 0.3
        text = self._call_text(op, sample, twins, inplace)
        if inplace or op.name in _WRITES_BEFORE_CHECKS:
            before = _values_before(sample.tensors())
        if inplace:
            ran = self._both(text, lambda: op.call_inplace(sample),
                             lambda: getattr(th(sample.input), op.inplace)(
                                 *th(sample.args), **th(sample.kwargs)))
            if ran is not None and _overlaps_itself(th(sample.input)):
                raise _Stop()   # undefined: see _overlaps_itself
        else:
            ran = self._both(text, lambda: op.call(sample),
                             lambda: op.ref(th(sample.input), *th(sample.args),
                                            **th(sample.kwargs)))
        if ran is None:
            if op.name in _WRITES_BEFORE_CHECKS:
                raise _Stop()     # its arguments may hold PyTorch's partial writes
            if inplace:
                self._sync_after_a_raising_write(twins[id(sample.input)])
            return
        depth = 1 + max((twins[id(t)].depth for t in sample.tensors()), default=0)
        precision = _looser(*(twins[id(t)].precision for t in sample.tensors()))
        if op.name in _FLOAT32_ACCURATE:
            precision = _looser(precision, tp.float32)
        if (op.name in _CONVERGED_TO_SQRT_EPS or op.name in _AMPLIFIES_ROUNDING
                or op.name in _CANCELLING_SUMS):
            double = precision in (tp.float64, tp.complex128)
            precision = _looser(precision, tp.float32 if double else tp.float16)
        if inplace:
            self._written(twins[id(sample.input)], depth, precision)

            def redo(wide=False):
                """PyTorch's in-place op on TensorPlay's values from before the step."""
                values = before(wide)
                s = sample.map_tensors(lambda t: values[id(t)])
                with torch.no_grad():
                    return getattr(s.input, op.inplace)(*to_torch(s.args),
                                                        **to_torch(s.kwargs))
            self._check_written(twins[id(sample.input)], redo)

        def on_tp_inputs(wide=False):
            """PyTorch's op on TensorPlay's own inputs (see _resync). The inputs keep their
            twins' autograd history, so this op's backward runs at those inputs too;
            `wide`: widened to float64, without history (the float64 oracle)."""
            def synced(value):
                if isinstance(value, tp.Tensor):
                    if wide:
                        return _widened(to_torch(value, requires_grad=False))
                    return _with_values_of(twins[id(value)].th, value)
                if isinstance(value, (list, tuple)):
                    return type(value)(synced(v) for v in value)
                if isinstance(value, dict):
                    return {k: synced(v) for k, v in value.items()}
                return to_torch(value)
            return op.ref(synced(sample.input), *synced(sample.args), **synced(sample.kwargs))

        # An in-place op's output is the written value itself: of the rules, only those
        # that leave its values compared apply (ldexp's: only the gradients are undefined;
        # seed 10318037, ldexp_ of a uint8 exponent of 200)
        undefined = _undefined_parts(op, sample) \
            if not inplace or op.name in _GRADIENTS_ONLY_UNDEFINED else None
        added = self._take_outputs(op, sample, *ran, depth, strides=op.is_view,
                                   grad_flag="backward" not in op.name, precision=precision,
                                   recompute=None if inplace or op.is_view else on_tp_inputs,
                                   undefined=undefined)
        self._record_op(op, sample, twins, inplace, added, detach="backward" in op.name)
        if not inplace and op.name in _WRITES_BEFORE_CHECKS:
            self._check_written_arguments(op, sample, twins, before)
        if (not inplace and not internal and not op.mutates_input
                and duals_of(sample) and not pytorch_tangent_is_wrong(op, sample)
                and all(_all_finite(twins[id(t)].th) for t in duals_of(sample))
                and not (op.name in _TIE_INDEX_OPS and _has_ties(sample.input))
                and self.check_rng.random() < TANGENT_SHARE
                and not self.derivatives_undefined     # (after the draw: see check_rng)
                and not self.shadow):
            self.counts["jvp"] += 1
            check_tangents(self, op, sample, twins, depth, precision)

    def _record_op(self, op, sample, twins, inplace, added, detach):
        """The op step on the tape (compiled.py): the same call on the replay's live
        values, its outputs `added` (their positions) appended as the pool did."""
        where = {id(t): int(twins[id(t)].name[1:]) for t in sample.tensors()}

        def replay(env):
            s = sample.map_tensors(lambda t: env[where[id(t)]])
            out = op.call_inplace(s) if inplace else op.call(s)
            outs = list(out) if isinstance(out, (tuple, list)) else [out]
            env.extend(outs[i].detach() if detach else outs[i] for i in added)
        self.tape.step(replay)

    def _edge_case(self, op, sample, notes):
        """The sample turned into one of _EDGE_CASES that applies to it (a new
        SampleInput), or None when none does. `notes` gets what the listing should say
        about a changed tensor (by id)."""
        rng = self.rng
        inp = sample.input
        if not isinstance(inp, tp.Tensor) or op.name in _CUDA_ONLY_IN_PYTORCH:
            return None
        others = [t for t in sample.tensors() if t is not inp]
        floating = inp.dtype.is_floating_point
        cases = []
        if inp.dim() >= 1 and inp.numel() > 0 and op.name not in _NO_EMPTY_CASE:
            cases.append("empty")
        # One edge case at a time: a sample that is empty already gets no odd dtype (PyTorch
        # returns early on empty inputs before its dtype checks, all over: that one quirk
        # would drown the rest).
        dtypes = op.name not in _NO_DTYPE_CASES and all(t.numel() for t in sample.tensors())
        if dtypes and floating and all(d.is_floating_point or d.is_complex for d in op.dtypes):
            cases.append("integer")
        if dtypes and others:
            cases.append("mixed")
        if floating and op.name in _NORMALISING:
            cases.append("huge")
        if not cases:
            return None
        case = cases[int(rng.integers(len(cases)))]
        if case == "empty":
            d = 0 if rng.random() < 0.5 else int(rng.integers(inp.dim()))
            n = inp.shape[d]

            def change(t):
                shares = (t.dim() >= 1 and t.shape[0] == n) if d == 0 else \
                    tuple(t.shape) == tuple(inp.shape)
                # (a fresh tensor: PyTorch's twin has a storage of 0 bytes, and so must
                # it, for as_strided's bounds check)
                return _leaf_like(t, t.narrow(d, 0, 0).clone()) if shares else t
        elif case == "integer":
            dtype = _INTEGER_DTYPES[int(rng.integers(len(_INTEGER_DTYPES)))]

            def change(t):
                return _leaf_like(t, t.to(dtype)) if t is inp else t
        elif case == "mixed":
            target = others[int(rng.integers(len(others)))]
            choices = [d for d in _OTHER_DTYPES if d != target.dtype]
            dtype = choices[int(rng.integers(len(choices)))]

            def change(t):
                if t is not target:
                    return t
                cast = t.to(dtype)
                # A sorted sequence (bucketize's boundaries) may cast out of order (to bool
                # -5 and 0 become True and False; to uint8 negatives wrap): sorted again,
                # the contract of the op (seed 9400725: unsorted bool boundaries, where
                # PyTorch's binary search and NumPy's searchsorted part ways). Complex
                # numbers have no order: both libraries refuse them there.
                if op.name in _SORTED_ARGS and not dtype.is_complex and \
                        _sorted_along_last(t):
                    cast = cast.sort(-1)[0].contiguous()
                return _leaf_like(t, cast)
        else:
            scale = _huge_scale(op, inp.dtype, rng)
            values = tp_to_numpy(inp).astype(np.float64)
            top = float(np.abs(values).max(initial=0.0))
            values = values / (top if top > 0 else 1.0) * scale
            huge = _leaf_like(inp, tp.tensor(values, dtype=inp.dtype))
            notes[id(huge)] = f" scaled to max |x| = {scale:.3g} (huge)"

            def change(t):
                return huge if t is inp else t
        changed = {}       # a tensor passed twice (`op(x, x)`) is changed once

        def once(t):
            if id(t) not in changed:
                changed[id(t)] = change(t)
            return changed[id(t)]
        return sample.map_tensors(once)

    def _take_outputs(self, op, sample, tp_out, th_out, depth, strides, grad_flag,
                      precision=None, recompute=None, undefined=None):
        tp_outs = list(tp_out) if isinstance(tp_out, (tuple, list)) else [tp_out]
        th_outs = list(th_out) if isinstance(th_out, (tuple, list)) else [th_out]
        where = self.lines[-1]
        if len(tp_outs) != len(th_outs):
            raise _Found("shape", f"{where}: {len(tp_outs)} outputs, PyTorch {len(th_outs)}")
        self.derivatives_undefined = False
        # (see "results that are not unique"; outputs of another dtype or shape are
        # left to the comparison, which reports them)
        if undefined is not None and all(
                isinstance(a, tp.Tensor) and isinstance(b, torch.Tensor)
                and TORCH_DTYPE[a.dtype] == b.dtype and tuple(a.shape) == tuple(b.shape)
                for a, b in zip(tp_outs, th_outs)):
            th_outs, self.derivatives_undefined = undefined(tp_outs, th_outs, where)
            if self.derivatives_undefined:
                self.undefined_grads += [b for b in th_outs
                                         if isinstance(b, torch.Tensor) and b.requires_grad]
        ties = op.name in _TIE_INDEX_OPS and _has_ties(sample.input)
        if ties:
            # which of equal values the op picks is no contract, so neither is where the
            # gradient of its values goes (topk of an expanded tensor, seed 3020825)
            self.derivatives_undefined = True
            self.undefined_grads += [b for b in th_outs
                                     if isinstance(b, torch.Tensor) and b.requires_grad]
        added = []      # the positions of the outputs that became live values
        for i, (a, b) in enumerate(zip(tp_outs, th_outs)):
            if isinstance(b, torch.Tensor):
                if not isinstance(a, tp.Tensor):
                    raise _Found("dtype", f"{where}: got {a!r}, PyTorch a tensor")
                if ties and not b.dtype.is_floating_point:
                    continue
                if any(a is v.tp for v in self.pool):   # in place: self came back
                    continue
                if not grad_flag:
                    # PyTorch's references of the backward ops run its autograd, so
                    # their results require grad; compare values only.
                    b = b.detach()
                    a = a.detach()
                if op.name in _LAYOUT_BY_BACKEND and not _overlaps_itself(a):
                    b = _restrided(b, a.stride())
                fresh = None
                # (a view is fine when it aliases no live value: where(cond)'s index
                # tensors are views of one fresh nonzero() result)
                if recompute is not None and not any(
                        _shares_memory(b, v.th) for v in self.pool):
                    def fresh(wide=False, i=i, b=b, detach=not grad_flag):
                        out = recompute(wide=wide)
                        out = out[i] if isinstance(out, (tuple, list)) else out
                        if b is not th_outs[i]:       # restrided above: the same again
                            out = _restrided(out, b.stride())
                        return out.detach() if detach else out
                added.append(i)
                self._add(a, b, strides, depth, precision, recompute=fresh)
            elif isinstance(b, (bool, int, float)):
                if isinstance(a, tp.Tensor) or not _same_number(a, b):
                    raise _Found("value", f"{where}: {a!r}, PyTorch {b!r}")
        return added

    def _view_step(self):
        v = self._pick()
        choices = [(text, fn) for text, fn, ok in _VIEWS if ok(v.th)]
        text, fn = choices[int(self.rng.integers(len(choices)))]
        ran = self._both(f"v{len(self.pool)} = {text.format(v.name)}",
                         lambda: fn(v.tp), lambda: fn(v.th))
        if ran is not None:
            i = int(v.name[1:])
            self.tape.step(lambda env: env.append(fn(env[i])))
            self._add(*ran, strides=True, depth=v.depth, precision=v.precision)

    def _inplace_step(self):
        v = self._pick()
        other = self._pick()
        choices = [(text, fn) for text, fn, ok in _INPLACE if ok(v.th, other.th)]
        template, fn = choices[int(self.rng.integers(len(choices)))]
        text = template.format(v.name, other.name)
        # A write whose operand shares memory with the written tensor without being the
        # same view of it (`x.add_(chunk_of_x)`, `x *= x[1:]`) is undefined in PyTorch when
        # it cannot prove the overlap (its result depends on the order it visits the
        # elements): PyTorch must raise or nothing is compared; TensorPlay may raise.
        if "{0}[1:]" in template:       # x[1:] overlaps x, unless it is empty
            undefined = v.th.dim() >= 1 and v.th.shape[0] > 1 and v.th.numel() > 0
        else:
            undefined = "{1}" in template and _partial_overlap(v.th, other.th)
        # A write into a tensor whose elements share memory: PyTorch must raise where it
        # does (a stride 0), or both run and nothing more is compared (see _overlaps_itself).
        self_overlap = _overlaps_itself(v.th)
        before = _values_before([v.tp, other.tp])
        # PyTorch makes a view's grad_fn again only when it is read: a view taken before an
        # in-place op made its base require grad, and written before anything read its
        # grad_fn, is refused as "a leaf Variable that requires grad" (seed 10406060: the
        # same write after reading v2.grad_fn runs). Reading it first keeps that laziness
        # out of the comparison; TensorPlay's views have no such state. (The read raises
        # for an output of a multi-view op (split) whose base was written since: the write
        # below then raises that error too, which TensorPlay must match.)
        try:
            v.th.grad_fn  # noqa: B018 - read for its effect
        except RuntimeError:
            pass
        try:
            if v.th.requires_grad and self.rng.random() < 0.5:
                # Under no_grad an in-place write into a leaf that requires grad is allowed:
                # the values change, the graph does not.
                ran = self._both(f"with no_grad: {text}",
                                 lambda: _no_grad(tp, fn, v.tp, other.tp),
                                 lambda: _no_grad(torch, fn, v.th, other.th))
            else:
                ran = self._both(text, lambda: fn(v.tp, other.tp), lambda: fn(v.th, other.th))
        except _Found as found:
            if undefined and found.kind == "spurious error":
                raise _Stop() from None
            raise
        if (undefined or self_overlap) and ran is not None:
            raise _Stop()
        if ran is not None:
            i, j = int(v.name[1:]), int(other.name[1:])
            if "no_grad" in self.lines[-1]:
                self.tape.step(lambda env: _no_grad(tp, fn, env[i], env[j]))
            else:
                self.tape.step(lambda env: fn(env[i], env[j]))
        self._written(v, max(v.depth, other.depth) + 1, other.precision)
        if ran is None:
            self._sync_after_a_raising_write(v)
        if ran is not None:
            def redo(wide=False):
                """The write in PyTorch on TensorPlay's values from before the step."""
                values = before(wide)
                x = values[id(v.tp)]
                _no_grad(torch, fn, x, values[id(other.tp)])
                return x
            self._check_written(v, redo)

    def _written(self, target, depth, precision):
        """After an in-place write into `target`: it, and every value sharing its memory
        (views, detached aliases), now carries the write's rounding (depth, precision)."""
        storage = target.th.untyped_storage().data_ptr()
        for v in self.pool:
            if v is target or v.th.untyped_storage().data_ptr() == storage:
                v.depth = max(v.depth, depth)
                v.precision = _looser(v.precision, precision)

    def _index_step(self):
        v = self._pick()
        index = self._random_index(v.th)
        text = f"v{len(self.pool)} = {v.name}[{_index_text(index)}]"
        ran = self._both(text, lambda: v.tp[_index_to(index, tp)],
                         lambda: v.th[_index_to(index, torch)])
        if ran is not None:
            i = int(v.name[1:])
            self.tape.step(lambda env: env.append(env[i][_index_to(index, tp)]))
            self._add(*ran, strides=False, depth=v.depth, precision=v.precision)

    def _backward(self):
        """Weight every live float or complex value that requires grad, sum, backward in
        both (a complex value through its parts, `view_as_real`: the loss is real)."""
        terms = [v for v in self.pool if v.th.requires_grad
                 and (v.th.dtype.is_floating_point or v.th.dtype.is_complex)
                 and v.th.numel() < 10_000]
        if not terms:
            return
        parts = []
        for v in terms:
            shape, dtype = tuple(v.tp.shape), v.tp.dtype
            if dtype.is_complex:
                shape, dtype = shape + (2,), dtype.to_real()
            w = make_tensor(shape, dtype, rng=self.rng, low=-1, high=1)
            parts.append((v, w, to_torch(w)))

        def real(lib, t):
            if not t.is_complex():
                return t
            # (PyTorch's conj is lazy, and its view_as_real refuses a conjugated tensor)
            return lib.view_as_real(t.resolve_conj() if lib is torch else t)

        undefined = self._reached_by_undefined_grads()
        text = "(" + " + ".join(
            f"({'view_as_real(' + v.name + ')' if v.tp.is_complex() else v.name} * w{i}).sum()"
            for i, (v, _, _) in enumerate(parts)) + ").backward()"
        ran = self._both(
            text, lambda: sum((real(tp, v.tp) * w).sum() for v, w, _ in parts).backward(),
            lambda: sum((real(torch, v.th) * tw).sum() for v, _, tw in parts).backward())
        if ran is None or self.shadow:
            return
        depth = max(v.depth for v in terms) + 2
        precision = _looser(*(v.precision for v in terms))
        for leaf in self.leaves:
            if any(leaf is u for u in undefined):     # (by identity: Value's == compares tensors)
                continue
            g, tg = leaf.tp.grad, leaf.th.grad
            if tg is None:
                if g is not None and bool((g != 0).any()):
                    raise _Found("grad", f"{leaf.name}.grad: PyTorch has none, TensorPlay's "
                                 f"is non-zero")
                continue
            if g is None:
                if bool((tg != 0).any()):
                    raise _Found("grad", f"{leaf.name}.grad is None, PyTorch's is "
                                 f"{tg.tolist()}")
                continue
            self._compare(g, tg, f"{leaf.name}.grad", "grad", depth, strides=False,
                          precision=precision,
                          wide=lambda leaf=leaf: self._float64_gradients().get(leaf.name))

    def _float64_gradients(self):
        """The leaves' gradients of this program's float64 shadow, by name (the float64
        oracle, for a gradient): the same seed run again with PyTorch's twins of float
        tensors widened to float64 (_leaf) and nothing compared. Empty when the shadow
        took another path (a listing of other steps: PyTorch raised in float64 where it
        did not in float32, or an overflow to inf changed which live value an op took)."""
        if self._wide_grads is None:
            shadow = Program(self.seed, self.max_steps, shadow=True)
            with _global_generators_kept():
                shadow.run()
            # (the steps' lines: the indented notes of the checks that ride along differ)
            same = shadow.backward_done and _steps(shadow.lines) == _steps(self.lines)
            self._wide_grads = {v.name: v.th.grad for v in shadow.leaves} if same else {}
        return self._wide_grads

    def _reached_by_undefined_grads(self):
        """The leaves that a result of undefined gradient (self.undefined_grads) reaches
        in PyTorch's graph; all of them when that graph cannot tell."""
        leaves = [v for v in self.leaves if v.th.requires_grad]
        if not self.undefined_grads or not leaves:
            return []
        outs = self.undefined_grads
        try:
            grads = torch.autograd.grad(outs, [v.th for v in leaves],
                                        [torch.ones_like(o) for o in outs],
                                        retain_graph=True, allow_unused=True)
        except Exception:  # noqa: BLE001 - a graph it cannot walk (a stale saved tensor)
            return leaves
        return [v for v, g in zip(leaves, grads) if g is not None]

    # ---- comparing ----------------------------------------------------------------------
    def _check_pool(self):
        for v in self.pool:
            self._check(v, v.name)

    def _check(self, v, where):
        if v.th.requires_grad and not (v.th.dtype.is_floating_point or v.th.dtype.is_complex):
            # NOTE: a PyTorch bug, not a contract: an in-place write of a value that requires
            # grad into an integer or bool tensor (x.index_fill_(0, i, w), x[...] = w) leaves
            # it requiring grad, against PyTorch's own rule that only floating point and
            # complex tensors can (pytorch/pytorch#78332, #78443). TensorPlay keeps the rule;
            # PyTorch's copy is detached so that later steps compare alike.
            v.th = v.th.detach()
        if v.th.dtype == torch.complex32 and v.tp.dtype is tp.complex64:
            # NOTE: TensorPlay has no complex32 (NumPy has no complex half type): where
            # PyTorch promotes float16 with a complex number to complex32, it gives
            # complex64 (README, "Where TensorPlay differs"). The twin is widened, so that
            # later steps compare alike.
            v.th = v.th.to(torch.complex64)
        if self.shadow:
            return
        if v.tp.requires_grad != v.th.requires_grad:
            raise _Found("requires_grad", f"{where}.requires_grad is {v.tp.requires_grad}, "
                         f"PyTorch's is {v.th.requires_grad}")
        self._compare(v.tp, v.th, where, "value", v.depth, v.strides, v.precision)

    def _compare(self, a, b, where, kind, depth, strides, precision=None, wide=None):
        """Raise _Found(kind) where TensorPlay's `a` differs from PyTorch's `b`.

        The float64 oracle: where a float32, float16 or bfloat16 result (or complex64, or
        one computed from those: `precision`) differs past the tolerance, and `wide` gives
        the same result computed in float64 (a function: it is costly, so it runs only
        then; None where it cannot), each differing element is accepted when TensorPlay's
        error against float64 is at most _ORACLE_FACTOR times PyTorch's own plus the
        tolerance. At an ill-conditioned point both libraries' roundings are amplified
        and either may be the less accurate one (PyTorch's float32 ormqr gradient is 1e-4
        off its float64 one); a wrong kernel stays far from float64 and still fails, and
        so does TensorPlay being the less accurate one (that is a kernel to fix). Returns
        whether the oracle decided (counted in the statistics: "oracle")."""
        if self.shadow:
            return False
        if tuple(a.shape) != tuple(b.shape):
            raise _Found("shape", f"{where}: shape {list(a.shape)}, PyTorch {list(b.shape)}")
        if TORCH_DTYPE[a.dtype] != b.dtype:
            raise _Found("dtype", f"{where}: dtype {a.dtype.name}, PyTorch {b.dtype}")
        if strides and a.numel() > 1 and not _same_strides(a, b):
            raise _Found("strides", f"{where}: strides {a.stride()}, PyTorch {b.stride()}")
        x, y = tp_to_numpy(a), torch_to_numpy(b)
        if x.dtype.kind in "fc" or y.dtype.kind in "fc":
            rtol, atol = DEFAULT_TOLERANCES.get(_looser(a.dtype, precision), (1e-7, 1e-7))
            scale = 1 + depth
            if "c" in (x.dtype.kind, y.dtype.kind):
                # complex numbers part by part (an infinite part next to a finite one: the
                # difference of two such numbers is nan, whatever the finite parts)
                x, y = _parts(x), _parts(y)
            x64, y64 = x.astype(np.float64), y.astype(np.float64)
            same = np.isclose(x64, y64, rtol=rtol * scale, atol=atol * scale, equal_nan=True)
            decided = False
            if (not same.all() and wide is not None
                    and _looser(a.dtype, precision) in _NARROW_FLOATS):
                same |= _closer_to_float64(x64, y64, wide(), rtol * scale, atol * scale)
                decided = bool(same.all())
            if not same.all():
                k = tuple(int(i[0]) for i in np.nonzero(~same)) if x.ndim else ()
                raise _Found(kind, f"{where}: {x64[k] if x.ndim else x64} at {list(k)}, "
                             f"PyTorch {y64[k] if y.ndim else y64} ({a.dtype.name})")
            if decided:
                self.counts["oracle"] += 1
            return decided
        elif not np.array_equal(x, y):
            raise _Found(kind, f"{where}: {x.tolist()}, PyTorch {y.tolist()}")
        return False

    # ---- helpers ------------------------------------------------------------------------
    def _pick(self):
        return self.pool[int(self.rng.integers(len(self.pool)))]

    def _leaf(self, t, note=""):
        twin = _widened(_twin(t)) if self.shadow else _twin(t)
        v = Value(t, twin, f"v{len(self.pool)}", strides=True, precision=t.dtype)
        self.pool.append(v)
        self.tape.input(t)
        if t.requires_grad and t.grad_fn is None:
            self.leaves.append(v)
        self.lines.append(f"{v.name} = {describe(t)}"
                          + (" requires_grad" if t.requires_grad else "") + note)
        return v

    def _poison(self, t):
        """Now and then a NaN or an inf in a fresh float input (written before its twin is
        made, so both libraries see it)."""
        if (not t.dtype.is_floating_point or t.numel() == 0 or 0 in t.stride()
                or self.rng.random() > 0.1):
            return ""   # (complex inputs are left finite)
        if self.rng.random() < 0.5:
            # next to where zero padding goes (convolution, pooling, pad): a border element
            where = tuple(int(s - 1 if self.rng.random() < 0.5 else 0) for s in t.shape)
        else:
            where = tuple(int(self.rng.integers(s)) for s in t.shape)
        value = (math.nan, math.inf, -math.inf)[int(self.rng.integers(3))]
        with tp.no_grad():
            t[where] = value
        return f" with {value} at {list(where)}"

    def _random_index(self, t):
        rng = self.rng
        if t.dim() == 0:
            return (None,) if rng.random() < 0.5 else (Ellipsis,)
        n = t.shape[0]
        kind = int(rng.integers(6))
        if kind == 0:
            return (int(rng.integers(-n - 1, n + 1)),) if n else (0,)
        if kind == 1:
            return (slice(int(rng.integers(-n, n + 1)), None, int(rng.integers(1, 3))),)
        if kind == 2:
            return ([int(i) for i in rng.integers(-n, max(n, 1), size=int(rng.integers(0, 4)))],)
        if kind == 3:
            return (("tensor", rng.integers(-n, max(n, 1), size=(int(rng.integers(1, 3)),))),)
        if kind == 4:
            return (("mask", rng.random(tuple(t.shape)) < 0.5),)
        return (Ellipsis, None)

    def _call_text(self, op, sample, twins, inplace):
        def name(value):
            if isinstance(value, tp.Tensor):
                return twins[id(value)].name
            if isinstance(value, (list, tuple)):
                inner = ", ".join(name(x) for x in value)
                return f"[{inner}]" if isinstance(value, list) else f"({inner})"
            return repr(value)
        args = [name(a) for a in sample.args] + [f"{k}={name(v)}"
                                                for k, v in sample.kwargs.items()]
        if inplace:
            return f"{name(sample.input)}.{op.inplace}({', '.join(args)})"
        return (f"v{len(self.pool)} = {op.full_name}({', '.join([name(sample.input)] + args)})")


# ---- the step tables --------------------------------------------------------------------
def _dim(k):
    return lambda t: t.dim() >= k


def _nonempty_dim(k):
    return lambda t: t.dim() >= k and t.shape[0] > 0


_VIEWS = [
    ("{}.transpose(-1, -2)", lambda x: x.transpose(-1, -2), _dim(2)),
    ("{}[..., ::2]", lambda x: x[..., ::2], _dim(1)),
    ("{}[1:]", lambda x: x[1:], _dim(1)),
    ("{}[0]", lambda x: x[0], _nonempty_dim(1)),
    ("{}.unsqueeze(0)", lambda x: x.unsqueeze(0), lambda t: True),
    ("{}.unsqueeze(-1)", lambda x: x.unsqueeze(-1), lambda t: True),
    ("{0}.expand(2, *{0}.shape)", lambda x: x.expand(2, *x.shape), lambda t: True),
    ("{}.view(-1)", lambda x: x.view(-1), lambda t: True),
    ("{}.diagonal()", lambda x: x.diagonal(), _dim(2)),
    ("{}.permute(reversed)", lambda x: x.permute(*range(x.dim() - 1, -1, -1)), _dim(1)),
    ("{}.narrow(-1, 0, 1)", lambda x: x.narrow(-1, 0, 1), lambda t: t.dim() >= 1
     and t.shape[-1] > 0),
    ("{}.t()", lambda x: x.t(), lambda t: t.dim() <= 2),
    ("{}.squeeze()", lambda x: x.squeeze(), lambda t: True),
    ("{}.detach()", lambda x: x.detach(), lambda t: True),
    ("{}.clone()", lambda x: x.clone(), lambda t: True),
    ("{}.unflatten(0, (1, -1))", lambda x: x.unflatten(0, (1, -1)), _dim(1)),
    ("{}.select(-1, -1)", lambda x: x.select(-1, -1), lambda t: t.dim() >= 1
     and t.shape[-1] > 0),
]


def _setitem(index):
    def write(x, o):
        x[index] = 7
    return write


def _float(t):
    return t.dtype.is_floating_point


_INPLACE = [
    ("{0}.add_(1.5)", lambda x, o: x.add_(1.5), lambda a, b: True),
    ("{0}.mul_({1})", lambda x, o: x.mul_(o), lambda a, b: True),
    ("{0}.add_({1})", lambda x, o: x.add_(o), lambda a, b: True),
    ("{0}.sub_({1}[None])", lambda x, o: x.sub_(o[None]), lambda a, b: True),
    ("{0}.copy_({1})", lambda x, o: x.copy_(o), lambda a, b: True),
    ("{0} += {1}", lambda x, o: x.__iadd__(o), lambda a, b: True),
    ("{0} *= {0}[1:]", lambda x, o: x.__imul__(x[1:]), lambda a, b: a.dim() >= 1),
    ("{0}.zero_()", lambda x, o: x.zero_(), lambda a, b: True),
    ("{0}.fill_(2)", lambda x, o: x.fill_(2), lambda a, b: True),
    ("{0}.clamp_(-1, 1)", lambda x, o: x.clamp_(-1, 1), lambda a, b: True),
    ("{0}.neg_()", lambda x, o: x.neg_(), lambda a, b: True),
    ("{0}.exp_()", lambda x, o: x.exp_(), lambda a, b: _float(a)),
    ("{0}[0] = 7", lambda x, o: _setitem(0)(x, o), lambda a, b: _nonempty_dim(1)(a)),
    ("{0}[...] = {1}", lambda x, o: x.__setitem__(Ellipsis, o), lambda a, b: True),
    ("{0}[{0} > 0] = 7", lambda x, o: x.__setitem__(x > 0, 7), lambda a, b: True),
    ("{0}[::2] = 7", lambda x, o: _setitem(slice(None, None, 2))(x, o), lambda a, b: a.dim() >= 1),
]


# ---- small pieces -----------------------------------------------------------------------
def _no_grad(lib, fn, *args):
    with lib.no_grad():
        return fn(*args)


def _index_to(index, lib):
    out = []
    for part in index:
        if isinstance(part, tuple) and part[0] == "tensor":
            out.append(lib.tensor(part[1].tolist(), dtype=lib.int64))
        elif isinstance(part, tuple) and part[0] == "mask":
            out.append(lib.tensor(part[1].tolist(), dtype=lib.bool))
        else:
            out.append(part)
    return tuple(out)


def _index_text(index):
    parts = []
    for part in index:
        if isinstance(part, tuple):
            parts.append(f"{part[0]}{list(part[1].shape)}")
        elif part is Ellipsis:
            parts.append("...")
        else:
            parts.append(repr(part))
    return ", ".join(parts)


def _with_values_of(twin, t):
    """A PyTorch tensor holding TensorPlay tensor t's exact values (or PyTorch tensor
    t's), with the autograd history of its twin (so that gradients still reach the twin's
    leaves): twin plus the detached difference, then overwritten with t's values where
    that sum rounds."""
    values = t if isinstance(t, torch.Tensor) else to_torch(t, requires_grad=False)
    if not twin.requires_grad:
        return values
    synced = twin + (values - twin).detach()
    with torch.no_grad():
        synced.copy_(values)     # exact even where twin - values is inf - inf
    return synced


def _undefined_values_of(twin, t):
    """_with_values_of for a result whose values and gradients are no contract (the rules
    of "results that are not unique"): a result of the op's own, not a view, takes t's
    values in place, through .data, which leaves its version and its place in PyTorch's
    graph as they are. What the op's backward saved of it is then the same tensor in both
    libraries, and an in-place write into it later meets the same saved-tensor check
    (seed 11511121: linalg_solve_ex's result of a singular matrix, which its backward
    saves, then add_: TensorPlay refused the backward, and PyTorch, whose twin was a new
    tensor, did not). A view (writing it would write its base) or a leaf keeps
    _with_values_of's new tensor."""
    if not twin.requires_grad or twin.grad_fn is None or twin._base is not None:
        return _with_values_of(twin, t)
    values = t if isinstance(t, torch.Tensor) else to_torch(t, requires_grad=False)
    twin.data.copy_(values)
    return twin


def _twin(t):
    """The PyTorch twin of a fresh TensorPlay tensor: a copy of its whole storage, with
    its offset, sizes and strides. to_torch copies the elements only, into a storage of
    their own whose slots between strided elements are uninitialised (torch.empty_strided);
    an op that addresses the storage (as_strided_ of a live value: seed 234220) would read
    those slots, which hold other bytes in TensorPlay (the rest of make_tensor's buffer).
    An expanded tensor (a stride 0) keeps to_torch's twin: PyTorch builds it with expand,
    as its users do (resize_ refuses to grow it; KNOWN says so)."""
    if t.device.type != "cpu" or 0 in t.stride():
        return to_torch(t)
    storage = t.untyped_storage()
    raw = np.asarray(storage.data).reshape(-1).view(np.uint8)[:storage.nbytes].copy()
    out = torch.empty(0, dtype=TORCH_DTYPE[t.dtype])
    out.set_(torch.from_numpy(raw).untyped_storage(), t.storage_offset(), tuple(t.shape),
             t.stride())
    return out.requires_grad_(t.requires_grad)


# ---- the float64 oracle (Program._compare) -----------------------------------------------
# (TensorPlay's error against float64 may be this many times PyTorch's, plus the tolerance)
_ORACLE_FACTOR = 2
_NARROW_FLOATS = (tp.float32, tp.float16, tp.bfloat16, tp.complex64)
_WIDER = {torch.float16: torch.float64, torch.bfloat16: torch.float64,
          torch.float32: torch.float64, torch.complex64: torch.complex128}


def _widened(t):
    """A PyTorch tensor's float64 (complex128) copy, with its whole storage widened and
    its offset, sizes and strides kept (as _twin keeps them: views of it and ops that
    address the storage see what they see in t), and its requires_grad; other dtypes as
    they are."""
    wider = _WIDER.get(t.dtype)
    if wider is None:
        return t
    storage = t.untyped_storage()
    flat = torch.empty(0, dtype=t.dtype).set_(storage, 0, (storage.nbytes() // t.element_size(),))
    out = torch.empty(0, dtype=wider).set_(flat.to(wider).untyped_storage(),
                                           t.storage_offset(), tuple(t.shape), t.stride())
    return out.requires_grad_(t.requires_grad)


def _wide_result(recompute):
    """PyTorch's re-run of a step (see Program._resync) on TensorPlay's inputs widened to
    float64, or None where it cannot run so."""
    try:
        with torch.no_grad():
            out = recompute(wide=True)
    except Exception:  # noqa: BLE001 - no float64 answer: the oracle does not decide
        return None
    return out if isinstance(out, torch.Tensor) else None


def _closer_to_float64(x, y, wide, rtol, atol):
    """Where TensorPlay's values x (float64 arrays, complex ones as parts: _parts) are no
    further from the float64 result `wide` than _ORACLE_FACTOR times PyTorch's y are,
    plus the tolerance; nowhere when there is no float64 result of their shape (an op of
    integer inputs computes its float32 result in float32 however widened)."""
    if wide is None or wide.dtype not in (torch.float64, torch.complex128):
        return np.zeros(x.shape, bool)
    r = _parts(torch_to_numpy(wide.detach().resolve_conj()))
    if r.shape != x.shape:
        return np.zeros(x.shape, bool)
    r = r.astype(np.float64)
    return np.isfinite(r) & (np.abs(x - r) <= _ORACLE_FACTOR * np.abs(y - r)
                             + atol + rtol * np.abs(r))


def _steps(lines):
    return [line for line in lines if not line.startswith(" ")]


@contextlib.contextmanager
def _global_generators_kept():
    """The default generators' states are restored after the block (a shadow run seeds
    them, and the program it shadows goes on drawing from them)."""
    th_state, tp_state = torch.get_rng_state(), tp.get_rng_state()
    try:
        yield
    finally:
        torch.set_rng_state(th_state)
        tp.set_rng_state(tp_state)


def _values_before(tensors):
    """A function giving PyTorch copies of these TensorPlay tensors' values as they are
    now (before an in-place step writes into one of them), by id; a tensor given twice
    has one copy, so that a write into it shows in its other uses as it did in the step.
    The copies are made now and handed out anew at each call (widened to float64 with
    `wide`: the float64 oracle)."""
    saved = {}
    for t in tensors:
        if id(t) not in saved:
            saved[id(t)] = to_torch(t, requires_grad=False)

    def values(wide=False):
        return {k: _widened(t) if wide and t.dtype in _WIDER else t.clone()
                for k, t in saved.items()}
    return values


def _shares_memory(a, b):
    return a.numel() > 0 and b.numel() > 0 and (
        a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr())


def _partial_overlap(a, b):
    """Whether b reads memory that a also holds, other than as the very same view."""
    if a.numel() == 0 or b.numel() == 0:
        return False
    if a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return False
    return (a.data_ptr(), a.shape, a.stride()) != (b.data_ptr(), b.shape, b.stride())


def _overlaps_itself(t):
    """Whether two elements of t share memory (an expanded tensor, overlapping unfold
    windows). An in-place write into such a tensor that PyTorch does not refuse is
    undefined (torch.Tensor.expand's docs: "in-place operations ... may result in
    incorrect behavior"): how often a shared element is written, and with which value,
    depends on PyTorch's loop order and vectorization."""
    if t.numel() <= 1:
        return False
    offsets = np.zeros((), dtype=np.int64)
    for size, stride in zip(t.shape, t.stride()):
        offsets = offsets[..., None] + np.arange(size, dtype=np.int64) * stride
    return np.unique(offsets).size < t.numel()


def _looser(*dtypes):
    """Of the float dtypes given (others and None ignored), the one with the loosest
    tolerance; None when there is none."""
    floats = [d for d in dtypes if d in DEFAULT_TOLERANCES]
    return max(floats, key=lambda d: DEFAULT_TOLERANCES[d], default=None)


def _parts(a):
    """A complex array as its (re, im) float pairs, a last dim of 2; a real one as it is.

    A complex number with a non-finite part is compared only as non-finite (both parts
    NaN): which parts of a complex result of infinities are inf and which NaN depends on
    the formula, not on the value. PyTorch computes add as a + alpha * b with a complex
    product even for alpha = 1, so (inf + 0j) + (inf + 0j) is inf + NaN j there (0 * inf),
    and multiplies out (a + bj)(c + 0j) term by term, where C99's Annex G keeps an infinity
    (TensorPlay: inf + 0j and inf + inf j)."""
    if a.dtype.kind != "c":
        return a
    re, im = a.real.copy(), a.imag.copy()
    nonfinite = ~(np.isfinite(re) & np.isfinite(im))
    re[nonfinite] = im[nonfinite] = np.nan
    return np.stack([re, im], -1)


def _all_finite(t):
    return not (t.is_floating_point() or t.is_complex()) or \
        bool(torch.isfinite(t.detach()).all())


def _has_ties(t):
    if not isinstance(t, tp.Tensor) or t.numel() < 2:
        return False
    arr = tp_to_numpy(t).ravel()
    return len(np.unique(arr[~np.isnan(arr)] if arr.dtype.kind == "f" else arr)) < arr.size


def _same_number(a, b):
    if isinstance(b, bool) or isinstance(a, bool):
        return a == b
    if isinstance(b, float) and (math.isnan(b) or math.isinf(b)):
        return isinstance(a, (int, float)) and (a == b or (math.isnan(b) and a != a))
    return isinstance(a, (int, float)) and math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6)


def _same_strides(a, b):
    """Strides of dims of size 1 carry no meaning (PyTorch itself is loose there)."""
    return all(x == y for x, y, s in zip(a.stride(), b.stride(), b.shape) if s > 1)


@contextlib.contextmanager
def _quiet():
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield


def run_programs(first_seed, count, max_steps=8):
    """Run `count` programs from `first_seed`; (mismatches, statistics)."""
    mismatches = []
    stats = {"programs": 0, "steps": 0, "op": 0, "view": 0, "inplace": 0, "index": 0,
             "raised": 0, "jvp": 0, "distribution": 0, "compiled": 0, "oracle": 0}
    for seed in range(first_seed, first_seed + count):
        program = Program(seed, max_steps)
        found = program.run()
        stats["programs"] += 1
        stats["steps"] += program.steps_run
        for k, n in program.counts.items():
            stats[k] += n
        if found is not None:
            mismatches.append(found)
    return mismatches, stats
