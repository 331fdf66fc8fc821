"""Edge-case errors: calls PyTorch refuses that TensorPlay once ran (returning some
value), each checked against PyTorch on the same input: PyTorch raises, and TensorPlay
raises its typed error of the same kind, naming the op and the argument.
"""
from __future__ import annotations

import math

import pytest
import torch

import tensorplay as tp
import tensorplay.nn.functional as F
from tensorplay.errors import ArgumentError, DimError, DTypeError, ShapeError

DEVICES = ["cpu"]
if tp.cuda.is_available() or tp.cuda.is_interpreted():
    DEVICES.append("cuda")


def _both_raise(call, kind, pattern):
    """call(torch) raises `kind` (PyTorch's own class); call(tp) raises a TensorPlay error
    that is also a `kind` and matches `pattern`."""
    with pytest.raises(kind):
        call(torch)
    with pytest.raises(kind, match=pattern) as info:
        call(tp)
    return info.value


# ---- cross_entropy: a probability target has no class to ignore ---------------------------
@pytest.mark.parametrize("ignore_index", [0, 2, 100])
def test_cross_entropy_probabilities_with_ignore_index_raise(ignore_index):
    def call(lib):
        logits = lib.zeros(2, 3)
        return lib.nn.functional.cross_entropy(logits, lib.ones(2, 3) / 3,
                                               ignore_index=ignore_index)
    error = _both_raise(call, RuntimeError, r"cross_entropy_loss\(\): argument "
                                            r"'ignore_index' is not supported")
    assert isinstance(error, ArgumentError) and error.arg == "ignore_index"


@pytest.mark.parametrize("ignore_index", [-100, -1])
def test_cross_entropy_probabilities_with_a_negative_ignore_index_compute(ignore_index):
    ours = F.cross_entropy(tp.zeros(2, 3), tp.ones(2, 3) / 3, ignore_index=ignore_index)
    theirs = torch.nn.functional.cross_entropy(torch.zeros(2, 3), torch.ones(2, 3) / 3,
                                               ignore_index=ignore_index)
    assert ours.item() == pytest.approx(theirs.item())


# ---- indexed assignment of another dtype -------------------------------------------------
# (the rule is setitem's, before any kernel: the CPU shows it for every device)
@pytest.mark.parametrize("device", ["cpu"])
@pytest.mark.parametrize("index", ["tensor", "list", "mask_and_vector", "tensor_and_slice"])
@pytest.mark.parametrize("value", ["float64_vector", "float64_0dim", "int64_0dim"])
def test_index_put_through_setitem_refuses_another_dtype(device, index, value):
    def call(lib):
        x = lib.zeros(2, 4, device=device if lib is tp else "cpu")
        idx = {"tensor": lib.tensor([0, 1]), "list": [0, 1],
               "mask_and_vector": x == 0,
               "tensor_and_slice": (lib.tensor([0]), slice(None))}[index]
        v = {"float64_vector": lib.ones(4, dtype=lib.float64),
             "float64_0dim": lib.tensor(3.0, dtype=lib.float64),
             "int64_0dim": lib.tensor(3)}[value]
        if index == "mask_and_vector":
            v = lib.ones(8, dtype=lib.float64)    # one value per masked element
        x[idx] = v
    error = _both_raise(call, RuntimeError, r"index_put_\(\): argument 'values' \(\w+\) must "
                                            r"have the same dtype as 'self' \(float32\)")
    assert isinstance(error, DTypeError)


@pytest.mark.parametrize("device", ["cpu"])
@pytest.mark.parametrize("index", ["mask", "slice_and_mask", "int_and_mask"])
@pytest.mark.parametrize("value", [lambda lib: lib.tensor(3.0, dtype=lib.float64),
                                   lambda lib: lib.ones(1, dtype=lib.int64),
                                   lambda lib: 3], ids=["float64_0dim", "int64_1elem", "int"])
