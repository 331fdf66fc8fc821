"""Regressions for the error-path mismatches of the differential fuzzer (issue 35): each
reduced to a few lines and checked against torch, the result or the error."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay import errors


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


# ---- 1. Tensor[] results: tuples, and a sequence of one through tp.compile --------------
SEQUENCE_OPS = {
    "split": lambda m, x: m.split(x, 2),
    "split_sizes": lambda m, x: m.split(x, [1, 2]),
    "chunk": lambda m, x: m.chunk(x, 2),
    "tensor_split": lambda m, x: m.tensor_split(x, [1]),
    "hsplit": lambda m, x: m.hsplit(x, 2),
    "vsplit": lambda m, x: m.vsplit(x, [1]),
    "split_with_sizes": lambda m, x: m.split_with_sizes(x, [1, 2]),
    "unbind": lambda m, x: m.unbind(x, 0),
    "broadcast_tensors": lambda m, x: m.broadcast_tensors(x, x[:1]),
    "meshgrid": lambda m, x: m.meshgrid(x[0], x[1], indexing="ij"),
    "atleast_1d": lambda m, x: m.atleast_1d(x[0, 0], x),
    "atleast_2d": lambda m, x: m.atleast_2d([x[0], x]),
    "unravel_index": lambda m, x: m.unravel_index(m.tensor([3, 5]), (2, 3)),
    "method split": lambda m, x: x.split(2, 1),
    "method chunk": lambda m, x: x.chunk(3, 1),
}


@pytest.mark.parametrize("name", sorted(SEQUENCE_OPS))
def test_tensor_list_results_are_tuples(name):
    fn = SEQUENCE_OPS[name]
    want = fn(torch, torch.arange(12.).reshape(3, 4))
    got = fn(tp, tp.arange(12.).reshape(3, 4))
    assert type(got) is type(want) is tuple
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(_np(g), _np(w))


@pytest.mark.parametrize("requires_grad", [False, True])
def test_compiled_sequence_of_one(requires_grad):
    """unravel_index into a one-dim shape (an unbind of one): the lowered line unpacks
    the op's one-element list (seeds 905212, 912722, 920687 returned [(t,)])."""
    def f(lib, x, i):
        coords = lib.unravel_index(i, (5,))
        return coords, [t * 2 for t in x.split(5)], x[:0].unbind(0)
    want = f(torch, torch.ones(3), torch.tensor(3))
    compiled = tp.compile(lambda x, i: f(tp, x, i))
    x = tp.ones(3, requires_grad=requires_grad)
    for _ in range(2):          # the first call captures, the second runs the lowered graph
        got = compiled(x, tp.tensor(3))
        assert len(got[0]) == 1 and isinstance(got[0][0], tp.Tensor)
        np.testing.assert_array_equal(_np(got[0][0]), _np(want[0][0]))
        assert len(got[1]) == 1
        np.testing.assert_array_equal(_np(got[1][0]), _np(want[1][0]))
        assert got[2] == () and want[2] == ()
    if requires_grad:
        got[1][0].sum().backward()
        np.testing.assert_array_equal(_np(x.grad), [2., 2., 2.])


# ---- 2. forward mode: a bool input's missing tangent -------------------------------------
@pytest.mark.parametrize("op", ["minimum", "maximum", "fmin", "fmax", "where"])
def test_jvp_with_a_bool_operand(op):
    """min(float requiring grad, bool) (seed 921838): the bool input's zero tangent took
    part in `self_t - other_t` as bool zeros, which sub refuses; PyTorch's zero tensor
    is not refused."""
    import torch.autograd.forward_ad as fwAD
    xs = np.array([-1., 0.5, 1., 2.], dtype=np.float32)
    bs = np.array([[True, False, True, True], [False, False, True, False]])

    def call(lib, x, b):
        return lib.where(b, x, b) if op == "where" else getattr(lib, op)(x, b)
    with fwAD.dual_level():
        x = fwAD.make_dual(torch.tensor(xs), torch.tensor([1., 2., 3., 4.]))
        want_p, want_t = fwAD.unpack_dual(call(torch, x, torch.tensor(bs)))
    b = tp.tensor(bs)
    got_p, got_t = tp.func.jvp(lambda x: call(tp, x, b), (tp.tensor(xs),),
                               (tp.tensor([1., 2., 3., 4.]),))
    assert got_t.dtype == tp.float32 and want_t.dtype == torch.float32
    np.testing.assert_array_equal(_np(got_p), _np(want_p))
    np.testing.assert_array_equal(_np(got_t), _np(want_t))


