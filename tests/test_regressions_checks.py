"""Argument checks that PyTorch makes (and errors it does not raise), found by the
differential fuzzer (tests/fuzzing). Each case runs the same code on tensorplay and on
torch: both must raise (TensorPlay a typed error), or both must succeed with the same
dtype, shape and requires_grad (and, where compared, values)."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import DTypeError, TensorPlayError
from torch_twins import raises_like_torch


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    # tiny tensors: PyTorch's thread pool costs more than the work on a shared machine
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _outcome(fn, m):
    """('raise',) or the result's (dtype name, shape, requires_grad), per output."""
    try:
        out = fn(m)
    except Exception as e:   # noqa: BLE001 - the kind is compared below
        if m is tp:
            assert isinstance(e, TensorPlayError), f"untyped error {type(e).__name__}: {e}"
        return ("raise",)
    outs = out if isinstance(out, tuple) else (out,)
    return tuple((str(o.dtype).split(".")[-1], tuple(o.shape), o.requires_grad)
                 for o in outs if o is not None)


def same_as_torch(fn):
    got, want = _outcome(fn, tp), _outcome(fn, torch)
    assert got == want, f"tensorplay {got}, torch {want}"


def _backward(y):
    y.sum().backward()
    return y


# ---- binary_cross_entropy: target range and dtype, weight dtype ----------------------------
@pytest.mark.parametrize("target", [[0.5, 1.0], [0.5, 1.5], [-1e-9, 0.0], [0.5, float("nan")],
                                    [0.5, float("inf")]])
def test_bce_target_must_be_in_unit_interval(target):
    same_as_torch(lambda m: m.nn.functional.binary_cross_entropy(m.tensor([0.5, 0.5]),
                                                                 m.tensor(target)))


@pytest.mark.parametrize("tdtype, wdtype", [("float64", None), ("float32", "float64"),
                                            ("float32", "float16"), ("float32", "int64")])
def test_bce_target_dtype_must_match_and_weight_keeps_self_dtype(tdtype, wdtype):
    def fn(m):
        x = m.tensor([0.25, 0.75])
        w = None if wdtype is None else m.ones(2, dtype=getattr(m, wdtype))
        return m.nn.functional.binary_cross_entropy(x, x.to(getattr(m, tdtype)), weight=w)
    same_as_torch(fn)


# ---- huber_loss: backward refuses self and target of two dtypes --------------------------
@pytest.mark.parametrize("sd, td, target_grad", [("float32", "float16", False),
                                                 ("float32", "float64", True),
                                                 ("float64", "float64", True)])
def test_huber_loss_backward_needs_one_dtype(sd, td, target_grad):
    def fn(m):
        x = m.tensor([0.1, 2.0, -3.0], dtype=getattr(m, sd), requires_grad=not target_grad)
        y = m.tensor([0.3, 0.0, 0.5], dtype=getattr(m, td), requires_grad=target_grad)
        return _backward(m.nn.functional.huber_loss(x, y, delta=0.7))
    same_as_torch(fn)


def test_huber_loss_gradients_match_torch():
    def grads(m):
        x = m.tensor([0.1, 2.0, -3.0, float("inf")], dtype=m.float64, requires_grad=True)
        y = m.tensor([0.3, 0.1, 0.0, 0.0], dtype=m.float64, requires_grad=True)
        for reduction in ("mean", "sum", "none"):
            m.nn.functional.huber_loss(x, y, reduction, delta=0.7).sum().backward()
        return x.grad.tolist(), y.grad.tolist()
    assert grads(tp) == grads(torch)


# ---- remainder(number, tensor) has no derivative ------------------------------------------
@pytest.mark.parametrize("expr", ["5 % x", "m.remainder(5, x)", "m.remainder(x, 5)",
                                  "x % m.ones(3)"])
def test_remainder_of_a_number_has_no_derivative(expr):
    def fn(m):
        x = (m.arange(3.0) + 0.5).requires_grad_()
        return _backward(eval(expr))
    same_as_torch(fn)


# ---- cov: negative weights, weights summing to zero --------------------------------------
@pytest.mark.parametrize("fw, aw", [(None, [1.0, -1.0, 1.0, 1.0]), (None, [1.0, float("nan"), 1, 1]),
                                    (None, [1.0, -0.0, 1.0, 1.0]), ([1, -1, 1, 1], None),
                                    (None, [0.0, 0.0, 0.0, 0.0]), ([0, 0, 1, 1], [1.0, 1, 0, 0])])
def test_cov_weights_checks(fw, aw):
    def fn(m):
        x = m.arange(8.0).reshape(2, 4)
        return m.cov(x, fweights=None if fw is None else m.tensor(fw),
                     aweights=None if aw is None else m.tensor(aw))
    same_as_torch(fn)