def test_one_value_into_one_mask_converts_as_pytorchs_masked_fill(device, index, value):
    # PyTorch writes a one-element value into a single mask with masked_fill_, which
    # takes the value's number whatever its dtype
    def call(lib):
        x = lib.arange(8.0, device=device if lib is tp else "cpu").reshape(2, 4)
        mask = lib.tensor([True, False, True, True], device=x.device)
        idx = {"mask": x > 2, "slice_and_mask": (slice(None), mask),
               "int_and_mask": (1, mask)}[index]
        x[idx] = value(lib)
        return x.cpu().tolist()
    assert call(tp) == call(torch)


# ---- a size list left out -----------------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (2, 3)])
@pytest.mark.parametrize("method", ["view", "reshape", "permute", "expand", "repeat", "tile",
                                    "flip", "sum_to_size", "broadcast_to"])
def test_size_list_methods_without_their_list_raise(shape, method):
    error = _both_raise(lambda lib: getattr(lib.zeros(shape), method)(), TypeError,
                        rf"{method}\(\): missing 1 required positional argument")
    assert isinstance(error, ArgumentError)


@pytest.mark.parametrize("call", [lambda x: x.view(()), lambda x: x.reshape([]),
                                  lambda x: x.permute(()), lambda x: x.expand([])])
def test_an_empty_size_list_given_is_still_a_list(call):
    assert tuple(call(tp.zeros(())).shape) == tuple(call(torch.zeros(())).shape) == ()


# ---- dims of a 0-dim tensor -----------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, -1, 1])
def test_roll_of_a_0_dim_tensor_along_a_dim_raises(dim):
    _both_raise(lambda lib: lib.roll(lib.tensor(5.0), 1, dim), IndexError,
                r"roll\(\): argument 'dims'")
    assert tp.roll(tp.tensor(5.0), 1).item() == torch.roll(torch.tensor(5.0), 1).item()


@pytest.mark.parametrize("start, end", [(1, 0), (0, 1), (-2, -1), (0, -2)])
def test_flatten_of_a_0_dim_tensor_checks_its_dims(start, end):
    error = _both_raise(lambda lib: lib.flatten(lib.tensor(5.0), start, end), IndexError,
                        r"flatten\(\): Dimension out of range")
    assert isinstance(error, DimError)


@pytest.mark.parametrize("start, end", [(0, 0), (-1, 0), (0, -1)])
def test_flatten_of_a_0_dim_tensor_in_range(start, end):
    ours = tp.flatten(tp.tensor(5.0), start, end)
    theirs = torch.flatten(torch.tensor(5.0), start, end)
    assert tuple(ours.shape) == tuple(theirs.shape) == (1,)


# ---- a norm without identity over an empty dim ----------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("p", [math.inf, -math.inf, -1, -0.5])
@pytest.mark.parametrize("dim", [0, None, (0, 1)])
def test_norm_without_identity_over_an_empty_dim_raises(device, p, dim):
    def call(lib):
        x = lib.zeros(0, 3, device=device if lib is tp else "cpu")
        return lib.linalg.vector_norm(x, ord=p, dim=dim)
    error = _both_raise(call, RuntimeError, r"norm\(\): argument 'p'")
    assert isinstance(error, ShapeError)
    _both_raise(lambda lib: lib.norm(lib.zeros(0, 3, device=device if lib is tp else "cpu"),
                                     p=p, dim=0), RuntimeError, r"norm\(\): argument 'p'")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("p", [math.inf, -1, 2, 0.5])
def test_norm_over_a_non_empty_dim_of_an_empty_tensor_computes(device, p):
    ours = tp.linalg.vector_norm(tp.zeros(0, 3, device=device), ord=p, dim=1)
    theirs = torch.linalg.vector_norm(torch.zeros(0, 3), ord=p, dim=1)
    assert tuple(ours.shape) == tuple(theirs.shape) == (0,)
    ours = tp.linalg.vector_norm(tp.zeros(0, 3, device=device), ord=2, dim=0)
    assert ours.cpu().tolist() == torch.linalg.vector_norm(torch.zeros(0, 3), dim=0).tolist()