# ---- 3. gradient: an integer self promotes with its coordinates --------------------------
@pytest.mark.parametrize("coords", ["float16", "bfloat16", "float64", "int64"])
@pytest.mark.parametrize("self_dtype", ["int64", "int8", "float16"])
@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_dtype_of_integer_self(coords, self_dtype, edge_order):
    """gradient(int64, spacing=[float16 coordinates]) (seed 930435): PyTorch's result is
    float16 (the int samples times float16 weights); TensorPlay cast self to float32
    first."""
    x = np.array([[1, 4, 9], [2, 3, 8], [7, 1, 0], [5, 5, 5], [0, 2, 9]])
    c = np.array([0., 1., 3., 4., 7.])
    got, want = (lib.gradient(lib.tensor(x, dtype=getattr(lib, self_dtype)),
                              spacing=[lib.tensor(c, dtype=getattr(lib, coords))], dim=0,
                              edge_order=edge_order)[0] for lib in (tp, torch))
    assert got.dtype.name == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.to(tp.float64).numpy(), want.double().numpy(),
                               rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("spacing", [None, 2, 2.5])
def test_gradient_of_integer_self_by_a_number(spacing):
    x = np.array([[1, 4, 9], [2, 3, 8], [7, 1, 0], [5, 5, 5]])
    kw = {} if spacing is None else {"spacing": spacing}
    for edge_order in (1, 2):
        got, want = (lib.gradient(lib.tensor(x), edge_order=edge_order, **kw)
                     for lib in (tp, torch))
        for g, w in zip(got, want):
            assert g.dtype == tp.float32 and w.dtype == torch.float32
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)


# ---- 4. index_put_ with a mask and one value: PyTorch's masked_fill_ path -----------------
def _outcome(fn):
    """('ok', dtype name, values) or ('raises',)."""
    try:
        r = fn()
    except Exception:       # noqa: BLE001 - either library's error: compared by kind
        return ("raises",)
    return ("ok", str(r.dtype).split(".")[-1], _np(r.to(torch.complex128 if isinstance(
        r, torch.Tensor) else tp.complex128)).tolist())


INDEX_PUT_CASES = [
    # (self dtype, self shape, index, value dtype, value shape, value, accumulate)
    ("float64", (4,), "mask", "bool", (), True, False),              # seed 914661
    ("float64", (4,), "mask", "bool", (1,), True, False),
    ("float32", (4,), "mask", "float64", (1, 1, 1), 2.5, False),
    ("int32", (4,), "mask", "float32", (), 3.7, False),
    ("uint8", (4,), "mask", "int64", (), -1, False),
    ("bool", (4,), "mask", "float32", (), 3.7, False),
    ("complex64", (4,), "mask", "bool", (), True, False),
    ("float16", (4,), "mask", "float32", (), 1e6, False),             # overflows
    ("float32", (4,), "mask", "complex64", (), 1 + 2j, False),        # not real
    ("int64", (4,), "mask", "float32", (), float("nan"), False),      # not an integer
    ("float32", (4,), "uint8 mask", "float32", (), 2.0, False),      # masked_fill_ refuses
    ("float32", (4, 2), "mask", "bool", (), True, False),             # the mask broadcast
    ("float32", (2, 4), "None, mask", "int64", (), 7, False),
    ("float64", (4,), "mask", "bool", (), True, True),                # accumulate: no fill
    ("float64", (4,), "mask", "bool", (2,), True, False),             # two values: no fill
    ("float64", (4,), "int", "bool", (), True, False),                # an integer index
    ("float64", (4,), "mask", "float64", (3,), 1.0, False),           # a wrong count
]


