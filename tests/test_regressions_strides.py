"""Output layouts that PyTorch documents through views and clone: each test builds the
same inputs in both libraries and compares `.stride()` of the result (over the dims of
size > 1, the ones a layout decides), plus the values. One test per root cause found by
the differential fuzzer (tests/fuzzing)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tensorplay as tp


def _pair(shape, perm=None, step=1, seed=0, low=-2.0, high=2.0):
    """The same float64 values in both libraries, stored with dims in `perm` order
    (fastest last) and every `step`-th element of the last dim."""
    rng = np.random.default_rng(seed)
    perm = perm or tuple(range(len(shape)))
    stored = [shape[d] for d in perm]
    stored[-1] *= step
    a = rng.uniform(low, high, stored)
    inv = tuple(int(i) for i in np.argsort(perm))
    tpx = tp.tensor(a).permute(inv)
    thx = torch.tensor(a).permute(inv)
    if step > 1:
        tpx, thx = _every(tpx, perm[-1], step), _every(thx, perm[-1], step)
    return tpx, thx


def _every(t, dim, step):
    index = [slice(None)] * t.dim()
    index[dim] = slice(None, None, step)
    return t[tuple(index)]


def _same_layout(a, b):
    assert tuple(a.shape) == tuple(b.shape)
    got = [s for s, n in zip(a.stride(), a.shape) if n > 1]
    want = [s for s, n in zip(b.stride(), b.shape) if n > 1]
    assert got == want, f"strides {a.stride()}, PyTorch {b.stride()}"
    np.testing.assert_allclose(a.detach().numpy().astype(np.float64),
                               b.detach().numpy().astype(np.float64), rtol=1e-6)


# ---- flip copies into empty_like(self): rot90 and fliplr follow ---------------------------
@pytest.mark.parametrize("call", [
    lambda m, x: m.flip(x, [0]), lambda m, x: m.flip(x, [0, 1]), lambda m, x: m.fliplr(x),
    lambda m, x: m.rot90(x, 1), lambda m, x: m.rot90(x, 2), lambda m, x: m.rot90(x, 3),
    lambda m, x: m.rot90(x, 0),
])
@pytest.mark.parametrize("layout", [dict(perm=(1, 0)), dict(step=2), dict(perm=(1, 0), step=2)])
def test_flip_keeps_self_layout(call, layout):
    x, xt = _pair((3, 4), **layout)
    _same_layout(call(tp, x), call(torch, xt))


# ---- binary ops whose iterator takes its inputs in another order than the schema ---------
def test_threshold_backward_follows_self_then_grad():
    g, gt = _pair((3, 4))
    x, xt = _pair((3, 4), perm=(1, 0), seed=1)
    _same_layout(tp.threshold_backward(g, x, 0), torch.ops.aten.threshold_backward(gt, xt, 0))
    _same_layout(tp.threshold_backward(x, g, 0), torch.ops.aten.threshold_backward(xt, gt, 0))


def test_binary_cross_entropy_follows_self():
    x, xt = _pair((3, 4), low=0.1, high=0.9)
    y, yt = _pair((3, 4), perm=(1, 0), seed=1, low=0.0, high=1.0)
    for a, at, b, bt in ((x, xt, y, yt), (y, yt, x, xt)):
        _same_layout(tp.nn.functional.binary_cross_entropy(a, b, reduction="none"),
                     torch.nn.functional.binary_cross_entropy(at, bt, reduction="none"))


def test_binary_cross_entropy_with_logits_follows_target():
    x, xt = _pair((3, 4))
    y, yt = _pair((3, 4), perm=(1, 0), seed=1, low=0.0, high=1.0)
    w, wt = _pair((3, 4), step=2, seed=2)
    for a, at, b, bt in ((x, xt, y, yt), (y, yt, x, xt)):
        _same_layout(tp.nn.functional.binary_cross_entropy_with_logits(a, b, reduction="none"),
                     torch.nn.functional.binary_cross_entropy_with_logits(at, bt,
                                                                          reduction="none"))
    _same_layout(
        tp.nn.functional.binary_cross_entropy_with_logits(x, y, weight=w, reduction="none"),
        torch.nn.functional.binary_cross_entropy_with_logits(xt, yt, weight=wt,
                                                             reduction="none"))


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_fmin_are_laid_out_as_a_binary_op(name):
    x, xt = _pair((3, 4), perm=(1, 0))
    y, yt = _pair((3, 4), step=2, seed=1)
    with tp.no_grad():
        x[0, 1] = float("nan")
        y[0, 1] = float("nan")
        y[2, 2] = float("nan")
    xt[0, 1] = yt[0, 1] = yt[2, 2] = float("nan")
    for a, at, b, bt in ((x, xt, y, yt), (y, yt, x, xt)):
        _same_layout(getattr(tp, name)(a, b), getattr(torch, name)(at, bt))


def test_fmax_gradient_goes_to_self_where_both_are_nan():
    a = [[float("nan"), 1.0], [2.0, float("nan")]]
    b = [[float("nan"), float("nan")], [1.0, 5.0]]
    x, y = tp.tensor(a, requires_grad=True), tp.tensor(b, requires_grad=True)
    xt, yt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    tp.fmax(x, y).sum().backward()
    torch.fmax(xt, yt).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())
    np.testing.assert_array_equal(y.grad.numpy(), yt.grad.numpy())


def test_isin_with_a_scalar_is_row_major():
    x, xt = _pair((3, 4), perm=(1, 0))
    for invert in (False, True):
        got = tp.isin(x, 2.0, invert=invert)
        want = torch.isin(xt, 2.0, invert=invert)
        assert got.stride() == want.stride()
        np.testing.assert_array_equal(got.numpy(), want.numpy())


# ---- unique(dim): PyTorch works with dim moved first and moves it back --------------------
@pytest.mark.parametrize("shape", [(2, 3, 2), (3, 1, 2), (2, 5)])
def test_unique_dim_layout(shape):
    a = np.random.default_rng(0).integers(0, 2, shape).astype(np.float32)
    for dim in range(len(shape)):
        got = tp.unique(tp.tensor(a), dim=dim)
        want = torch.unique(torch.tensor(a), dim=dim)
        _same_layout(got, want)


# ---- advanced indexing: a pointwise iterator over restrided self and the indices ----------
_INDICES = [
    ([1, 0],), (slice(None), [0, 1]), (slice(None), slice(None), [0, 2, 1]), ([0, 1], [1, 0]),
    ([[0], [1]],), ([0, 1], slice(None), [1, 0]), (slice(None), [[0, 1], [1, 0]]),
    (None, [1, 0]), (Ellipsis, [1]), ("mask",), (0, [1, 0]),
]


@pytest.mark.parametrize("index", _INDICES, ids=str)
@pytest.mark.parametrize("perm", [(0, 1, 2), (2, 1, 0), (1, 2, 0), (0, 2, 1)])
def test_advanced_index_layout(index, perm):
    x, xt = _pair((2, 3, 4), perm=perm)
    mask = np.arange(6).reshape(2, 3) % 3 != 1

    def key(m):
        return tuple(m.tensor(mask) if i == "mask" else i for i in index)

    _same_layout(x[key(tp)], xt[key(torch)])


def test_advanced_index_with_a_transposed_index_tensor():
    x, xt = _pair((2, 3, 4), perm=(2, 0, 1))
    idx = [[0, 1, 1], [1, 0, 0]]
    _same_layout(x[:, tp.tensor(idx).t()], xt[:, torch.tensor(idx).t()])


# ---- size-1 and empty dims of views: PyTorch's formulas -----------------------------------
def test_view_of_an_empty_tensor_keeps_its_strides():
    assert tp.ones(0, 3).t().reshape(3, 0).stride() == torch.ones(0, 3).t().reshape(3, 0).stride()


@pytest.mark.parametrize("source, target", [((3,), (1, 3)), ((3,), (2, 1, 3)), ((2, 1), (1, 2, 4)),
                                            ((), (1,)), ((), (1, 1))])
def test_expand_strides_of_new_size_one_dims(source, target):
    assert tp.ones(source).expand(*target).stride() == \
        torch.ones(source).expand(*target).stride()


# ---- einsum: PyTorch's pairwise bmm decides the layout ------------------------------------
@pytest.mark.parametrize("equation, shapes, perms", [
    ("...ij,...jk", [(2, 1, 2, 3), (3, 3, 2)], [(0, 1, 3, 2), (0, 2, 1)]),   # the fuzzer's
    ("ij,kj->ki", [(3, 4), (5, 4)], [(0, 1), (0, 1)]),       # the operands swap in bmm
    ("ij,jk->ki", [(3, 4), (4, 5)], [(1, 0), (0, 1)]),
    ("bi,bj->bij", [(2, 3), (2, 4)], [(1, 0), (0, 1)]),      # no dim summed: a product
    ("ab,bc,cd->da", [(2, 3), (3, 4), (4, 2)], [(0, 1), (1, 0), (0, 1)]),
    ("ij->", [(3, 4)], [(1, 0)]),
])
def test_einsum_layout(equation, shapes, perms):
    pairs = [_pair(s, perm=p, seed=i) for i, (s, p) in enumerate(zip(shapes, perms))]
    _same_layout(tp.einsum(equation, *[a for a, _ in pairs]),
                 torch.einsum(equation, *[b for _, b in pairs]))


def test_empty_index_result_has_torch_strides_and_takes_in_place_writes():
    x, xt = tp.zeros(3, 0, 2).transpose(0, 2), torch.zeros(3, 0, 2).transpose(0, 2)
    y, yt = x[[1, 0, 1]], xt[[1, 0, 1]]
    assert y.stride() == yt.stride()        # (0, 1, 0): no element, any stride
    y.neg_()                                # PyTorch writes into it: no overlap to refuse
    yt.neg_()


def test_where_with_a_uint8_condition_follows_its_bool_copy():
    import warnings
    results = []
    for m in (tp, torch):
        c = m.tensor([[1], [0], [2]], dtype=m.uint8).expand(3, 4)
        a = m.tensor(np.arange(12).reshape(4, 3), dtype=m.int16).t()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # PyTorch: uint8 conditions are deprecated
            results.append(m.where(c, a, m.zeros(3, 4, dtype=m.int16)))
    got, want = results
    assert got.stride() == want.stride()
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# ---- results keep their inputs' layout (clone's preserve_format, TensorIterator) -----
_LAYOUTS = {
    "transposed": lambda t: t.transpose(0, 2),
    "permuted": lambda t: t.permute(1, 2, 0),
    "last_two": lambda t: t.transpose(1, 2),
    "sliced": lambda t: t.transpose(0, 2)[::2],            # not dense: dense in its order
    "size_one": lambda t: t[:, :1].permute(2, 1, 0),
    "expanded": lambda t: t[:1].expand(3, 3, 4),
}
_OPS = {
    "clone": lambda m, x: x.clone(),
    "exp": lambda m, x: x.exp(),
    "neg": lambda m, x: -x,
    "sigmoid": lambda m, x: m.sigmoid(x),
    "add_self": lambda m, x: x + x,
    "mul_scalar": lambda m, x: x * 3,
    "lt": lambda m, x: x < x * 2,
    "where": lambda m, x: m.where(x > 0, x, -x),
    "add_contiguous": lambda m, x: x + x.contiguous(),
    "contiguous_add": lambda m, x: x.contiguous() + x,
    "broadcast": lambda m, x: x + m.ones(x.shape[-1]),
}


@pytest.mark.parametrize("layout", list(_LAYOUTS))
@pytest.mark.parametrize("op", list(_OPS))
def test_result_strides_follow_the_inputs_like_torch(op, layout):
    data = np.arange(48, dtype=np.float32).reshape(2, 6, 4) - 20
    t = _OPS[op](torch, _LAYOUTS[layout](torch.tensor(data).reshape(2, 6, 4)[:, :3]))
    p = _OPS[op](tp, _LAYOUTS[layout](tp.tensor(data).reshape(2, 6, 4)[:, :3]))
    assert p.stride() == t.stride()
    assert p.is_contiguous() == t.is_contiguous()
    np.testing.assert_allclose(np.asarray(p.tolist()), t.numpy(), rtol=1e-6)


def test_contiguous_of_a_transposed_clone_copies_like_torch():
    def run(m):
        y = m.arange(6.0).reshape(2, 3).t().clone()
        z = y.contiguous()
        r = y.reshape(6)
        return (z.data_ptr() == y.data_ptr(), z.stride(), r.data_ptr() == y.data_ptr(),
                y.clone(memory_format=m.contiguous_format).stride())

    assert run(tp) == run(torch)


@pytest.mark.parametrize("fmt", ["contiguous_format", "preserve_format", "channels_last"])
def test_clone_memory_format_like_torch(fmt):
    data = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)

    def run(m):
        x = m.tensor(data).permute(0, 2, 3, 1).transpose(1, 2)
        x.requires_grad_()
        y = x.clone(memory_format=getattr(m, fmt))
        (y * y).sum().backward()
        return y.stride(), y.tolist(), x.grad.tolist()

    assert run(tp) == run(torch)
    with pytest.raises(tp.errors.ShapeError, match="rank 4"):
        tp.ones(3).clone(memory_format=tp.channels_last)


@pytest.mark.parametrize("shape,dim", [((4, 3), 1), ((4, 3), 0), ((2, 3, 4), 1),
                                       ((2, 3, 4), 2)])
def test_unique_consecutive_along_a_dim_is_laid_out_as_unique_dim(shape, dim):
    """PyTorch finds the runs with dim moved to the front and moves it back: the values
    keep that layout (seed 986544 saw row-major strides)."""
    x = torch.arange(24.0)[:int(np.prod(shape))].reshape(shape)
    x[..., 0] = 1
    theirs = torch.unique_consecutive(x, dim=dim)
    ours = tp.unique_consecutive(tp.tensor(x.numpy()), dim=dim)
    assert ours.stride() == theirs.stride() and ours.tolist() == theirs.tolist()


@pytest.mark.parametrize("make", ["transposed", "sliced"])
def test_isreal_of_a_real_tensor_is_laid_out_as_ones_like(make):
    """PyTorch's isreal of a real tensor is ones_like(self, bool): the input's layout
    (seed 1027475 saw row-major strides after a transposed int32 input)."""
    def base(lib):
        x = lib.zeros(4, 3, dtype=lib.int32).t() if make == "transposed" else \
            lib.zeros(4, 6)[:, ::2]
        return lib.isreal(x)
    ours, theirs = base(tp), base(torch)
    assert ours.stride() == theirs.stride() and ours.tolist() == theirs.tolist()


@pytest.mark.parametrize("device", ["cpu", "meta", "cuda"])
def test_angle_of_a_complex_tensor_is_row_major(device):
    """PyTorch's complex angle writes into a fresh out= tensor, which TensorIterator makes
    row-major; a real input's angle and a complex input's abs are ordinary pointwise ops
    and keep the input's layout (seed 255056: a transposed complex128 input)."""
    a = np.random.default_rng(0).uniform(-2, 2, (4, 3))
    tpx, thx = tp.tensor(a, device=device).t(), torch.tensor(a).t()
    tpz, thz = tpx * (1 + 2j), thx * (1 + 2j)
    assert tpz.stride() == thz.stride() == (1, 3)
    for fn in ("angle", "abs"):
        for ours, theirs in ((getattr(tp, fn)(tpz), getattr(torch, fn)(thz)),
                             (getattr(tp, fn)(tpx), getattr(torch, fn)(thx))):
            assert ours.stride() == theirs.stride(), (fn, ours.stride(), theirs.stride())
            if device != "meta":
                np.testing.assert_allclose(ours.cpu().numpy(), theirs.numpy(), rtol=1e-15)