# ---- repeat_interleave: output_size must be the size the repeats give ---------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", ["repeats_tensor", "repeats_int"])
def test_repeat_interleave_refuses_a_wrong_output_size(device, case):
    def call(lib):
        dev = device if lib is tp else "cpu"
        if case == "repeats_tensor":
            return lib.repeat_interleave(lib.tensor([1, 2], device=dev), output_size=4)
        return lib.repeat_interleave(lib.ones(2, device=dev), 2, output_size=5)
    error = _both_raise(call, RuntimeError, r"repeat_interleave\(\): argument 'output_size'")
    assert isinstance(error, ArgumentError) and error.arg == "output_size"
    ours = tp.repeat_interleave(tp.tensor([1, 2], device=device), output_size=3)
    assert ours.tolist() == [0, 1, 1]


# ---- cov: frequency weights are integers, and bool is not one ----------------------------
@pytest.mark.parametrize("dtype", ["bool", "complex64"])
def test_cov_refuses_bool_and_complex_frequency_weights(dtype):
    def call(lib):
        return lib.cov(lib.ones(2, 3, dtype=lib.float64),
                       fweights=lib.ones(3, dtype=getattr(lib, dtype)))
    error = _both_raise(call, RuntimeError, r"cov\(\): expected fweights to have integral")
    assert isinstance(error, DTypeError) and error.arg == "fweights"


# ---- convolution: an empty image is not an empty batch -----------------------------------
@pytest.mark.parametrize("transposed", [False, True])
def test_convolution_refuses_an_empty_spatial_dim(transposed):
    def call(lib):
        x = lib.zeros(1, 1, 0, 4)
        w = lib.zeros(1, 2, 2, 2) if transposed else lib.zeros(2, 1, 1, 1)
        return lib.ops.aten.convolution(x, w, None, [1, 1], [1, 1], [1, 1], transposed,
                                        [0, 0], 1) if lib is torch else \
            tp.convolution(x, w, None, [1, 1], [1, 1], [1, 1], transposed, [0, 0], 1)
    error = _both_raise(call, RuntimeError, r"convolution\(\): only an empty batch or zero "
                                            r"channels")
    assert isinstance(error, ShapeError) and error.arg == "input"


def test_convolution_of_an_empty_batch_and_its_gradient():
    x, w = tp.zeros(0, 1, 4, 4, requires_grad=True), tp.zeros(2, 1, 3, 3, requires_grad=True)
    y = F.conv2d(x, w, padding=1)
    assert tuple(y.shape) == tuple(torch.nn.functional.conv2d(
        torch.zeros(0, 1, 4, 4), torch.zeros(2, 1, 3, 3), padding=1).shape)
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 1, 4, 4) and w.grad.abs().sum().item() == 0


# ---- native_group_norm: HxW must agree with the input's elements ----------------------
def test_native_group_norm_checks_the_element_count():
    def call(lib):
        fn = torch.native_group_norm if lib is torch else tp.native_group_norm
        return fn(lib.zeros(2, 4, 0), None, None, 2, 4, 3, 2, 1e-5)
    error = _both_raise(call, RuntimeError, r"native_group_norm\(\): argument 'input' must "
                                            r"hold N \* C \* HxW")
    assert isinstance(error, ShapeError) and error.arg == "input"


# ---- dtype rules PyTorch's kernels enforce -----------------------------------------------
@pytest.mark.parametrize("case", ["tensor_tensor", "tensor_scalar", "scalar_tensor"])
def test_isin_refuses_bool(case):
    def call(lib):
        return {"tensor_tensor": lambda: lib.isin(lib.ones(3, 4), lib.ones(3, 1, dtype=lib.bool)),
                "tensor_scalar": lambda: lib.isin(lib.ones(3, dtype=lib.bool), True),
                "scalar_tensor": lambda: lib.isin(2, lib.ones(3, dtype=lib.bool))}[case]()
    error = _both_raise(call, RuntimeError, r"isin\(\): argument '\w+' must not be bool")
    assert isinstance(error, DTypeError)


