"""Edge-case values: inputs at the rim of an op's domain (empty tensors, empty rows,
integer and bool dtypes, statistics past float32's range) where TensorPlay once raised
or returned other numbers than PyTorch. PyTorch is the oracle for each value, dtype and
shape; every case runs the same input through both libraries.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import TensorPlayError

DEVICES = ["cpu"]
if tp.cuda.is_available() or tp.cuda.is_interpreted():
    DEVICES.append("cuda")


def _same(ours, theirs):
    """Same dtype, shape and values (NaN equal to NaN)."""
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    a = ours.detach().cpu().numpy().astype(np.float64)
    b = theirs.detach().numpy().astype(np.float64)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)


def _both(fn, *arrays, device="cpu", dtypes=None):
    """fn(library, *tensors) in TensorPlay (on `device`) and in PyTorch, same inputs."""
    dtypes = dtypes or [None] * len(arrays)
    ours = [tp.tensor(a, dtype=d and getattr(tp, d), device=device)
            for a, d in zip(arrays, dtypes)]
    theirs = [torch.tensor(a, dtype=d and getattr(torch, d)) for a, d in zip(arrays, dtypes)]
    return fn(tp, *ours), fn(torch, *theirs)


# ---- batch norm: PyTorch's strided loop sums float32 statistics in double ------------------
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_batch_norm_statistics_of_huge_values_follow_the_layout(layout):
    # a channel holding 1e30: its float32 squares overflow, its float64 ones do not.
    # PyTorch's contiguous kernel accumulates in float32 (every output of the channel
    # 0), its loop for other layouts in double (finite, normalized outputs).
    data = np.array([[1e30, 1.0], [-0.0, 2.0], [0.87, 3.0]], np.float32)

    def bn(lib, x):
        x = x if layout == "contiguous" else x.t().contiguous().t()
        return lib.nn.functional.batch_norm(x, None, None, training=True)
    ours, theirs = _both(bn, data)
    _same(ours, theirs)
    if layout == "transposed":
        assert np.isfinite(ours.numpy()).all() and abs(ours.numpy()[0, 0]) > 1


# ---- layer / group / rms norm over rows with no elements -------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_layer_norm_of_empty_rows_returns_pytorchs_statistics(device):
    # mean 0 (a sum of none), rstd NaN; the cuda kernel once left them uninitialized
    ours = tp.native_layer_norm(tp.zeros(2, 0, device=device), (0,), None, None, 1e-5)
    theirs = torch.native_layer_norm(torch.zeros(2, 0), (0,), None, None, 1e-5)
    for a, b in zip(ours, theirs):
        _same(a, b)


@pytest.mark.parametrize("device", DEVICES)
def test_group_norm_of_empty_groups_returns_pytorchs_statistics(device):
    x, w, b = np.zeros((2, 4, 0), np.float32), np.ones(4, np.float32), np.zeros(4, np.float32)
    ours, theirs = _both(lambda lib, *t: lib.native_group_norm(*t, 2, 4, 0, 2, 1e-5), x, w, b,
                         device=device)
    for a, b in zip(ours, theirs):
        _same(a, b)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape, normalized", [((3, 0), (0,)), ((2, 3, 0), (3, 0)),
                                               ((0, 4), (4,))])
def test_layer_norm_backward_of_empty_input(device, shape, normalized):
    # the fused backward once divided by the normalized element count, 0 here
    def grads(lib, x, w, b):
        for t in (x, w, b):
            t.requires_grad_(True)
        lib.nn.functional.layer_norm(x, normalized, w, b).sum().backward()
        return x.grad, w.grad, b.grad
    x = np.zeros(shape, np.float32)
    w, b = np.ones(normalized, np.float32), np.zeros(normalized, np.float32)
    ours, theirs = _both(grads, x, w, b, device=device)
    for a, b in zip(ours, theirs):
        _same(a, b)


@pytest.mark.parametrize("create_graph", [False, True])
def test_group_norm_backward_of_empty_groups(create_graph):
    def grads(lib, x, w):
        x.requires_grad_(True)
        w.requires_grad_(True)
        loss = lib.nn.functional.group_norm(x, 2, w).sum()
        return lib.autograd.grad(loss, [x, w], create_graph=create_graph)
    ours, theirs = _both(grads, np.zeros((2, 4, 0), np.float32), np.ones(4, np.float32))
    for a, b in zip(ours, theirs):
        _same(a, b)


# ---- softmax of empty integer and bool tensors ------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["int64", "uint8", "bool"])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_of_an_empty_integer_tensor_is_empty_of_its_dtype(device, dtype, name):
    # PyTorch returns an empty input before its kernel looks at the dtype
    ours, theirs = _both(lambda lib, x: getattr(lib, name)(x, 1),
                         np.zeros((0, 3)), device=device, dtypes=[dtype])
    _same(ours, theirs)
    ours, theirs = _both(lambda lib, x: getattr(lib, name)(x, 0, dtype=lib.float64),
                         np.zeros((0, 3)), device=device, dtypes=[dtype])
    _same(ours, theirs)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_of_a_non_empty_integer_tensor_still_raises(name):
    with pytest.raises(RuntimeError):
        getattr(torch, name)(torch.zeros(2, 3, dtype=torch.int64), 1)
    with pytest.raises(TensorPlayError, match=rf"{name}\(\): argument 'self'"):
        getattr(tp, name)(tp.zeros(2, 3, dtype=tp.int64), 1)


# ---- integer division by zero with nothing to divide ------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", [
    lambda lib, a, b: lib.fmod(a, b),
    lambda lib, a, b: lib.remainder(a, b),
    lambda lib, a, b: lib.floor_divide(a, b),
    lambda lib, a, b: lib.div(a, b, rounding_mode="trunc"),
], ids=["fmod", "remainder", "floor_divide", "div_trunc"])
def test_integer_division_of_an_empty_tensor_by_zero(device, op):
    # an empty result divides nothing: PyTorch checks no divisor then
    ours, theirs = _both(op, np.zeros((0, 3)), np.zeros(3), device=device,
                         dtypes=["int64", "int64"])
    _same(ours, theirs)
    with pytest.raises(RuntimeError):
        op(torch, torch.ones(2, 3, dtype=torch.int64), torch.zeros(3, dtype=torch.int64))
    with pytest.raises(TensorPlayError, match="integer division by zero"):
        op(tp, tp.ones(2, 3, dtype=tp.int64, device=device),
           tp.zeros(3, dtype=tp.int64, device=device))


# ---- pow of a bool tensor by a bool ----------------------------------------------------
@pytest.mark.parametrize("exponent", [True, False])
@pytest.mark.parametrize("shape", [(0,), (3,)])
def test_bool_tensor_to_a_bool_power_is_bool(exponent, shape):
    data = np.array([True, False, True])[:shape[0]]
    ours, theirs = _both(lambda lib, x: lib.pow(x, exponent), data)
    _same(ours, theirs)
    ours, theirs = _both(lambda lib, x: x.pow_(exponent), data)
    _same(ours, theirs)
    # a number exponent still picks the integer kernel, and bool ** bool tensor raises
    ours, theirs = _both(lambda lib, x: lib.pow(x, 2), data)
    _same(ours, theirs)


# ---- index_fill_ of a tensor empty along another dim ------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape, dim, index", [((0, 3), 1, [5]), ((3, 0), 0, [5]),
                                               ((0, 3), 1, [-9])])
def test_index_fill_of_an_empty_slice_reads_no_index(device, shape, dim, index):
    def fill(lib, x, i):
        return x.index_fill_(dim, i, 2.0), x.index_fill(dim, i, 2.0)
    ours, theirs = _both(fill, np.zeros(shape, np.float32), np.array(index), device=device)
    for a, b in zip(ours, theirs):
        _same(a, b)


# ---- cat and roll of empty tensors read no dim --------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [1, -2, 5])
def test_cat_of_only_legacy_empty_tensors_ignores_dim(device, dim):
    ours, theirs = _both(lambda lib, a, b: lib.cat([a, b], dim), np.zeros(0), np.zeros(0),
                         device=device, dtypes=["float32", "float64"])
    _same(ours, theirs)
    # one tensor that is joined: the dim is its
    with pytest.raises(IndexError):
        torch.cat([torch.zeros(0), torch.zeros(2, 3)], dim + 5)
    with pytest.raises(IndexError):
        tp.cat([tp.zeros(0, device=device), tp.zeros(2, 3, device=device)], dim + 5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(0,), (0, 3)])
def test_roll_of_an_empty_tensor_ignores_dims(device, shape):
    ours, theirs = _both(lambda lib, x: lib.roll(x, 1, 5), np.zeros(shape), device=device)
    _same(ours, theirs)


@pytest.mark.parametrize("base, data, dtype", [(2, [True, False], "bool"),
                                               (2.5, [1, 2], "int64"),
                                               (2, [0.5, -1.0], "float32")])
def test_pow_of_a_number_by_a_tensor(base, data, dtype):
    # torch.pow(2, t): the Scalar-self overload, as `2 ** t`
    ours, theirs = _both(lambda lib, x: lib.pow(base, x), np.array(data), dtypes=[dtype])
    _same(ours, theirs)


def test_pow_of_a_number_by_a_tensor_has_its_gradient():
    def grad(lib, x):
        x.requires_grad_(True)
        lib.pow(2, x).sum().backward()
        return x.grad
    ours, theirs = _both(grad, np.array([0.5, 1.0, -2.0]))
    _same(ours, theirs)


@pytest.mark.parametrize("shape", [(0, 4), (4, 0), (2, 0, 3)])
@pytest.mark.parametrize("ord", [1, float("inf")])
def test_matrix_norm_of_an_empty_matrix_is_a_constant_zero(shape, ord):
    # the largest of no row (column) sums: PyTorch returns 0 (without a graph when there
    # are no sums at all)
    def norm(lib, x):
        x.requires_grad_(True)
        out = lib.linalg.matrix_norm(x, ord)
        return out, out.requires_grad
    (ours, ours_rg), (theirs, theirs_rg) = _both(norm, np.zeros(shape))
    _same(ours.detach(), theirs.detach())
    assert ours_rg == theirs_rg


# ---- trapezoid: integer samples take the spacing's dtype ---------------------------------
@pytest.mark.parametrize("fn", ["trapezoid", "cumulative_trapezoid"])
@pytest.mark.parametrize("x_dtype", ["float16", "float64", "int64"])
def test_trapezoid_of_integer_samples_takes_the_spacing_dtype(fn, x_dtype):
    def call(lib):
        y = lib.ones(2, 5, dtype=lib.int32)
        x = lib.arange(10, dtype=getattr(lib, x_dtype)).reshape(2, 5)
        return getattr(lib, fn)(y, x, dim=1)
    ours, theirs = call(tp), call(torch)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert ours.tolist() == theirs.tolist()


def test_trapezoid_of_no_samples_ignores_x():
    assert tp.trapezoid(tp.zeros(3, 0), tp.ones(5)).tolist() == \
        torch.trapezoid(torch.zeros(3, 0), torch.ones(5)).tolist()

# ---- linalg on empty integer matrices: PyTorch returns before its dtype check -------------
_EMPTY_INTEGER_LINALG = {
    "linalg.eigh": lambda lib, A: lib.linalg.eigh(A),
    "linalg.eigvalsh": lambda lib, A: lib.linalg.eigvalsh(A),
    "linalg.cond": lambda lib, A: lib.linalg.cond(A),
    "linalg.lu": lambda lib, A: lib.linalg.lu(A),
    "linalg.lu_factor": lambda lib, A: lib.linalg.lu_factor(A),
    "linalg.lu_factor_ex": lambda lib, A: lib.linalg.lu_factor_ex(A),
}


@pytest.mark.parametrize("name", sorted(_EMPTY_INTEGER_LINALG))
@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 0)])
@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_linalg_of_an_empty_integer_matrix_returns_the_empty_result(name, shape, dtype):
    fn = _EMPTY_INTEGER_LINALG[name]
    ours, theirs = _both(fn, np.zeros(shape), dtypes=[dtype])
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for a, b in zip(ours, theirs, strict=True):
        _same(a, b)


def test_linalg_of_a_nonempty_integer_matrix_is_still_refused():
    with pytest.raises(TensorPlayError, match="floating point"):
        tp.linalg.eigh(tp.ones(2, 2, dtype=tp.int64))


@pytest.mark.parametrize("dtype", ["int64", "bool", "float16"])
@pytest.mark.parametrize("unpack", [(True, True), (True, False), (False, True)])
def test_lu_unpack_takes_any_dtype(dtype, unpack):
    # unpacking only moves LU's entries and builds a permutation: PyTorch takes any dtype
    lu = np.arange(-6, 9).reshape(3, 5) % 3
    pivots = np.array([3, 2, 3], np.int32)
    ours, theirs = _both(lambda lib, LU, p: lib.lu_unpack(LU, p, *unpack), lu, pivots,
                         dtypes=[dtype, "int32"])
    for a, b in zip(ours, theirs, strict=True):
        _same(a, b)


@pytest.mark.parametrize("shape", [(1, 2, 0), (2, 0, 3)])
def test_lu_unpack_of_an_empty_factor_reads_no_pivots(shape):
    # no row swaps to read (min(m, n) = 0): P is the identity, whatever the pivots' shape
    ours, theirs = _both(lambda lib, LU, p: lib.lu_unpack(LU, p), np.zeros(shape),
                         np.ones((5,), np.int32), dtypes=["float32", "int32"])
    for a, b in zip(ours, theirs, strict=True):
        _same(a, b)


def test_lu_unpack_without_pivots_does_not_check_them():
    ours, theirs = _both(lambda lib, LU, p: lib.lu_unpack(LU, p, True, False),
                         np.eye(3), np.full((3,), 7, np.int32), dtypes=["float32", "int32"])
    for a, b in zip(ours, theirs, strict=True):
        _same(a, b)


# ---- linalg.solve_triangular: B is cast to A's dtype, as PyTorch copies it ------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("a_dtype, b_dtype, left", [("float32", "bool", False),
                                                    ("float32", "float64", True),
                                                    ("float64", "int64", True),
                                                    ("float64", "float32", False)])
def test_solve_triangular_computes_in_the_dtype_of_A(device, a_dtype, b_dtype, left):
    rng = np.random.default_rng(0)
    a = np.triu(rng.standard_normal((3, 3))) + 3 * np.eye(3)
    b = rng.integers(0, 3, (2, 3, 3))

    def solve(lib, A, B):
        return lib.linalg.solve_triangular(A, B, upper=True, left=left)
    ours, theirs = _both(solve, a, b, device=device, dtypes=[a_dtype, b_dtype])
    _same(ours, theirs)


def test_solve_triangular_of_mixed_dtypes_has_its_gradients():
    rng = np.random.default_rng(1)
    a = np.triu(rng.standard_normal((3, 3))) + 3 * np.eye(3)
    b = rng.standard_normal((3, 2))
    grads = []
    for lib in (tp, torch):
        A = lib.tensor(a, dtype=lib.float32, requires_grad=True)
        B = lib.tensor(b, dtype=lib.float64, requires_grad=True)
        lib.linalg.solve_triangular(A, B, upper=True).sum().backward()
        grads.append((A.grad, B.grad))
    for ours, theirs in zip(*grads):
        _same(ours, theirs)


# ---- ctc_loss: targets of any dtype are cast to int64 labels, as PyTorch's -----------------
@pytest.mark.parametrize("targets", [np.array([[1.9, 2.2, 3.5], [2.0, 3.0, 1.0]]),
                                     np.array([[1, 2, 3], [2, 3, 1]], np.uint8)],
                         ids=["float64", "uint8"])
def test_ctc_loss_casts_its_targets_to_labels(targets):
    log_probs = np.log(np.random.default_rng(0).dirichlet(np.ones(4), size=(5, 2)))
    results = []
    for lib in (tp, torch):
        lp = lib.tensor(log_probs, requires_grad=True)
        loss = lib.nn.functional.ctc_loss(lp, lib.tensor(targets), [5, 4], [2, 3],
                                          reduction="none")
        results.append((loss, lib.autograd.grad(loss.sum(), [lp])[0]))
    for ours, theirs in zip(*results):
        _same(ours, theirs)


# ---- index_add into an empty self, index_copy from an empty source: no index is read -------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["index_add", "index_copy", "index_add_", "index_copy_"])
@pytest.mark.parametrize("shape, dim, source", [((2, 0), 0, (1, 0)), ((0, 2), 1, (0, 1))])
def test_index_writes_with_nothing_to_write_read_no_index(device, op, shape, dim, source):
    # PyTorch returns before it checks the index's bounds (5 is out of range)
    def call(lib, x, index, src):
        return getattr(x, op)(dim, index, src)
    ours, theirs = _both(call, np.zeros(shape), np.array([5]), np.ones(source),
                         device=device, dtypes=["float32", "int64", "float32"])
    _same(ours, theirs)


@pytest.mark.parametrize("device", DEVICES)
def test_index_add_into_an_empty_self_reads_no_index(device):
    ours, theirs = _both(lambda lib, x, i, s: x.index_add(-1, i, s), np.zeros((2, 3, 0)),
                         np.array([1]), np.ones((2, 3, 1)), device=device,
                         dtypes=["float32", "int64", "float32"])
    _same(ours, theirs)


@pytest.mark.parametrize("weight", ["int64", "bool", "float64"])
def test_lerp_takes_a_0d_weight_of_any_dtype_as_a_number(weight):
    def call(lib, inplace):
        w = lib.tensor(2 if weight == "int64" else True if weight == "bool" else 0.5,
                       dtype=getattr(lib, weight))
        x, end = lib.ones(3, dtype=lib.bfloat16), lib.zeros(3, dtype=lib.bfloat16)
        return x.lerp_(end, w) if inplace else lib.lerp(x, end, w)
    for inplace in (False, True):
        ours, theirs = call(tp, inplace), call(torch, inplace)
        assert ours.dtype == tp.bfloat16 and ours.tolist() == theirs.tolist()


def test_scatter_with_an_empty_index_never_converts_the_value():
    """An empty index writes nothing: PyTorch returns before it converts the value (a
    complex number into bfloat16 is refused only when something is written)."""
    x = tp.zeros(2, 3, dtype=tp.bfloat16)
    assert tp.scatter(x, 0, tp.zeros(0, 3, dtype=tp.int64), 2.5 - 1j).tolist() == \
        torch.scatter(torch.zeros(2, 3, dtype=torch.bfloat16), 0,
                      torch.zeros(0, 3, dtype=torch.int64), 2.5 - 1j).tolist()
    with pytest.raises(TensorPlayError, match=r"scatter\(\)"):
        tp.scatter(x, 0, tp.zeros(1, 3, dtype=tp.int64), 2.5 - 1j)


def test_softmin_negates_in_the_inputs_dtype_first():
    """PyTorch's softmin is softmax(-input, dtype): a uint8 input's negation wraps around
    (-1 is 255) before the cast."""
    ours = tp.nn.functional.softmin(tp.tensor([[1, 2, 200]], dtype=tp.uint8), 1,
                                    dtype=tp.float64)
    theirs = torch.nn.functional.softmin(torch.tensor([[1, 2, 200]], dtype=torch.uint8), 1,
                                         dtype=torch.float64)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_conv_tbc_has_the_inputs_dtype_whatever_the_bias():
    def call(lib):
        x, w = lib.ones(5, 2, 3, requires_grad=True), lib.ones(2, 3, 4, requires_grad=True)
        b = lib.ones(4, dtype=lib.float64, requires_grad=True)
        r = lib.conv_tbc(x, w, b, 1)
        r.sum().backward()
        return r, b.grad
    (ours, ob), (theirs, tb) = call(tp), call(torch)
    assert ours.dtype == tp.float32 and ob.dtype == tp.float64
    assert ours.tolist() == theirs.tolist() and ob.tolist() == tb.tolist()


@pytest.mark.parametrize("fn", ["igamma", "igammac"])
def test_igamma_special_values_in_pytorchs_order(fn):
    """Every pair of NaN, +-inf, 0, -1 and 2.5 as (a, x): PyTorch checks the special values
    in order, so igamma(NaN, inf) is 1, not SciPy's NaN (seed 989918)."""
    import itertools
    vals = [float("nan"), float("inf"), 0.0, -1.0, 2.5, -float("inf")]
    a, x = zip(*itertools.product(vals, vals))
    ours = getattr(tp, fn)(tp.tensor(a, dtype=tp.float64), tp.tensor(x, dtype=tp.float64))
    theirs = getattr(torch, fn)(torch.tensor(a, dtype=torch.float64),
                                torch.tensor(x, dtype=torch.float64))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, equal_nan=True)