def _index_put_case(lib, case, inplace):
    self_dtype, shape, index, value_dtype, vshape, value, accumulate = case
    x = lib.zeros(shape, dtype=getattr(lib, self_dtype))
    mask = lib.tensor([True, False, True, False])
    indices = {"mask": (mask,), "uint8 mask": (mask.to(lib.uint8),),
               "None, mask": (None, mask), "int": (lib.tensor([0, 2]),)}[index]
    v = lib.full(vshape, value, dtype=getattr(lib, value_dtype))
    if indices[0] is None:      # (torch's index_put_ takes no None: x[:, mask] = v)
        x = x.clone() if not inplace else x
        x[:, mask] = v
        return x
    if inplace:
        return x.index_put_(indices, v, accumulate=accumulate)
    return x.index_put(indices, v, accumulate=accumulate)


@pytest.mark.parametrize("inplace", [True, False])
@pytest.mark.parametrize("case", INDEX_PUT_CASES, ids=lambda c: "-".join(map(str, c)))
def test_index_put_of_one_value_through_a_mask(case, inplace):
    want = _outcome(lambda: _index_put_case(torch, case, inplace))
    got = _outcome(lambda: _index_put_case(tp, case, inplace))
    assert got == want


def test_index_put_of_one_value_through_a_mask_raises_typed():
    with pytest.raises(errors.DTypeError, match="bool masks"):
        tp.zeros(4).index_put_((tp.tensor([1, 0, 1, 0], dtype=tp.uint8),), tp.tensor(2.))
    with pytest.raises(errors.DTypeError, match="overflow"):
        tp.zeros(4, dtype=tp.float16).index_put_((tp.tensor([True, False, True, False]),),
                                                 tp.tensor(1e6))


def test_index_put_of_one_value_through_a_mask_gradient():
    got, want = [], []
    for lib, out in ((tp, got), (torch, want)):
        v = lib.tensor(3., requires_grad=True)
        x = lib.zeros(4, dtype=lib.float64, requires_grad=True)
        y = x.clone().index_put_((lib.tensor([True, False, True, True]),), v)
        (y * lib.arange(4, dtype=lib.float64)).sum().backward()
        out += [y, x.grad, v.grad]
    for g, w in zip(got, want):
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        np.testing.assert_array_equal(_np(g), _np(w))


# ---- 5. binary_cross_entropy_with_logits: complex weights, a bool pos_weight -------------
@pytest.mark.parametrize("which", ["weight", "pos_weight"])
@pytest.mark.parametrize("wdtype", ["bool", "int64", "float16", "float64", "complex64",
                                    "complex128"])
def test_bce_with_logits_weight_dtypes(which, wdtype):
    """A complex pos_weight (seed 936322) or weight: PyTorch multiplies the real loss by it
    in place and raises; a bool pos_weight: PyTorch's pos_weight - 1 raises."""
    def call(lib):
        x = lib.tensor([[0.5, -1.], [2., 0.]], dtype=lib.float64)
        t = lib.tensor([[1., 0.], [0.5, 1.]], dtype=lib.float64)
        w = lib.tensor([1, 2]).to(getattr(lib, wdtype))
        return lib.nn.functional.binary_cross_entropy_with_logits(x, t, reduction="none",
                                                                  **{which: w})
    try:
        want = call(torch)
    except RuntimeError:
        with pytest.raises(errors.DTypeError, match=which):
            call(tp)
        return
    got = call(tp)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-6)