# ---- norms: PyTorch's one rule for the parameters' dtypes --------------------------------
_NORM_DTYPES = ["float32", "float64", "bfloat16", None]


@pytest.mark.parametrize("xd", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("wd", _NORM_DTYPES)
@pytest.mark.parametrize("rd", _NORM_DTYPES)
def test_batch_and_instance_norm_parameter_dtypes(xd, wd, rd):
    def params(m, d):
        return (None, None) if d is None else (m.rand(3, dtype=getattr(m, d)),
                                               m.rand(3, dtype=getattr(m, d)))
    x = {m: m.rand(2, 3, 4, dtype=getattr(m, xd)) for m in (tp, torch)}
    # training: the statistics' dtype is compared too (in evaluation PyTorch returns empty
    # ones, TensorPlay the ones it used: see cpu_kernels/normalization.py)
    same_as_torch(lambda m: m.native_batch_norm(x[m], *params(m, wd), *params(m, rd), True,
                                                0.1, 1e-5))
    same_as_torch(lambda m: m.native_batch_norm(x[m], *params(m, wd), *params(m, rd), False,
                                                0.1, 1e-5)[0] if rd else m.zeros(()))
    same_as_torch(lambda m: m.nn.functional.instance_norm(x[m], *params(m, rd), *params(m, wd)))


@pytest.mark.parametrize("xd", ["float32", "bfloat16"])
@pytest.mark.parametrize("wd, bd", [("float32", "float32"), ("float32", "bfloat16"),
                                    (None, "float32"), ("bfloat16", "float32"),
                                    ("float64", None), (None, None)])
def test_layer_and_group_norm_parameter_dtypes(xd, wd, bd):
    def p(m, d):
        return None if d is None else m.rand(4, dtype=getattr(m, d))
    x = {m: m.rand(2, 4, dtype=getattr(m, xd)) for m in (tp, torch)}
    same_as_torch(lambda m: m.native_layer_norm(x[m], [4], p(m, wd), p(m, bd), 1e-5))
    same_as_torch(lambda m: m.native_group_norm(x[m], p(m, wd), p(m, bd), 2, 4, 1, 2, 1e-5))


@pytest.mark.parametrize("wd", ["float32", "float64", "bfloat16", "int64"])
@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
def test_nll_loss_weight_must_have_self_dtype(wd, loss):
    def fn(m):
        x = m.rand(4, 5)
        return getattr(m.nn.functional, loss)(x, m.zeros(4, dtype=m.int64),
                                              weight=m.ones(5, dtype=getattr(m, wd)))
    same_as_torch(fn)


def test_block_diag_dtype_is_result_type():
    same_as_torch(lambda m: m.block_diag(m.ones((), dtype=m.float64), m.ones(3), m.ones(2, 4)))
    same_as_torch(lambda m: m.block_diag(m.ones(1, dtype=m.int64), m.ones((), dtype=m.float64)))


# ---- graphs: unique, pairwise_distance p=0, in-place writes into integer tensors ---------
@pytest.mark.parametrize("kw", [{}, {"return_counts": True}, {"return_inverse": True},
                                {"dim": 0}])
def test_unique_values_are_in_the_graph_without_derivative(kw):
    def values(m):
        out = m.unique(m.rand(3, dtype=m.float64, requires_grad=True), **kw)
        return out[0] if isinstance(out, tuple) else out
    same_as_torch(lambda m: m.unique(m.rand(3, dtype=m.float64, requires_grad=True), **kw))
    same_as_torch(lambda m: _backward(values(m)))   # no derivative: raises in both


def test_pairwise_distance_p0_stays_in_the_graph():
    same_as_torch(lambda m: m.nn.functional.pairwise_distance(
        m.rand(3, 5, requires_grad=True), m.rand(3, 5), p=0.0))


# ---- einsum and bmm: mixed dtypes where PyTorch allows them ------------------------------
@pytest.mark.parametrize("eq, shapes", [("i,i", [(0,), (0,)]), ("i,i", [(3,), (3,)]),
                                        ("i,i", [(1,), (1,)]), ("i,j->ij", [(3,), (4,)]),
                                        ("ij,ij->ij", [(1, 3), (2, 3)]), ("ij,jk", [(2, 3), (3, 4)]),
                                        ("ij,jk", [(2, 1), (1, 4)]), ("i,i,i->i", [(3,)] * 3)])
@pytest.mark.parametrize("dtypes", [("float64", "float32", "float32"),
                                    ("int64", "float32", "float64")])
def test_einsum_mixed_dtypes(eq, shapes, dtypes):
    same_as_torch(lambda m: m.einsum(eq, *[m.ones(s, dtype=getattr(m, d))
                                           for s, d in zip(shapes, dtypes)]))


def test_einsum_mixed_dtypes_backward():
    def fn(m):
        a, b = m.ones(3, requires_grad=True), m.ones(4, dtype=m.float64, requires_grad=True)
        _backward(m.einsum("i,j->ij", a, b))
        return a.grad, b.grad
    same_as_torch(fn)


@pytest.mark.parametrize("a, b", [((2, 0, 4), (2, 4, 3)), ((2, 3, 0), (2, 0, 3)),
                                  ((2, 3, 4), (2, 4, 0)), ((2, 3, 4), (2, 4, 3))])
def test_bmm_of_empty_operands_takes_any_dtypes(a, b):
    same_as_torch(lambda m: m.bmm(m.ones(a, dtype=m.float64), m.ones(b)))
    same_as_torch(lambda m: m.bmm(m.ones(a, dtype=m.int64), m.ones(b, dtype=m.float64)))


# ---- fill values must fit the tensor's dtype ---------------------------------------------
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "float16", "bool"])
@pytest.mark.parametrize("value", [-1, -1.0, -0.5, 255, 256, 1e10, float("inf"), float("nan"),
                                   70000.0, 2.5, True])