def test_cosine_similarity_refuses_a_complex_common_dtype():
    def call(lib):
        return lib.nn.functional.cosine_similarity(lib.ones(4, dtype=lib.bfloat16),
                                                   lib.ones(4, dtype=lib.complex64), dim=-1)
    error = _both_raise(call, RuntimeError, r"cosine_similarity\(\): expected a floating "
                                            r"point common dtype")
    assert isinstance(error, DTypeError) and error.arg == "x2"


def test_lerp_refuses_a_weight_tensor_of_another_dtype():
    def call(lib):
        return lib.lerp(lib.ones(3, dtype=lib.complex64), lib.ones(3, dtype=lib.complex64),
                        lib.ones(3, dtype=lib.float64))
    error = _both_raise(call, RuntimeError, r"lerp\(\): expected dtype complex64 for argument "
                                            r"'weight'")
    assert isinstance(error, DTypeError) and error.arg == "weight"
    # a 0-d weight is a number
    assert tp.lerp(tp.zeros(3), tp.ones(3), tp.tensor(0.5, dtype=tp.float64)).tolist() == \
        torch.lerp(torch.zeros(3), torch.ones(3), torch.tensor(0.5, dtype=torch.float64)).tolist()


def test_addr_takes_float_scalars_for_a_complex_result():
    ours = tp.addr(tp.ones(2, 3), tp.ones(2, dtype=tp.complex64), tp.ones(3), beta=0.5, alpha=2)
    theirs = torch.addr(torch.ones(2, 3), torch.ones(2, dtype=torch.complex64), torch.ones(3),
                        beta=0.5, alpha=2)
    assert ours.dtype == tp.complex64 and ours.tolist() == theirs.tolist()
# ---- recurrent cells and layers: PyTorch's addmm per gate refuses a bias of another dtype --
_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _cell_call(mode, w_ih_rows=None, bias_dtype=None, dtype="float64"):
    gates = _GATES[mode]

    def call(lib):
        d = getattr(lib, dtype)
        h = lib.zeros(4, 2, dtype=d)
        w_ih = lib.zeros(gates * 2 if w_ih_rows is None else w_ih_rows, 3, dtype=d)
        b_ih = lib.zeros(gates * 2, dtype=getattr(lib, bias_dtype or dtype))
        return getattr(lib, f"{mode}_cell")(lib.zeros(4, 3, dtype=d),
                                             (h, h) if mode == "lstm" else h, w_ih,
                                             lib.zeros(gates * 2, 2, dtype=d), b_ih,
                                             lib.zeros(gates * 2, dtype=d))
    return call


@pytest.mark.parametrize("mode", sorted(_GATES))
def test_rnn_cell_refuses_an_integer_bias(mode):
    error = _both_raise(_cell_call(mode, bias_dtype="int32"), RuntimeError,
                        rf"{mode}_cell\(\): argument 'b_ih' \(int32\) must have the same "
                        r"dtype as 'w_ih' \(float64\)")
    assert isinstance(error, DTypeError) and error.arg == "b_ih"


@pytest.mark.parametrize("mode", sorted(_GATES))
@pytest.mark.parametrize("rows", [0, 5])
def test_rnn_cell_checks_w_ih_against_the_hidden_size(mode, rows):
    error = _both_raise(_cell_call(mode, w_ih_rows=rows), RuntimeError,
                        rf"{mode}_cell\(\): argument 'w_ih' first dim must be "
                        rf"{_GATES[mode]} \* hidden_size = {2 * _GATES[mode]}")
    assert isinstance(error, ShapeError) and error.arg == "w_ih"


@pytest.mark.parametrize("mode, dtype", [("rnn_tanh", "float32"), ("gru", "float32"),
                                         ("lstm", "float64")])
def test_rnn_layer_refuses_an_integer_bias(mode, dtype):
    gates = _GATES[mode]

    def call(lib):
        d = getattr(lib, dtype)
        h = lib.zeros(1, 4, 2, dtype=d)
        params = [lib.zeros(gates * 2, 3, dtype=d), lib.zeros(gates * 2, 2, dtype=d),
                  lib.zeros(gates * 2, dtype=d), lib.zeros(gates * 2, dtype=lib.int32)]
        return getattr(lib, mode)(lib.zeros(2, 4, 3, dtype=d), [h, h] if mode == "lstm" else h,
                                  params, True, 1, 0.0, False, False, False)
    error = _both_raise(call, RuntimeError, rf"{mode}\(\): argument 'b_hh' \(int32\)")
    assert isinstance(error, DTypeError) and error.arg == "b_hh"