# ---- 6. adaptive pooling of inputs with an empty dim --------------------------------------
ADAPTIVE_SHAPES = {1: [(1, 0, 4), (0, 3, 4), (2, 3, 0), (3, 0), (0, 0, 4)],
                   2: [(1, 0, 4, 3), (0, 2, 4, 3), (1, 2, 0, 3), (2, 0, 3), (2, 3, 0)],
                   3: [(1, 0, 4, 3, 3), (0, 2, 4, 3, 3), (1, 2, 4, 0, 3), (2, 0, 3, 3),
                       (2, 2, 3, 0)]}


@pytest.mark.parametrize("kind", ["avg", "max"])
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("output_size", [1, 2])
def test_adaptive_pooling_of_empty_dims(kind, nd, output_size):
    """PyTorch's checks (seed 922854: the 3-D average of a channel-empty input): the 2-D
    average checks its spatial dims, the 3-D average and the max every dim but the
    first; an average to 1 is a mean (NaN of an empty dim), forward and backward,
    unchecked."""
    for shape in ADAPTIVE_SHAPES[nd]:
        results = []
        for lib in (torch, tp):
            x = lib.ones(shape, dtype=lib.float64, requires_grad=True)
            fn = getattr(lib.nn.functional, f"adaptive_{kind}_pool{nd}d")
            try:
                r = fn(x, output_size)
            except Exception as e:      # noqa: BLE001 - compared by kind below
                results.append(("forward", e))
                continue
            r = r[0] if isinstance(r, tuple) else r
            try:
                r.sum().backward()
            except Exception as e:      # noqa: BLE001
                results.append(("backward", e))
                continue
            results.append((r.detach(), x.grad))
        want, got = results
        if isinstance(want[1], Exception):
            assert got[0] == want[0] and isinstance(got[1], errors.ShapeError), (shape, got)
            continue
        assert not isinstance(got[1], Exception), (shape, got)
        for g, w in zip(got, want):
            assert tuple(g.shape) == tuple(w.shape), shape
            np.testing.assert_array_equal(_np(g), _np(w))


# ---- 7. addbmm of no batches of another dtype ----------------------------------------------
@pytest.mark.parametrize("batch_dtype", ["float32", "int64", "float64"])
@pytest.mark.parametrize("batches", [0, 2])
@pytest.mark.parametrize("inplace", [False, True])
def test_addbmm_batches_of_another_dtype(batch_dtype, batches, inplace):
    """addbmm(float64 self, float32 empty batches) (seed 903299): PyTorch returns
    beta * self before its dtype check; with batches it raises."""
    def call(lib):
        s = lib.full((2, 3), 1.5, dtype=lib.float64)
        b1 = lib.ones(batches, 2, 4, dtype=getattr(lib, batch_dtype))
        b2 = lib.ones(batches, 4, 3, dtype=getattr(lib, batch_dtype))
        return s.addbmm_(b1, b2, beta=2) if inplace else lib.addbmm(s, b1, b2, beta=2)
    try:
        want = call(torch)
    except RuntimeError:
        with pytest.raises(errors.DTypeError):
            call(tp)
        return
    got = call(tp)
    assert got.dtype == tp.float64
    np.testing.assert_array_equal(_np(got), _np(want))


# ---- 8. scaled_dot_product_attention with nothing to mask ---------------------------------
SDPA_SHAPES = [   # query, key, value
    ((1, 0, 2), (1, 4, 2), (1, 4, 2)),      # seed 930851: an empty query
    ((0, 2, 2), (0, 4, 2), (0, 4, 2)),      # an empty batch
    ((1, 2, 2), (1, 0, 2), (1, 0, 2)),      # no keys
    ((1, 2, 2), (1, 4, 2), (1, 4, 0)),      # an empty value head dim
    ((1, 0, 0), (1, 4, 0), (1, 4, 2)),      # an empty query and head dim
    ((1, 2, 0), (1, 4, 0), (1, 4, 2)),      # an empty head dim: zero scores, masked
    ((1, 2, 2), (1, 4, 2), (1, 4, 2)),
    ((2, 1, 0, 2), (2, 1, 4, 2), (2, 1, 4, 2)),
]