@pytest.mark.parametrize("as_tensor", [False, True])
def test_fill_value_must_fit_dtype(dtype, value, as_tensor):
    def val(m):
        return m.tensor(value, dtype=m.float64) if as_tensor and isinstance(value, float) \
            else m.tensor(value) if as_tensor else value
    mask = {m: m.ones(2, dtype=m.bool) for m in (tp, torch)}
    same_as_torch(lambda m: m.zeros(2, dtype=getattr(m, dtype)).masked_fill_(mask[m], val(m)))
    same_as_torch(lambda m: m.zeros(2, dtype=getattr(m, dtype)).index_fill_(
        0, m.tensor([0]), val(m)))
    same_as_torch(lambda m: m.zeros(2, dtype=getattr(m, dtype)).fill_(val(m)))


# ---- views ----------------------------------------------------------------------------------
def test_setitem_drops_leading_ones_of_the_value():
    def fn(m):
        w = m.ones(1, 3, 4, requires_grad=True)
        a = m.zeros(3, 4)
        a[...] = w
        _backward(a)
        return w.grad
    same_as_torch(fn)
    same_as_torch(lambda m: m.zeros(3, 4).copy_(m.ones(1, 3, 4)))

    def onto_itself(m):
        a = m.zeros(1, 3)
        a[...] = a
        return a
    same_as_torch(onto_itself)


@pytest.mark.parametrize("op", ["swapdims_(0, 1)", "unsqueeze_(0)", "t_()"])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_inplace_view_op_on_unbind_output(op, requires_grad):
    def fn(m):
        v = m.unbind(m.zeros(2, 3, 4, requires_grad=requires_grad), -1)[0]
        return eval("v." + op)
    same_as_torch(fn)


