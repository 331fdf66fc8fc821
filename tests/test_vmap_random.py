"""vmap's `randomness` flag for random functions that see no batched tensor (creation
functions, random ops on tensors made inside the function), and `.data` of a
BatchedTensor; compared with torch.func.vmap's behaviour."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.func.batched import VmapError

B = 4
CREATORS = {
    "rand": (lambda m, v: m.rand(3), lambda m, v: m.rand(3)),
    "randn": (lambda m, v: m.randn(3), lambda m, v: m.randn(3)),
    "randint": (lambda m, v: m.randint(0, 1000, (3,)), lambda m, v: m.randint(0, 1000, (3,))),
    "randperm": (lambda m, v: m.randperm(6), lambda m, v: m.randperm(6)),
    "rand_like": (lambda m, v: m.rand_like(v), lambda m, v: m.rand_like(v)),
    "randn_like": (lambda m, v: m.randn_like(v), lambda m, v: m.randn_like(v)),
    "randint_like": (lambda m, v: m.randint_like(v, 1000), lambda m, v: m.randint_like(v, 1000)),
    "bernoulli": (lambda m, v: m.bernoulli(m.full((3,), 0.5)),
                  lambda m, v: m.bernoulli(m.full((3,), 0.5))),
    "bernoulli.p": (lambda m, v: m.bernoulli(m.ones(3), 0.5),
                    lambda m, v: m.bernoulli(m.ones(3), 0.5)),
    "dropout": (lambda m, v: m.nn.functional.dropout(m.ones(3)),
                lambda m, v: m.nn.functional.dropout(m.ones(3))),
    "normal": (lambda m, v: m.normal(0.0, 1.0, (3,)), lambda m, v: m.normal(0.0, 1.0, (3,))),
}


def _run(lib, f, randomness):
    x = lib.ones(B, 3)
    return lib.func.vmap(f, randomness=randomness)(x) if lib is torch else \
        tp.vmap(f, randomness=randomness)(x)


def _rows_equal(out):
    a = np.asarray(out.tolist())
    return all(np.array_equal(a[0], a[i]) for i in range(1, a.shape[0]))


@pytest.mark.parametrize("name", list(CREATORS))
def test_error_mode_raises_like_torch(name):
    tp_f, torch_f = CREATORS[name]
    with pytest.raises(RuntimeError, match="randomness error mode"):
        _run(torch, lambda v: torch_f(torch, v), "error")
    with pytest.raises(VmapError, match="called random operation .* randomness error mode"):
        _run(tp, lambda v: tp_f(tp, v), "error")


@pytest.mark.parametrize("name", list(CREATORS))
def test_same_draws_once_different_draws_per_example(name):
    tp_f, torch_f = CREATORS[name]
    for randomness in ("same", "different"):
        tp.manual_seed(0)
        ours = _run(tp, lambda v: tp_f(tp, v), randomness)
        torch.manual_seed(0)
        theirs = _run(torch, lambda v: torch_f(torch, v), randomness)
        assert tuple(ours.shape) == tuple(theirs.shape) == (B, *theirs.shape[1:])
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        assert _rows_equal(ours) == (randomness == "same")
        assert _rows_equal(theirs) == (randomness == "same")


def test_same_gives_torchs_numbers_and_different_the_batched_draw():
    # "same" draws what the function would draw outside vmap: torch's numbers, seeded
    tp.manual_seed(3)
    torch.manual_seed(3)
    ours = tp.vmap(lambda v: v + tp.randn(5), randomness="same")(tp.zeros(B, 5))
    theirs = torch.func.vmap(lambda v: v + torch.randn(5), randomness="same")(torch.zeros(B, 5))
    np.testing.assert_allclose(np.asarray(ours.tolist()), theirs.numpy(), rtol=1e-6)
    # "different" is one draw with the batch dim in front
    tp.manual_seed(5)
    ours = tp.vmap(lambda v: tp.rand(2, 3), randomness="different")(tp.zeros(B))
    tp.manual_seed(5)
    np.testing.assert_array_equal(np.asarray(ours.tolist()), tp.rand(B, 2, 3).tolist())


def test_result_is_unbatched_under_same_and_batched_under_different():
    seen = {}

    def f(v):
        r = tp.rand(2)
        seen["type"] = type(r).__name__
        return v + r
    tp.vmap(f, randomness="same")(tp.zeros(B, 2))
    assert seen["type"] == "Tensor"
    tp.vmap(f, randomness="different")(tp.zeros(B, 2))
    assert seen["type"] == "BatchedTensor"


def test_inplace_draw_into_unbatched_tensor():
    with pytest.raises(RuntimeError, match="different inplace randomness on an unbatched"):
        torch.func.vmap(lambda v: torch.ones(2).normal_(), randomness="different")(
            torch.ones(B, 2))
    with pytest.raises(VmapError, match="different inplace randomness on an unbatched"):
        tp.vmap(lambda v: tp.ones(2).normal_(), randomness="different")(tp.ones(B, 2))
    out = tp.vmap(lambda v: tp.ones(2).normal_(), randomness="same")(tp.ones(B, 2))
    assert _rows_equal(out)


def test_dropout_that_draws_nothing_is_allowed_in_error_mode():
    for f, g in ((lambda v: tp.nn.functional.dropout(tp.ones(2), training=False),
                  lambda v: torch.nn.functional.dropout(torch.ones(2), training=False)),
                 (lambda v: tp.nn.functional.dropout(tp.ones(2), p=0.0),
                  lambda v: torch.nn.functional.dropout(torch.ones(2), p=0.0))):
        assert tp.vmap(f)(tp.ones(B, 2)).tolist() == torch.func.vmap(g)(
            torch.ones(B, 2)).tolist()


def test_nested_levels_batch_only_the_different_ones():
    x = tp.zeros(3, B)
    out = tp.vmap(tp.vmap(lambda v: v + tp.rand(()), randomness="different"),
                  randomness="same")(x)
    a = np.asarray(out.tolist())
    assert out.shape == (3, B)
    assert (a == a[0]).all() and len(set(a[0].tolist())) == B
    out = tp.vmap(tp.vmap(lambda v: v + tp.rand(()), randomness="different"),
                  randomness="different")(x)
    assert len(set(np.asarray(out.tolist()).ravel().tolist())) == 3 * B
    with pytest.raises(VmapError, match="randomness error mode"):
        tp.vmap(tp.vmap(lambda v: v + tp.rand(()), randomness="same"))(x)


def test_chunked_and_outside_vmap_unchanged():
    out = tp.vmap(lambda v: v + tp.rand(()), randomness="different", chunk_size=2)(
        tp.zeros(5))
    assert len(set(out.tolist())) == 5
    tp.manual_seed(1)
    torch.manual_seed(1)
    assert tp.rand(4).tolist() == torch.rand(4).tolist()     # no vmap: plain draws
    assert tp._random.vmaps_running == 0


def test_data_of_a_batched_tensor_raises():
    x = torch.ones(B, 2)
    with pytest.raises(RuntimeError, match="accessing `data` under vmap"):
        torch.func.vmap(lambda v: v.data)(x)
    with pytest.raises(VmapError, match="accessing `data` under vmap"):
        tp.vmap(lambda v: v.data)(tp.ones(B, 2))

    def set_data(v):
        v.data = tp.zeros(2)
        return v
    with pytest.raises(VmapError, match="`.data` under vmap"):
        tp.vmap(set_data)(tp.ones(B, 2))


# ---- tp.normal (the functional forms), compared with torch.normal ----------------------
def _same_bits(ours, theirs):
    np.testing.assert_array_equal(np.asarray(ours.tolist(), np.float64),
                                  theirs.detach().double().numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_normal_forms_give_torchs_numbers(dtype):
    rng = np.random.default_rng(0)
    mean = rng.random((4, 5)).astype(dtype)
    std = (rng.random(5) + 0.5).astype(dtype)
    forms = [((0.5, 2.0, (3, 7)), {"dtype": getattr(tp, dtype)}, {"dtype": getattr(torch, dtype)}),
             (("m", 0.7), {}, {}), ((1.5, "s"), {}, {}), (("m", "s"), {}, {})]
    for args, tp_kw, torch_kw in forms:
        def pick(lib, a):
            return lib.tensor(mean) if a == "m" else lib.tensor(std) if a == "s" else a
        tp.manual_seed(7)
        torch.manual_seed(7)
        ours = tp.normal(*[pick(tp, a) for a in args], **tp_kw)
        theirs = torch.normal(*[pick(torch, a) for a in args], **torch_kw)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert ours.dtype.name == str(theirs.dtype).split(".")[-1]
        _same_bits(ours, theirs)


def test_normal_gradients_match_torch():
    m, s = np.random.default_rng(1).random((2, 3)), np.full(3, 0.5)
    tm = tp.tensor(m, requires_grad=True)
    ts = tp.tensor(s, requires_grad=True)
    pm = torch.tensor(m, requires_grad=True)
    ps = torch.tensor(s, requires_grad=True)
    tp.manual_seed(2)
    torch.manual_seed(2)
    # PyTorch's normal is not reparametrised: zero gradients for mean and std
    ours, theirs = tp.normal(tm, ts), torch.normal(pm, ps)
    _same_bits(ours, theirs)
    assert ours.requires_grad and theirs.requires_grad
    (ours * ours).sum().backward()
    (theirs * theirs).sum().backward()
    np.testing.assert_array_equal(tm.grad.tolist(), pm.grad.numpy())
    np.testing.assert_array_equal(ts.grad.tolist(), ps.grad.numpy())
    tm.grad = None
    tp.normal(tm, 0.5).sum().backward()
    assert tm.grad.tolist() == [[0.0] * 3] * 2


def test_normal_bad_input_raises_typed_errors():
    with pytest.raises(tp.errors.ArgumentError, match="std >= 0.0"):
        tp.normal(0.0, -1.0, (2,))
    with pytest.raises(tp.errors.ArgumentError, match="all elements of std >= 0.0"):
        tp.normal(0.0, tp.tensor([1.0, -1.0]))
    with pytest.raises(tp.errors.ArgumentError, match="'size' is required"):
        tp.normal(0.0, 1.0)
    with pytest.raises(tp.errors.DTypeError, match="'mean' must have a floating point"):
        tp.normal(tp.tensor([1, 2]), 1.0)
    with pytest.raises(tp.errors.ArgumentError, match="'size' is only accepted"):
        tp.normal(tp.ones(2), 1.0, (2,))
    with pytest.raises(tp.errors.ShapeError, match="do not broadcast"):
        tp.normal(tp.ones(2), tp.ones(3))


@pytest.mark.parametrize("form", ["mean", "std"])
def test_normal_of_batched_tensors_under_vmap(form):
    def call(lib, v):
        return lib.normal(v, 2.0) if form == "mean" else lib.normal(0.0, v)
    x = np.linspace(1.0, 2.0, B * 3).reshape(B, 3)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        torch.func.vmap(lambda v: call(torch, v))(torch.tensor(x))
    with pytest.raises(VmapError, match="randomness error mode"):
        tp.vmap(lambda v: call(tp, v))(tp.tensor(x))
    # "different": one draw per example, as torch
    tp.manual_seed(4)
    torch.manual_seed(4)
    ours = tp.vmap(lambda v: call(tp, v), randomness="different")(tp.tensor(x))
    theirs = torch.func.vmap(lambda v: call(torch, v), randomness="different")(torch.tensor(x))
    assert tuple(ours.shape) == tuple(theirs.shape) == (B, 3)
    noise = (np.asarray(ours.tolist()) - x) / 2.0 if form == "mean" else \
        np.asarray(ours.tolist()) / x
    assert not _rows_equal(tp.tensor(noise))
    # "same": torch refuses a batched tensor input here ("not currently support"); we
    # draw one noise for the batch, scaled and shifted by each example's mean and std
    ours = tp.vmap(lambda v: call(tp, v), randomness="same")(tp.tensor(x))
    noise = (np.asarray(ours.tolist()) - x) / 2.0 if form == "mean" else \
        np.asarray(ours.tolist()) / x
    np.testing.assert_allclose(noise, np.broadcast_to(noise[0], noise.shape), rtol=1e-12)