@pytest.mark.parametrize("shapes", SDPA_SHAPES, ids=str)
@pytest.mark.parametrize("mask", [(3, 4), (3, 5), (2, 3, 4), (1, 4), "int64"])
def test_sdpa_mask_of_empty_attention(shapes, mask):
    def call(lib):
        q, k, v = (lib.ones(s, dtype=lib.float64) for s in shapes)
        m = lib.ones((3, 4), dtype=lib.int64) if mask == "int64" else \
            lib.ones(mask, dtype=lib.bool)
        return lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m)
    try:
        want = call(torch)
    except RuntimeError:
        with pytest.raises((errors.ShapeError, errors.DTypeError)):
            call(tp)
        return
    got = call(tp)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(_np(got), _np(want))


# ---- 9. addcdiv with a bool or integer tensor2: PyTorch's backward raises (KNOWN) ---------
@pytest.mark.parametrize("dtype", ["bool", "int64", "uint8"])
def test_addcdiv_backward_of_an_integer_tensor2(dtype):
    """PyTorch's tensor1 formula `value / tensor2` is ATen's Scalar / Tensor, computed in
    place in tensor2's dtype, and raises (seeds 907276, 934829; KNOWN in the fuzzer).
    TensorPlay's gradient is that of the forward PyTorch computes: the one PyTorch gives
    for the same tensor2 as float."""
    t2 = np.array([1, 2, 0]) if dtype != "bool" else np.array([True, True, False])
    grads = {}
    for lib, t2_dtype in ((tp, dtype), (torch, dtype), (torch, "float32")):
        x = lib.ones(3, requires_grad=True)
        y = lib.tensor([1., -2., 3.], requires_grad=True)
        out = lib.addcdiv(x, y, lib.tensor(t2).to(getattr(lib, t2_dtype)), value=0.5)
        try:
            out.backward(lib.tensor([1., 2., 3.]))
        except RuntimeError as e:
            assert lib is torch and "desired output type" in str(e)
            continue
        grads[(lib.__name__, t2_dtype)] = (_np(out), _np(x.grad), _np(y.grad))
    want = grads.get(("torch", dtype), grads[("torch", "float32")])
    for g, w in zip(grads[("tensorplay", dtype)], want):
        np.testing.assert_allclose(g, w)


def test_index_put_of_a_value_of_more_dims_through_a_mask_backward():
    """The [1, 1, 1] value written through a mask (the masked_fill_ path) takes a gradient
    of the indexed shape [3], which cannot be summed to [1, 1, 1]: PyTorch's engine
    refuses it; TensorPlay's sum_to indexed past the gradient's dims (IndexError)."""
    for lib, error in ((torch, RuntimeError), (tp, errors.AutogradError)):
        v = lib.full((1, 1, 1), 2.0, requires_grad=True)
        x = lib.zeros(4, dtype=lib.float64, requires_grad=True)
        y = x.clone().index_put_((lib.tensor([True, False, True, True]),), v)
        with pytest.raises(error, match="invalid gradient at index 1"):
            y.backward(lib.arange(4, dtype=lib.float64))


def test_lerp_of_0dim_tensors_promotes_the_weight():
    """A 0-d weight is a number to lerp (cast, never promoting) unless self and end are
    0-d too: then the three promote alike (float16 ones with a float64 weight give float64,
    fuzz seed 1102237)."""
    import torch
    for shapes in [((), (), ()), ((2,), (2,), ()), ((), (), (2,))]:
        got, want = [], []
        for lib, into in ((tp, got), (torch, want)):
            try:
                r = lib.lerp(lib.ones(shapes[0], dtype=lib.float16),
                             lib.full(shapes[1], 3.0, dtype=lib.float16),
                             lib.full(shapes[2], 0.25, dtype=lib.float64))
                into.append((str(r.dtype).split(".")[-1], r.tolist()))
            except Exception:  # noqa: BLE001 - both must refuse alike
                into.append("raises")
        assert got == want, shapes