# ---- errors: raised iff torch raises, as TensorPlay typed errors ---------------------
_ERROR_CASES = {
    "argmax_bool": lambda m: m.argmax(m.tensor([True, False])),
    "argmin_bool_dim": lambda m: m.tensor([True, False]).argmin(0),
    "topk_bool": lambda m: m.topk(m.tensor([True, False]), 1),
    "kthvalue_bool": lambda m: m.kthvalue(m.tensor([True, False]), 1),
    "median_bool": lambda m: m.median(m.tensor([True, False])),
    "median_dim_bool": lambda m: m.median(m.tensor([True, False]), 0),
    "pow_bool_bool": lambda m: m.pow(m.tensor([True, False]), m.tensor([True, True])),
    "pow_bool_int": lambda m: m.pow(m.tensor([True, False]), 2),
    "clamp_bool_tensor_bounds": lambda m: m.clamp(m.tensor([True, False]), m.tensor(False),
                                                  m.tensor(True)),
    "clamp_bool_number_bounds": lambda m: m.clamp(m.tensor([True, False]), 0, 1),
    "mode_bool": lambda m: m.mode(m.tensor([True, False, True])),
    "sort_bool": lambda m: m.sort(m.tensor([True, False, True])),
    "narrow_0dim": lambda m: m.tensor(2.0).narrow(0, 0, 1),
    "unflatten_0dim": lambda m: m.tensor(2.0).unflatten(0, [1]),
    "topk_0dim_k0": lambda m: m.topk(m.tensor(0.9), 0),
    "topk_0dim_k1": lambda m: m.topk(m.tensor(0.9), 1),
    "isub_broadcast_larger": lambda m: m.zeros(3).sub_(m.ones(3)[None]),
    "iadd_broadcast_larger": lambda m: m.zeros(3).add_(m.ones(2, 3)),
    "imul_broadcast_larger": lambda m: m.zeros(3).mul_(m.ones(1, 3)),
    "idiv_broadcast_larger": lambda m: m.zeros(3).div_(m.ones(1, 1, 3)),
    "iadd_broadcast_fits": lambda m: m.zeros(2, 3).add_(m.ones(1, 3)),
    "addcmul_bool_operand": lambda m: m.addcmul(m.tensor([1.0, 2.0]), m.tensor([True, False]),
                                                m.tensor([2.0, 3.0])),
    "addcmul_int_with_bools": lambda m: m.addcmul(m.tensor([1, 2]), m.tensor([True, False]),
                                                  m.tensor([True, True])),
    "addcmul_all_bool": lambda m: m.addcmul(m.tensor([True]), m.tensor([True]),
                                            m.tensor([False])),
    "addcdiv_bool_divisor": lambda m: m.addcdiv(m.tensor([1.0, 2.0]), m.tensor([1.0, 2.0]),
                                                m.tensor([True, False])),
    "median_of_nothing": lambda m: m.median(m.ones(0, 3)),
    "median_of_no_ints": lambda m: m.median(m.ones(0, dtype=m.int64)),
    "avg_pool2d_int64": lambda m: m.nn.functional.avg_pool2d(
        3 - m.arange(16).reshape(1, 1, 4, 4), 3, 1, 1),
    "avg_pool2d_int64_no_pad_count": lambda m: m.nn.functional.avg_pool2d(
        3 - m.arange(16).reshape(1, 1, 4, 4), 3, 1, 1, count_include_pad=False),
    "avg_pool2d_int32": lambda m: m.nn.functional.avg_pool2d(
        m.arange(16, dtype=m.int32).reshape(1, 1, 4, 4), 2),
}


@pytest.mark.parametrize("case", list(_ERROR_CASES))
def test_errors_like_torch(case):
    result = raises_like_torch(_ERROR_CASES[case])
    if result is not None:
        got, want = result
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g.tolist()), np.asarray(w.tolist()))
            assert str(g.dtype)[-5:] == str(w.dtype)[-5:]


def test_sdpa_refuses_mixed_dtypes():
    """Query, key and value of different dtypes, or a mask that is not bool, float32 or
    query's dtype, are refused (PyTorch's validate_sdpa_input; fuzz seed 88234)."""
    cases = [((tp.bfloat16, tp.float16, tp.float16), None, "key"),
             ((tp.float16, tp.float16, tp.float32), None, "value"),
             ((tp.float32,) * 3, tp.int64, "attn_mask"),
             ((tp.float64,) * 3, tp.float16, "attn_mask")]
    for dtypes, mask_dtype, arg in cases:
        th = [torch.ones(2, 4, 2, dtype=getattr(torch, d.name)) for d in dtypes]
        th_mask = None if mask_dtype is None else torch.zeros(4, 4, dtype=getattr(
            torch, mask_dtype.name))
        with pytest.raises(RuntimeError):
            torch.nn.functional.scaled_dot_product_attention(*th, attn_mask=th_mask)
        q, k, v = (tp.ones(2, 4, 2, dtype=d) for d in dtypes)
        mask = None if mask_dtype is None else tp.zeros(4, 4, dtype=mask_dtype)
        with pytest.raises(DTypeError) as info:
            tp.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        assert info.value.arg == arg
    # float32 and query's own dtype are accepted as masks
    q = tp.ones(2, 4, 2, dtype=tp.float16)
    for mask_dtype in (tp.float32, tp.float16, tp.bool):
        tp.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=tp.ones(
            4, 4, dtype=mask_dtype))


# ---- flags and dtypes of results -----------------------------------------------------
def test_copy_of_a_float_requiring_grad_into_ints_does_not_require_grad():
    def run(m):
        a = m.zeros(3, dtype=m.int64)
        a.copy_(m.tensor([1.5, 2.0, -3.7], requires_grad=True))
        return a.requires_grad, a.is_leaf, a.tolist()

    assert run(tp) == run(torch)


def test_empty_list_index_is_an_int64_index():
    def run(m):
        x = m.arange(6.0).reshape(2, 3)
        y = x[[]]
        x[[]] = 5.0
        return tuple(y.shape), str(y.dtype)[-7:], tuple(x[:, []].shape), x.sum().item()

    assert run(tp) == run(torch)