def test_lstm_layer_over_float32_takes_an_integer_bias_as_pytorchs_onednn_kernel():
    outs = []
    for lib in (tp, torch):
        h = lib.zeros(1, 4, 2)
        params = [lib.ones(8, 3) / 4, lib.ones(8, 2) / 8, lib.ones(8), lib.ones(8, dtype=lib.int32)]
        outs.append(lib.lstm(lib.ones(2, 4, 3), [h, h], params, True, 1, 0.0, False, False,
                             False)[0])
    assert torch.allclose(torch.tensor(outs[0].numpy()), outs[1], atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_index_copy_from_a_source_into_an_empty_self_checks_the_index(device):
    # unlike index_add, index_copy reads the index of a non-empty source
    def call(lib):
        kw = {"device": device} if lib is tp else {}
        return lib.zeros(0, 2, **kw).index_copy(0, lib.tensor([5], **kw), lib.ones(1, 2, **kw))
    with pytest.raises(RuntimeError):
        call(torch)
    with pytest.raises(DimError, match=r"index_copy\(\): index 5 in argument 'index'"):
        call(tp)


# ---- reflect / replicate padding: an empty batch, but no other empty dim -------------------
@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("shape, pad", [((0, 5), (2, 1)), ((2, 0, 4), (1, 1)),
                                        ((2, 0, 3, 3), (1, 1, 1, 1))])
def test_reflect_and_replicate_padding_refuse_an_empty_non_batch_dim(mode, shape, pad):
    error = _both_raise(lambda lib: lib.nn.functional.pad(lib.zeros(*shape), pad, mode=mode),
                        RuntimeError, rf"pad\(\): {mode} padding expects .* possibly 0 batch "
                                      r"size and other non-zero dimensions")
    assert isinstance(error, ShapeError) and error.arg == "self"


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_reflect_and_replicate_padding_take_an_empty_batch(mode):
    ours = tp.nn.functional.pad(tp.zeros(0, 3, 4), (1, 1), mode=mode)
    theirs = torch.nn.functional.pad(torch.zeros(0, 3, 4), (1, 1), mode=mode)
    assert tuple(ours.shape) == tuple(theirs.shape)


# ---- binary_cross_entropy_with_logits: the loss is computed in the target's dtype ----------
@pytest.mark.parametrize("target_dtype", ["int64", "uint8", "bool"])
def test_bce_with_logits_refuses_a_target_that_is_not_floating_point(target_dtype):
    def call(lib):
        target = lib.ones(3, 4).to(getattr(lib, target_dtype))
        return lib.nn.functional.binary_cross_entropy_with_logits(lib.zeros(3, 4), target)
    error = _both_raise(call, RuntimeError, r"binary_cross_entropy_with_logits\(\): argument "
                                            rf"'target' must be a floating point tensor .* "
                                            rf"got {target_dtype}")
    assert isinstance(error, DTypeError) and error.arg == "target"



# ---- the recurrent functions: the state's batch must be the input's --------------------
@pytest.mark.parametrize("batch", [0, 3])
def test_gru_refuses_a_state_of_another_batch(batch):
    def call(lib):
        x = lib.zeros(batch, 2, 2, dtype=lib.float64)
        h = lib.zeros(4, 1, 1, dtype=lib.float64)
        w = [lib.zeros(3, 2, dtype=lib.float64), lib.zeros(3, 1, dtype=lib.float64)]
        return lib.gru(x, h, w * 4, False, 2, 0.0, False, True, True)
    error = _both_raise(call, RuntimeError, r"gru\(\): argument 'hx' must have shape")
    assert isinstance(error, ShapeError) and error.arg == "hx"
