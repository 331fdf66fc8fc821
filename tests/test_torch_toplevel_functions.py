"""The smaller names of the torch namespace: the window functions, broadcast_shapes,
typename, range, empty_permuted, fill, spmm, addmv_, the anomaly switches, the
in-place nn forms (torch.dropout_, ...), the functions PyTorch removed (they raise its
message), and Tensor.new / new_empty_strided / is_nested / is_quantized; each against
PyTorch."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from opinfo.core import assert_close

WINDOWS = ["hann_window", "hamming_window", "bartlett_window", "blackman_window",
           "kaiser_window"]


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("length", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("periodic", [True, False])
def test_window_functions_equal_pytorchs(name, length, periodic):
    for dtype in (tp.float32, tp.float64):
        got = getattr(tp, name)(length, periodic, dtype=dtype)
        expected = getattr(torch, name)(length, periodic,
                                        dtype=getattr(torch, dtype.name))
        assert_close(got, expected)
    assert getattr(tp, name)(5, device="cuda" if tp.cuda.is_available() else "cpu").shape \
        == (5,)


def test_window_parameters_and_errors():
    assert_close(tp.hamming_window(9, False, 0.6, 0.3), torch.hamming_window(9, False, 0.6, 0.3))
    assert_close(tp.kaiser_window(9, True, 5.0), torch.kaiser_window(9, True, 5.0))
    with pytest.raises(tp.errors.DTypeError, match=r"hann_window\(\): expects floating"):
        tp.hann_window(4, dtype=tp.int64)


def test_broadcast_shapes_typename_range_empty_permuted_fill():
    assert tp.broadcast_shapes((2, 1), (3,), 1) == torch.broadcast_shapes((2, 1), (3,), 1)
    assert tp.broadcast_shapes() == torch.broadcast_shapes() == ()
    with pytest.raises(tp.errors.ShapeError, match=r"broadcast_shapes\(\)"):
        tp.broadcast_shapes((2,), (3,))
    assert tp.typename(tp.ones(2)) == "tensorplay.FloatTensor"
    assert tp.typename(3) == torch.typename(3) == "int"
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        got = tp.range(1, 4, 0.5)
    with pytest.warns(UserWarning):
        expected = torch.range(1, 4, 0.5)
    assert_close(got, expected)
    for layout in [(0, 1, 2), (0, 2, 1), (2, 0, 1)]:
        assert tp.empty_permuted((2, 3, 4), layout).stride() == \
            torch.empty_permuted((2, 3, 4), layout).stride()
    x = tp.arange(4.0)
    assert_close(tp.fill(x, 2.5), torch.fill(torch.arange(4.0), 2.5))
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_spmm_and_addmv_():
    a = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]])
    d = np.arange(6.0).reshape(3, 2)
    assert_close(tp.spmm(tp.tensor(a).to_sparse(), tp.tensor(d)),
                 torch.spmm(torch.tensor(a).to_sparse(), torch.tensor(d)))
    got = tp.addmv_(tp.ones(2, dtype=tp.float64), tp.tensor(a), tp.ones(3, dtype=tp.float64),
                    beta=0.5, alpha=2)
    expected = torch.addmv_(torch.ones(2, dtype=torch.float64), torch.tensor(a),
                            torch.ones(3, dtype=torch.float64), beta=0.5, alpha=2)
    assert_close(got, expected)


def test_anomaly_switches():
    assert tp.is_anomaly_enabled() is False
    tp.set_anomaly_enabled(True, check_nan=False)
    try:
        assert tp.is_anomaly_enabled() and not tp.is_anomaly_check_nan_enabled()
    finally:
        tp.set_anomaly_enabled(False)
    assert not tp.is_anomaly_enabled() and tp.is_anomaly_check_nan_enabled()


@pytest.mark.parametrize("name", ["dropout_", "alpha_dropout_", "feature_alpha_dropout_",
                                  "feature_dropout_"])
def test_inplace_dropouts_write_pytorchs_draws_into_the_input(name):
    data = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    x, xt = tp.tensor(data), torch.tensor(data)
    tp.manual_seed(5)
    torch.manual_seed(5)
    got, expected = getattr(tp, name)(x, 0.3, True), getattr(torch, name)(xt, 0.3, True)
    assert got is x
    assert_close(x, xt)
    assert_close(got, expected)


def test_rrelu_and_embedding_renorm_in_place():
    data = np.linspace(-2, 2, 9).astype(np.float32)
    x, xt = tp.tensor(data), torch.tensor(data)
    g, gt = tp.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    assert tp.rrelu_(x, 0.1, 0.3, True, g) is x
    torch.rrelu_(xt, 0.1, 0.3, True, gt)
    assert_close(x, xt)
    w = np.arange(12.0).reshape(4, 3)
    ours, theirs = tp.tensor(w), torch.tensor(w)
    tp.embedding_renorm_(ours, tp.tensor([0, 2, 2]), 3.0, 2.0)
    torch.embedding_renorm_(theirs, torch.tensor([0, 2, 2]), 3.0, 2.0)
    assert_close(ours, theirs)


@pytest.mark.parametrize("name", ["solve", "eig", "symeig", "lstsq", "matrix_rank"])
def test_removed_functions_raise_pytorchs_message(name):
    a = torch.eye(2)
    args = (a, a) if name in ("solve", "lstsq") else (a,)
    with pytest.raises(RuntimeError) as theirs:
        getattr(torch, name)(*args)
    with pytest.raises(RuntimeError) as ours:
        getattr(tp, name)(*(tp.eye(2),) * len(args))
    assert str(ours.value).split(".")[0] == str(theirs.value).split(".")[0]
    if name != "matrix_rank":
        with pytest.raises(RuntimeError, match="deprecated since version 1.9"):
            getattr(tp.eye(2), name)(*(tp.eye(2),) * (len(args) - 1))


def test_tensor_new_and_the_predicates():
    x, xt = tp.ones(2, dtype=tp.float64), torch.ones(2, dtype=torch.float64)
    assert_close(x.new([2, 3]), xt.new([2, 3]))
    for args in [(2, 3), (tp.Size([2, 3]),), ()]:
        torch_args = tuple(torch.Size(a) if isinstance(a, tp.Size) else a for a in args)
        got, expected = x.new(*args), xt.new(*torch_args)
        assert tuple(got.shape) == tuple(expected.shape) and got.dtype == tp.float64
    y = tp.zeros(3)
    assert x.new(y) is y
    assert x.new_empty_strided((2, 3), (1, 2)).stride() == \
        xt.new_empty_strided((2, 3), (1, 2)).stride()
    assert x.is_nested is xt.is_nested is False
    assert x.is_quantized is xt.is_quantized is False


def test_random_version_and_functional_modules():
    tp.manual_seed(3)
    before = tp.rand(2)
    tp.manual_seed(3)
    with tp.random.fork_rng():
        tp.rand(5)
    assert_close(tp.rand(2), torch.tensor(before.numpy()))
    assert tp.random.initial_seed() == 3
    assert tp.version.cuda is None and tp.version.__version__ == tp.__version__
    assert tp.functional.einsum is tp.einsum and tp.functional.split is tp.split
    with pytest.raises(AttributeError):
        tp.functional.conv2d


def test_asarray_shares_memory_where_pytorchs_does():
    a = np.arange(3.0)
    t = tp.asarray(a)
    t[0] = 5
    assert a[0] == 5                                    # shares the NumPy array
    c = tp.asarray(a, copy=True)
    c[1] = 7
    assert a[1] == 1
    x = tp.ones(2)
    assert tp.asarray(x) is x and tp.asarray(x, copy=False) is x
    assert tp.asarray(x, dtype=tp.float64).dtype == tp.float64
    with pytest.raises(ValueError, match="copy"):
        tp.asarray(x, dtype=tp.float64, copy=False)
    assert_close(tp.asarray([1, 2.5]), torch.asarray([1, 2.5]))
    assert tp.asarray(3).shape == torch.asarray(3).shape
    assert tp.asarray(a, dtype=tp.float32).dtype == tp.float32
    assert tp.GradScaler is tp.amp.GradScaler