@pytest.mark.parametrize("make", ["transposed", "sliced", "expanded"])
@pytest.mark.parametrize("call", ["pow", "rpow"])
@pytest.mark.parametrize("base", [2.0, 2, 1.0])
def test_pow_of_a_number_base_is_row_major(make, call, base):
    """PyTorch's pow.Scalar (pow(number, tensor), and `number ** tensor`) allocates its
    output with the exponent's sizes and no strides, then redispatches: the result is
    row-major, not in the exponent's memory order (seed 2050640: a transposed int64
    exponent, then an expand)."""
    def result(lib):
        x = lib.arange(12).reshape(4, 3).t() if make == "transposed" else \
            lib.arange(24).reshape(4, 6)[:, ::2] if make == "sliced" else \
            lib.arange(3).expand(4, 3)
        x = x.double().requires_grad_() if isinstance(base, float) else x
        out = lib.pow(base, x) if call == "pow" else base ** x
        return x, out
    (tpx, ours), (thx, theirs) = result(tp), result(torch)
    assert ours.stride() == theirs.stride(), (ours.stride(), theirs.stride())
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-15)
    if thx.requires_grad:
        ours.sum().backward()
        theirs.sum().backward()
        np.testing.assert_allclose(tpx.grad.numpy(), thx.grad.numpy(), rtol=1e-14)