def test_airy_ai_of_large_and_infinite_x_as_torch():
    x = [1e30, 103.0, 104.0, 200.0, float("inf"), -float("inf"), float("nan"), 1.5]
    np.testing.assert_allclose(tp.special.airy_ai(tp.tensor(x)).numpy(),
                               torch.special.airy_ai(torch.tensor(x)).numpy(), rtol=1e-6,
                               equal_nan=True)


def test_ldl_solve_takes_int64_pivots_as_torch():
    A = torch.randn(2, 4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    A = A + A.mT
    B = torch.randn(2, 4, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    LD, piv = torch.linalg.ldl_factor(A)
    theirs = torch.linalg.ldl_solve(LD, piv.long(), B)
    ours = tp.linalg.ldl_solve(tp.tensor(LD.numpy()), tp.tensor(piv.long().numpy()),
                               tp.tensor(B.numpy()))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape,reduction", [((0,), "none"), ((0,), "mean"), ((2, 0), "none")])
def test_cross_entropy_label_smoothing_with_no_classes(shape, reduction):
    """No classes to smooth over (seed 95579 divided by zero, an untyped error)."""
    ours = tp.nn.functional.cross_entropy(tp.zeros(shape), tp.zeros(shape),
                                          reduction=reduction, label_smoothing=0.3)
    theirs = torch.nn.functional.cross_entropy(torch.zeros(shape), torch.zeros(shape),
                                               reduction=reduction, label_smoothing=0.3)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_diff_of_an_empty_dim_returns_self_as_torch():
    x = tp.zeros(0, requires_grad=True)
    assert tp.diff(x, 7) is x and torch.diff(torch.zeros(0, requires_grad=True), 7).is_leaf


def test_histogram_with_bin_tensors_marks_its_outputs_as_torch():
    x = tp.rand(5, dtype=tp.float64, requires_grad=True)
    hist, edges = tp.histogram(x, tp.tensor([0.0, 0.5, 1.0], dtype=tp.float64))
    assert hist.requires_grad and edges.requires_grad
    with pytest.raises(TensorPlayError, match="histogram"):
        hist.sum().backward()


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_logaddexp_computes_in_float32_and_rounds_once(name, dtype):
    """PyTorch computes the half types in float32 and rounds the result once; rounding
    each step to bfloat16 gave -1.078125 for logaddexp(-1.578125, -2), PyTorch -1.0703125
    (seed 256014, where polygamma then magnified the unit of difference)."""
    rng = np.random.default_rng(0)
    a = np.concatenate([[-1.578125], rng.uniform(-5, 5, 200)]).astype(np.float32)
    b = np.concatenate([[-2.0], rng.uniform(-5, 5, 200)]).astype(np.float32)
    ours = getattr(tp, name)(tp.tensor(a).to(getattr(tp, dtype)),
                             tp.tensor(b).to(getattr(tp, dtype)))
    theirs = getattr(torch, name)(torch.tensor(a).to(getattr(torch, dtype)),
                                  torch.tensor(b).to(getattr(torch, dtype)))
    assert ours.dtype is getattr(tp, dtype)
    np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())




@pytest.mark.parametrize("op", ["max", "min", "median", "nanmedian"])
def test_a_full_reduction_sends_a_nan_gradient_to_the_chosen_element_only(op):
    """The fuzzer's seed 7672: sqrt(max(x) - 5) has a NaN gradient; PyTorch's CPU
    evenly_distribute_backward writes it into zeros at the chosen element, the others 0."""
    ours = tp.tensor([1.0, -2.0, 3.0], requires_grad=True)
    tp.sqrt(getattr(tp, op)(ours) - 5).backward()
    theirs = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    torch.sqrt(getattr(torch, op)(theirs) - 5).backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


def test_cov_of_integers_takes_a_floating_weights_dtype():
    """The fuzzer's seed 679906: PyTorch's cov converts nothing, x * w decides (int64 x,
    float16 aweights: float16); with no floating weight an integer x gives float32."""
    for lib in (tp, torch):
        x = lib.tensor([[1, 2, 3], [4, 5, 7]])
        a = lib.tensor([1.0, 2.0, 1.0], dtype=lib.float16)
        f = lib.tensor([1, 2, 1])
        assert str(lib.cov(x, fweights=f, aweights=a).dtype).endswith("float16")
        assert str(lib.cov(x, fweights=f).dtype).endswith("float32")
    np.testing.assert_allclose(
        tp.cov(tp.tensor([[1, 2, 3], [4, 5, 7]]), aweights=tp.tensor([1.0, 2.0, 1.0],
                                                                   dtype=tp.float16)).float().numpy(),
        torch.cov(torch.tensor([[1, 2, 3], [4, 5, 7]]), aweights=torch.tensor(
            [1.0, 2.0, 1.0], dtype=torch.float16)).float().numpy(), rtol=1e-3)
