"""PyTorch's keyword forms at the generated front doors, against PyTorch itself:
the first argument by the name `input`, `out=`, and the NumPy names `axis`/`keepdims`."""
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError

RNG = np.random.default_rng(0)


def arrays(*shapes):
    return [RNG.standard_normal(s).astype(np.float32) for s in shapes]


def both(*values):
    """Each NumPy array as a (tensorplay, torch) pair of tensors."""
    return [(tp.tensor(v), torch.tensor(v)) for v in values]


def close(actual, expected):
    if isinstance(expected, tuple):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            close(a, e)
        return
    assert tuple(actual.shape) == tuple(expected.shape)
    assert str(actual.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_allclose(actual.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)


# ---- input= ---------------------------------------------------------------------------------
INPUT_CALLS = [
    ("add", lambda m, x, y: m.add(input=x, other=y)),
    ("add alpha", lambda m, x, y: m.add(input=x, other=y, alpha=2)),
    ("mul", lambda m, x, y: m.mul(x, other=y)),
    ("matmul", lambda m, x, y: m.matmul(input=x, other=y.T)),
    ("mm", lambda m, x, y: m.mm(input=x, mat2=y.T)),
    ("sum dim", lambda m, x, y: m.sum(input=x, dim=1)),
    ("sum", lambda m, x, y: m.sum(input=x)),
    ("mean keepdim", lambda m, x, y: m.mean(input=x, dim=0, keepdim=True)),
    ("exp", lambda m, x, y: m.exp(input=x)),
    ("max dim", lambda m, x, y: tuple(m.max(input=x, dim=1))),
    ("cumsum", lambda m, x, y: m.cumsum(input=x, dim=1)),
    ("softmax", lambda m, x, y: m.softmax(input=x, dim=1)),
    ("where", lambda m, x, y: m.where(x > 0, input=x, other=y)),
    ("clamp", lambda m, x, y: m.clamp(input=x, min=-0.5, max=0.5)),
]


@pytest.mark.parametrize("name, call", INPUT_CALLS, ids=[c[0] for c in INPUT_CALLS])
def test_first_argument_by_the_name_input(name, call):
    (x, tx), (y, ty) = both(*arrays((3, 4), (3, 4)))
    close(call(tp, x, y), call(torch, tx, ty))


def test_methods_keep_self_positional():
    (x, tx), = both(*arrays((3, 4)))
    close(x.sum(1), tx.sum(1))
    close(x.add(x, alpha=3), tx.add(tx, alpha=3))
    with pytest.raises(TypeError):
        x.sum(input=x)


# ---- NumPy names ----------------------------------------------------------------------------
ALIAS_CALLS = [
    ("sum keepdims", lambda m, x: m.sum(x, 1, keepdims=True)),
    ("method sum keepdims", lambda m, x: x.sum(1, keepdims=True)),
    ("mean axis", lambda m, x: m.mean(x, axis=0)),
    ("mean axis keepdims", lambda m, x: m.mean(x, axis=1, keepdims=True)),
    ("amax axis", lambda m, x: m.amax(x, axis=1)),
    ("argmax axis", lambda m, x: m.argmax(x, axis=1)),
    ("method argmax keepdims", lambda m, x: x.argmax(1, keepdims=True)),
    ("max axis", lambda m, x: tuple(m.max(x, axis=0))),
    ("cumsum axis", lambda m, x: m.cumsum(x, axis=0)),
    ("softmax axis", lambda m, x: m.softmax(x, axis=1)),
    ("std axis", lambda m, x: m.std(x, axis=1, keepdims=True)),
    ("logsumexp axis", lambda m, x: m.logsumexp(x, axis=1)),
]


@pytest.mark.parametrize("name, call", ALIAS_CALLS, ids=[c[0] for c in ALIAS_CALLS])
def test_numpy_names_axis_and_keepdims(name, call):
    (x, tx), = both(*arrays((3, 4)))
    close(call(tp, x), call(torch, tx))


def test_x1_x2_where_the_schema_has_them():
    (a, ta), (b, tb) = both(*arrays((3, 4), (3, 4)))
    close(tp.cosine_similarity(x1=a, x2=b), torch.cosine_similarity(x1=ta, x2=tb))
    close(tp.pairwise_distance(x1=a, x2=b), torch.pairwise_distance(x1=ta, x2=tb))


def test_a_keyword_and_its_numpy_name_together_is_an_error():
    x = tp.ones(2, 3)
    with pytest.raises(ArgumentError, match=r"mean\(\): argument 'dim' given twice"):
        tp.mean(x, dim=0, axis=0)
    with pytest.raises(TypeError, match=r"argmax\(\) got an unexpected keyword argument 'axes'"):
        tp.argmax(x, axes=0)
    with pytest.raises(ArgumentError, match=r"sum\(\) received an invalid combination of "
                                            r"arguments: got \(.*axes=int\)"):
        tp.sum(x, 0, axes=1)


# ---- out= -----------------------------------------------------------------------------------
OUT_CALLS = [
    ("add", lambda m, x, y, **o: m.add(x, y, **o)),
    ("add scalar", lambda m, x, y, **o: m.add(x, 2.5, alpha=2, **o)),
    ("mul", lambda m, x, y, **o: m.mul(x, y, **o)),
    ("div", lambda m, x, y, **o: m.div(x, y, **o)),
    ("exp", lambda m, x, y, **o: m.exp(x, **o)),
    ("neg", lambda m, x, y, **o: m.neg(x, **o)),
    ("maximum", lambda m, x, y, **o: m.maximum(x, y, **o)),
    ("sum dim", lambda m, x, y, **o: m.sum(x, 1, **o)),
    ("mean keepdim", lambda m, x, y, **o: m.mean(x, 0, keepdim=True, **o)),
    ("amax", lambda m, x, y, **o: m.amax(x, 1, **o)),
    ("prod dim", lambda m, x, y, **o: m.prod(x, 1, **o)),
    ("cumsum", lambda m, x, y, **o: m.cumsum(x, dim=1, **o)),
    ("mm", lambda m, x, y, **o: m.mm(x, y.T, **o)),
    ("matmul", lambda m, x, y, **o: m.matmul(x, y.T, **o)),
    ("addmm", lambda m, x, y, **o: m.addmm(y[:, :3], x, y.T, **o)),
    ("mv", lambda m, x, y, **o: m.mv(x, y[0], **o)),
]


@pytest.mark.parametrize("name, call", OUT_CALLS, ids=[c[0] for c in OUT_CALLS])
def test_out_of_the_result_shape_is_written_in_place(name, call):
    (x, tx), (y, ty) = both(*arrays((3, 4), (3, 4)))
    expected = call(torch, tx, ty)
    t_out = torch.empty_like(expected)
    out = tp.empty(tuple(expected.shape))
    storage = out.untyped_storage()
    version = out._version
    returned = call(tp, x, y, out=out)
    assert call(torch, tx, ty, out=t_out) is t_out
    assert returned is out
    assert out.untyped_storage() is storage   # the same memory, as torch's copy_
    assert out._version > version
    close(out, t_out)


@pytest.mark.parametrize("name, call", OUT_CALLS, ids=[c[0] for c in OUT_CALLS])
def test_empty_out_is_resized_to_the_result(name, call):
    (x, tx), (y, ty) = both(*arrays((3, 4), (3, 4)))
    t_out = torch.empty(0)
    out = tp.empty(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # torch warns only for a non-empty out
        assert call(tp, x, y, out=out) is out
    call(torch, tx, ty, out=t_out)
    close(out, t_out)


def test_out_of_another_shape_is_resized_with_a_warning_as_torch():
    (x, tx), (y, ty) = both(*arrays((3, 4), (3, 4)))
    t_out = torch.zeros(5)
    with pytest.warns(UserWarning, match="resized"):
        torch.add(tx, ty, out=t_out)
    out = tp.zeros(5)
    with pytest.warns(UserWarning, match=r"add\(\): an output with one or more elements was "
                                         r"resized since it had shape \[5\]"):
        tp.add(x, y, out=out)
    close(out, t_out)


def test_out_dtype_follows_torchs_casting_rule():
    (x, tx), (y, ty) = both(*arrays((3, 4), (3, 4)))
    out, t_out = tp.empty(3, 4, dtype=tp.float64), torch.empty(3, 4, dtype=torch.float64)
    tp.add(x, y, out=out)
    torch.add(tx, ty, out=t_out)
    close(out, t_out)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        torch.add(tx, ty, out=torch.empty(3, 4, dtype=torch.int64))
    with pytest.raises(ArgumentError, match=r"add\(\): result type float32 can't be cast to the "
                                            r"desired output type int64 \(argument 'out'\)"):
        tp.add(x, y, out=tp.empty(3, 4, dtype=tp.int64))
    # int into float is allowed, and argmax's int64 fits an int64 out
    i = tp.tensor([1, 2, 3])
    f = tp.empty(3)
    assert tp.neg(i, out=f) is f and f.tolist() == [-1.0, -2.0, -3.0]
    idx = tp.empty(3, dtype=tp.int64)
    close(tp.argmax(x, 1, out=idx), torch.argmax(tx, 1))


@pytest.mark.parametrize("requires", ["input", "out"])
def test_out_refuses_autograd_as_torch(requires):
    (x, tx), (y, ty) = both(*arrays((3, 4), (3, 4)))
    out, t_out = tp.empty(3, 4), torch.empty(3, 4)
    target = (x, tx) if requires == "input" else (out, t_out)
    target[0].requires_grad_()
    target[1].requires_grad_()
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic"):
        torch.add(tx, ty, out=t_out)
    with pytest.raises(ArgumentError, match=r"add\(\): functions with out=\.\.\. arguments don't "
                                            r"support automatic differentiation, but one of the "
                                            r"arguments requires grad\."):
        tp.add(x, y, out=out)
    with tp.no_grad():   # no graph to record: allowed, as in torch
        assert tp.add(x, y, out=out) is out
    with torch.no_grad():
        torch.add(tx, ty, out=t_out)
    close(out.detach(), t_out.detach())


def test_out_with_several_results_takes_a_tuple():
    (x, tx), = both(*arrays((3, 4)))
    values, indices = tp.empty(0), tp.empty(0, dtype=tp.int64)
    got = tp.max(x, 1, out=(values, indices))
    t_values, t_indices = torch.empty(0), torch.empty(0, dtype=torch.int64)
    torch.max(tx, 1, out=(t_values, t_indices))
    assert got.values is values and got.indices is indices
    close((values, indices), (t_values, t_indices))
    with pytest.raises(ArgumentError, match=r"max\(\): argument 'out' must be a tuple of 2"):
        tp.max(x, 1, out=values)


def test_out_must_be_a_tensor():
    x = tp.ones(2)
    with pytest.raises(ArgumentError, match=r"add\(\): argument 'out' must be Tensor, but got list"):
        tp.add(x, x, out=[1.0, 2.0])


def test_views_and_in_place_ops_take_no_out():
    """PyTorch has no out= for views (the result shares the input's memory) nor for
    in-place ops; neither do we, and passing one is an error, not ignored."""
    x = tp.ones(2, 3)
    with pytest.raises(TypeError):
        tp.transpose(x, 0, 1, out=tp.empty(3, 2))
    with pytest.raises(TypeError):
        x.add_(1, out=tp.empty(2, 3))


# ---- a wrong call reads as before -------------------------------------------------------------
def test_wrong_call_still_lists_the_overloads():
    x = tp.ones(2)
    with pytest.raises(ArgumentError) as info:
        tp.add(x, "a")
    message = str(info.value)
    assert "add() received an invalid combination of arguments: got (Tensor of dtype " \
           "float32, str, int)" in message
    assert "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor" in message
    assert "add.Scalar(Tensor self, Scalar other, *, Scalar alpha=1) -> Tensor" in message
    with pytest.raises(ArgumentError, match=r"mean\.dim\(Tensor self, int\[1\]\? dim"):
        tp.mean(x, "a")
