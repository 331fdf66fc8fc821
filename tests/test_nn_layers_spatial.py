"""The spatial layers (Flatten, Conv*, ConvTranspose*, pools, Upsample) against torch.nn:
each built with the same arguments as a torch layer, its weights copied from it through
load_state_dict (so the state_dict keys must match), then outputs and the gradients of the
input and of every parameter compared; reprs, default inits and errors as torch's."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay import nn

RNG = np.random.default_rng(11)

# torch warns that an even kernel with padding='same' copies the input; not our concern.
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same':UserWarning")


def numpy(t):
    return np.asarray(t.detach().cpu())


def copy_weights(module, torch_module):
    """Load the torch module's state into ours; the key names must be the same."""
    state = {k: tp.tensor(v.detach().numpy()) for k, v in torch_module.state_dict().items()}
    assert list(module.state_dict()) == list(state)
    module.load_state_dict(state)


def check(module, torch_module, x_shape, atol=1e-5, forward_kwargs=None):
    """Forward and backward of `module` and `torch_module` (float32) on one random input."""
    copy_weights(module, torch_module)
    forward_kwargs = forward_kwargs or {}
    a = RNG.standard_normal(x_shape).astype(np.float32)
    x = tp.tensor(a, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    y = module(x, **forward_kwargs)
    ty = torch_module(tx, **forward_kwargs)
    if isinstance(ty, tuple):          # return_indices
        np.testing.assert_array_equal(numpy(y[1]), ty[1].numpy())
        y, ty = y[0], ty[0]
    assert tuple(y.shape) == tuple(ty.shape)
    np.testing.assert_allclose(numpy(y), ty.detach().numpy(), rtol=1e-5, atol=atol)
    g = RNG.standard_normal(tuple(ty.shape)).astype(np.float32)
    (y * tp.tensor(g)).sum().backward()
    (ty * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(numpy(x.grad), tx.grad.numpy(), rtol=1e-5, atol=atol)
    params = dict(module.named_parameters())
    for name, tparam in torch_module.named_parameters():
        np.testing.assert_allclose(numpy(params[name].grad), tparam.grad.numpy(), rtol=1e-5,
                                   atol=atol, err_msg=name)
    return y


def build(spec):
    """The tp and torch layer for a spec string such as "Conv2d(3, 4, 3, padding=1)"."""
    return eval("nn." + spec, {"nn": nn}), eval("torch.nn." + spec, {"torch": torch})


def test_the_layers_are_exported():
    for name in ("Flatten", "Unflatten", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
                 "ConvTranspose2d", "ConvTranspose3d", "MaxPool1d", "MaxPool2d", "AvgPool1d",
                 "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d",
                 "AdaptiveMaxPool2d", "Upsample", "UpsamplingNearest2d",
                 "UpsamplingBilinear2d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d",
                 "AdaptiveMaxPool3d", "LPPool3d", "MaxUnpool3d", "FractionalMaxPool2d",
                 "FractionalMaxPool3d"):
        assert issubclass(getattr(nn, name), nn.Module), name


# ---- convolutions -------------------------------------------------------------------

CONVS = [
    ("Conv1d(3, 4, 3)", (2, 3, 9)),
    ("Conv1d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2)", (2, 4, 11)),
    ("Conv1d(2, 3, 4, padding='same', bias=False)", (2, 2, 7)),
    ("Conv1d(2, 3, 3, padding=2, padding_mode='reflect')", (1, 2, 6)),
    ("Conv1d(2, 2, 3, padding=1, padding_mode='circular')", (2, 5)),      # unbatched
    ("Conv2d(3, 4, 3)", (2, 3, 6, 5)),
    ("Conv2d(4, 4, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=4)",
     (2, 4, 7, 6)),
    ("Conv2d(2, 3, (2, 3), padding='same', dilation=(2, 1))", (1, 2, 6, 5)),
    ("Conv2d(2, 3, 3, padding='valid')", (1, 2, 5, 5)),
    ("Conv2d(2, 3, 3, padding=(1, 2), padding_mode='reflect')", (1, 2, 5, 6)),
    ("Conv2d(2, 3, 3, padding=1, padding_mode='replicate', stride=2)", (2, 2, 5, 5)),
    ("Conv2d(2, 4, (2, 3), padding=(1, 2), padding_mode='circular', groups=2)", (1, 2, 4, 5)),
    ("Conv2d(2, 2, 3, padding='same', padding_mode='reflect')", (1, 2, 5, 6)),
    ("Conv2d(2, 2, (2, 4), padding='same', padding_mode='reflect')", (1, 2, 5, 6)),  # odd
    ("Conv1d(2, 2, 4, padding='same', dilation=1, padding_mode='circular')", (2, 2, 6)),
    ("Conv2d(3, 2, 2, bias=False)", (3, 4, 4)),                           # unbatched
    ("Conv3d(2, 3, (1, 2, 2), padding=(0, 1, 1))", (1, 2, 3, 4, 3)),
    ("Conv3d(2, 2, 2, padding=1, padding_mode='replicate', groups=2)", (1, 2, 3, 3, 3)),
]


@pytest.mark.parametrize("spec, x_shape", CONVS, ids=[c[0] for c in CONVS])
def test_conv_matches_torch(spec, x_shape):
    check(*build(spec), x_shape)


CONV_TRANSPOSES = [
    ("ConvTranspose1d(3, 4, 3)", (2, 3, 5), None),
    ("ConvTranspose1d(4, 2, 3, stride=3, padding=1, output_padding=2, dilation=2, groups=2)",
     (2, 4, 4), None),
    ("ConvTranspose2d(3, 2, 3, stride=2, padding=1)", (2, 3, 3, 4), None),
    ("ConvTranspose2d(4, 6, (3, 2), stride=(2, 3), padding=(1, 0), output_padding=(1, 2), "
     "groups=2, bias=False)", (1, 4, 3, 3), None),
    ("ConvTranspose2d(2, 3, 2, dilation=2)", (2, 3, 3), None),            # unbatched
    ("ConvTranspose2d(2, 2, 3, stride=2, padding=1)", (1, 2, 3, 3), [6, 6]),
    ("ConvTranspose2d(2, 2, 3, stride=3)", (1, 2, 2, 3), (1, 2, 8, 11)),
    ("ConvTranspose1d(2, 2, 3, stride=2)", (2, 3), [8]),                  # unbatched
    ("ConvTranspose3d(2, 2, 2, stride=2, padding=1)", (1, 2, 2, 2, 3), None),
]


@pytest.mark.parametrize("spec, x_shape, output_size", CONV_TRANSPOSES,
                         ids=[c[0] for c in CONV_TRANSPOSES])
def test_conv_transpose_matches_torch(spec, x_shape, output_size):
    kwargs = {} if output_size is None else {"output_size": output_size}
    y = check(*build(spec), x_shape, forward_kwargs=kwargs)
    if output_size is not None:
        n = int(spec[len("ConvTranspose")])
        assert tuple(y.shape[-n:]) == tuple(output_size)[-n:]


REPRS = [
    "Conv1d(4, 8, 3, stride=2, groups=2, dilation=2)",
    "Conv2d(3, 8, 3, padding='same', padding_mode='reflect', bias=False)",
    "Conv2d(3, 8, (3, 5), stride=(2, 1), padding=(1, 2))",
    "Conv2d(3, 8, 3, padding='valid')",
    "Conv3d(2, 4, (1, 2, 3), padding=(0, 1, 1), padding_mode='circular')",
    "ConvTranspose1d(4, 8, 3, stride=2, output_padding=1)",
    "ConvTranspose2d(4, 6, 3, stride=2, output_padding=1, groups=2, dilation=2, bias=False)",
    "MaxPool1d(3, 2, 1, ceil_mode=True)", "MaxPool2d(2)",
    "MaxPool2d((2, 3), stride=1, padding=1, dilation=2, return_indices=True)",
    "AvgPool1d(3)", "AvgPool1d(4, 2, 1, ceil_mode=True, count_include_pad=False)",
    "AvgPool2d((2, 3), count_include_pad=False)", "AvgPool2d(3, 2, 1, divisor_override=2)",
    "AdaptiveAvgPool1d(5)", "AdaptiveAvgPool2d((3, None))", "AdaptiveMaxPool1d(2)",
    "AdaptiveMaxPool2d(2, True)",
    "MaxPool3d(2)", "MaxPool3d((1, 2, 3), stride=1, padding=(0, 1, 1), dilation=2)",
    "AvgPool3d(3, 2, 1, ceil_mode=True, count_include_pad=False, divisor_override=3)",
    "AdaptiveAvgPool3d((2, None, 3))", "AdaptiveMaxPool3d(1, return_indices=True)",
    "FractionalMaxPool2d(3, output_size=(4, 5))", "FractionalMaxPool3d(2, output_ratio=0.5)",
    "Upsample(scale_factor=2)", "Upsample(scale_factor=(2, 3), mode='bilinear')",
    "Upsample(size=(4, 5), mode='bilinear', align_corners=True)",
    "Upsample(size=7, mode='linear')", "UpsamplingNearest2d(size=4)",
    "UpsamplingBilinear2d(scale_factor=2)",
    "Flatten()", "Flatten(0, 2)", "Unflatten(1, (2, 3))", "Unflatten(-1, [2, -1])",
    "Linear(3, 4)", "Linear(3, 4, bias=False)",
]


@pytest.mark.parametrize("spec", REPRS)
def test_repr_matches_torch(spec):
    module, torch_module = build(spec)
    assert repr(module) == repr(torch_module)


def test_conv_attributes_and_shapes():
    conv, tconv = build("Conv2d(4, 6, (3, 2), stride=2, groups=2)")
    for name in ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
                 "transposed", "output_padding", "groups", "padding_mode",
                 "_reversed_padding_repeated_twice"):
        assert getattr(conv, name) == getattr(tconv, name), name
    assert tuple(conv.weight.shape) == (6, 2, 3, 2) and tuple(conv.bias.shape) == (6,)
    for spec in ("Conv1d(2, 3, 4, padding='same', dilation=3)",
                 "Conv3d(2, 3, (2, 3, 4), padding='same')",
                 "ConvTranspose2d(4, 6, 3, groups=2)"):
        conv, tconv = build(spec)
        assert conv._reversed_padding_repeated_twice == tconv._reversed_padding_repeated_twice
        assert tuple(conv.weight.shape) == tuple(tconv.weight.shape)


@pytest.mark.parametrize("spec", ["Conv2d(16, 32, 3)", "Conv1d(8, 64, 5, groups=4)",
                                  "ConvTranspose2d(16, 32, 3)", "Linear(200, 300)"])
def test_default_init_matches_torch(spec):
    module, torch_module = build(spec)
    fan_in = torch.nn.init._calculate_fan_in_and_fan_out(torch_module.weight)[0]
    bound = 1 / math.sqrt(fan_in)
    for name, tparam in torch_module.named_parameters():
        v = numpy(getattr(module, name)).astype(np.float64)
        ref = tparam.detach().numpy().astype(np.float64)
        assert v.shape == ref.shape
        assert np.abs(v).max() <= bound * (1 + 1e-6)
        assert np.abs(v).max() > 0.8 * bound
        if v.size > 1000:
            assert v.std() == pytest.approx(bound / math.sqrt(3), rel=0.05)
            assert v.std() == pytest.approx(ref.std(), rel=0.07)
    # reset_parameters draws again
    before = numpy(module.weight).copy()
    module.reset_parameters()
    assert not np.array_equal(before, numpy(module.weight))


def test_factory_kwargs():
    conv = nn.Conv2d(2, 3, 3, dtype=tp.float64, device="cpu")
    assert conv.weight.dtype == tp.float64 and conv.bias.dtype == tp.float64
    tconv = torch.nn.Conv2d(2, 3, 3, dtype=torch.float64)
    copy_weights(conv, tconv)
    a = RNG.standard_normal((1, 2, 4, 4))
    np.testing.assert_allclose(numpy(conv(tp.tensor(a))),
                               tconv(torch.tensor(a)).detach().numpy(), atol=1e-12)
    deconv = nn.ConvTranspose1d(2, 3, 3, bias=False, dtype=tp.float64)
    assert deconv.weight.dtype == tp.float64 and deconv.bias is None


def test_conv_errors():
    with pytest.raises(ValueError, match=r"Conv2d\(\): in_channels must be divisible by groups"
                                         r".*in_channels=3, groups=2"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv1d(4, 3, 3, groups=2)
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        nn.Conv2d(4, 4, 3, groups=0)
    with pytest.raises(ValueError, match="invalid padding string 'full'"):
        nn.Conv2d(2, 2, 3, padding="full")
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        nn.Conv2d(2, 2, 3, padding="same", stride=2)
    with pytest.raises(ValueError, match="padding_mode must be one of.*'mirror'"):
        nn.Conv2d(2, 2, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match=r'ConvTranspose2d\(\): only "zeros" padding mode'):
        nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect")
    deconv = nn.ConvTranspose2d(2, 2, 3, stride=2)
    x = tp.randn(1, 2, 3, 3)
    with pytest.raises(ValueError, match=r"requested an output size of \[10, 7\], but valid "
                                         r"sizes range from \[7, 7\] to \[8, 8\]"):
        deconv(x, output_size=[10, 7])
    with pytest.raises(ValueError, match="'output_size' must have 2 or 4 elements, but got 3"):
        deconv(x, output_size=[1, 7, 7])
    # A wrong input reaches the functional's own check.
    with pytest.raises(ValueError, match="conv2d"):
        nn.Conv2d(2, 2, 3)(tp.randn(2, 2))


# ---- pooling and resampling ---------------------------------------------------------

POOLS = [
    ("MaxPool1d(3)", (2, 3, 10)),
    ("MaxPool1d(3, 2, 1, dilation=2, ceil_mode=True, return_indices=True)", (2, 2, 10)),
    ("MaxPool1d(2)", (3, 7)),                                             # unbatched
    ("MaxPool2d(2)", (2, 3, 6, 5)),
    ("MaxPool2d((3, 2), stride=(2, 1), padding=1, return_indices=True)", (1, 2, 6, 5)),
    ("MaxPool2d(3, 2, ceil_mode=True, dilation=(1, 2))", (1, 2, 8, 9)),
    ("MaxPool2d(2, return_indices=True)", (2, 5, 4)),                     # unbatched
    ("AvgPool1d(3)", (2, 3, 10)),
    ("AvgPool1d(4, 2, 2, ceil_mode=True, count_include_pad=False)", (2, 2, 9)),
    ("AvgPool2d(2)", (2, 3, 6, 5)),
    ("AvgPool2d((3, 2), stride=(2, 1), padding=1, count_include_pad=False)", (1, 2, 6, 5)),
    ("AvgPool2d(3, 2, 1, ceil_mode=True, divisor_override=4)", (1, 2, 7, 8)),
    ("AdaptiveAvgPool1d(4)", (2, 3, 10)),
    ("AdaptiveAvgPool2d((3, 2))", (2, 2, 7, 5)),
    ("AdaptiveAvgPool2d(1)", (2, 3, 4, 4)),
    ("AdaptiveAvgPool2d((None, 3))", (1, 2, 5, 7)),
    ("AdaptiveMaxPool1d(3, return_indices=True)", (2, 2, 8)),
    ("AdaptiveMaxPool2d((2, 3), return_indices=True)", (2, 2, 5, 7)),
    ("AdaptiveMaxPool2d(2)", (3, 5, 5)),                                  # unbatched
    ("MaxPool3d(2)", (2, 2, 4, 5, 4)),
    ("MaxPool3d((2, 3, 2), stride=(1, 2, 2), padding=1, dilation=(2, 1, 1), "
     "ceil_mode=True, return_indices=True)", (1, 2, 5, 6, 5)),
    ("MaxPool3d(2, return_indices=True)", (2, 4, 4, 3)),                  # unbatched
    ("AvgPool3d(2)", (2, 2, 4, 5, 4)),
    ("AvgPool3d((3, 2, 2), stride=(2, 1, 2), padding=1, ceil_mode=True, "
     "count_include_pad=False)", (1, 2, 5, 4, 5)),
    ("AvgPool3d(2, divisor_override=3)", (2, 4, 4, 3)),                  # unbatched
    ("AdaptiveAvgPool3d((2, 3, 1))", (2, 2, 5, 4, 3)),
    ("AdaptiveAvgPool3d((None, 2, None))", (2, 3, 4, 5)),                # unbatched
    ("AdaptiveMaxPool3d((2, 3, 2), return_indices=True)", (2, 2, 5, 4, 3)),
    ("AdaptiveMaxPool3d(1)", (2, 3, 4, 5)),                              # unbatched
    ("Upsample(scale_factor=2)", (2, 2, 3, 4)),
    ("Upsample(size=(5, 7))", (1, 2, 3, 4)),
    ("Upsample(scale_factor=(1.5, 2.5), mode='bilinear')", (1, 2, 4, 3)),
    ("Upsample(size=(5, 6), mode='bilinear', align_corners=True)", (1, 2, 3, 4)),
    ("Upsample(scale_factor=3, mode='linear')", (2, 2, 4)),
    ("Upsample(size=7, mode='nearest')", (2, 2, 4)),
    ("UpsamplingNearest2d(scale_factor=2)", (1, 2, 3, 3)),
    ("UpsamplingBilinear2d(size=(5, 4))", (1, 2, 3, 3)),
    ("Flatten()", (2, 3, 4, 5)),
    ("Flatten(0, 2)", (2, 3, 4, 5)),
    ("Flatten(-3, -2)", (2, 3, 4, 5)),
    ("Unflatten(1, (3, 4))", (2, 12, 5)),
    ("Unflatten(-1, (2, -1))", (2, 3, 8)),
]


@pytest.mark.parametrize("spec, x_shape", POOLS, ids=[p[0] for p in POOLS])
def test_pool_resample_flatten_match_torch(spec, x_shape):
    check(*build(spec), x_shape)


def test_unflatten_errors():
    with pytest.raises(TypeError, match="unflattened_size.*tuple of ints.*int"):
        nn.Unflatten(1, 4)
    with pytest.raises(TypeError, match="element of type float at pos 1"):
        nn.Unflatten(1, (2, 2.0))
    with pytest.raises(TypeError, match="'dim' must be an int.*str"):
        nn.Unflatten("features", (("a", 2), ("b", 3)))


FRACTIONAL = [
    ("FractionalMaxPool2d(2, output_size=(3, 4), return_indices=True)", (2, 3, 6, 7), 2),
    ("FractionalMaxPool2d((2, 3), output_ratio=(0.5, 0.7))", (3, 7, 8), 2),   # unbatched
    ("FractionalMaxPool3d(2, output_size=(2, 3, 3), return_indices=True)", (2, 2, 4, 5, 6), 3),
    ("FractionalMaxPool3d((1, 2, 2), output_ratio=0.6)", (2, 5, 5, 4), 3),   # unbatched
]


@pytest.mark.parametrize("spec, x_shape, dims", FRACTIONAL, ids=[f[0] for f in FRACTIONAL])
def test_fractional_max_pool_matches_torch(spec, x_shape, dims):
    """With _random_samples given, the windows are PyTorch's; drawn, the shapes and dtypes
    of the samples and the result are."""
    batch = 1 if len(x_shape) == dims + 1 else x_shape[0]
    samples = RNG.random((batch, x_shape[-dims - 1], dims)).astype(np.float32)
    fixed = spec[:-1] + ", _random_samples=_samples)"
    ours = eval("nn." + fixed, {"nn": nn, "_samples": tp.tensor(samples)})
    theirs = eval("torch.nn." + fixed, {"torch": torch, "_samples": torch.tensor(samples)})
    assert repr(ours) == repr(theirs)
    check(ours, theirs, x_shape)
    drawn, t_drawn = build(spec)
    a = RNG.standard_normal(x_shape).astype(np.float32)
    y, ty = drawn(tp.tensor(a)), t_drawn(torch.tensor(a))
    if isinstance(ty, tuple):
        assert y[1].dtype == tp.int64
        y, ty = y[0], ty[0]
    assert tuple(y.shape) == tuple(ty.shape) and y.dtype == tp.float32
    # every output is an input element (a max of some window)
    assert np.isin(numpy(y), a).all()


def test_fractional_max_pool_argument_errors_as_torch():
    for m in (nn, torch.nn):
        with pytest.raises(ValueError, match="requires specifying either an output size"):
            m.FractionalMaxPool2d(2)
        with pytest.raises(ValueError, match="only one of output_size and output_ratio"):
            m.FractionalMaxPool3d(2, output_size=2, output_ratio=0.5)
        with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
            m.FractionalMaxPool2d(2, output_ratio=(0.5, 1.0))


def test_pool_errors_come_from_the_functional():
    with pytest.raises(ValueError, match="max_pool1d.*'input'"):
        nn.MaxPool1d(2)(tp.randn(1, 2, 3, 4))
    with pytest.raises(TypeError, match="interpolate.*'mode'"):
        nn.Upsample(scale_factor=2, mode="bicubic")(tp.randn(1, 1, 2, 2))


# ---- a small CNN end to end ------------------------------------------------------------

class _ReLU(nn.Module):
    """Stand-in for nn.ReLU while activation.py is not there yet (same repr)."""

    def forward(self, input):
        return tp.relu(input)

    def _get_name(self):
        return "ReLU"


def _cnn(lib, relu):
    n = lib.nn
    return n.Sequential(n.Conv2d(1, 4, 3, padding=1), relu(), n.MaxPool2d(2),
                        n.Conv2d(4, 6, 3, padding="same", padding_mode="reflect"), relu(),
                        n.AdaptiveAvgPool2d((2, 2)), n.Flatten(), n.Linear(24, 3))


def test_small_cnn_matches_torch_end_to_end():
    relu = getattr(nn, "ReLU", _ReLU)
    model, torch_model = _cnn(tp, relu), _cnn(torch, torch.nn.ReLU)
    assert list(model.state_dict()) == ["0.weight", "0.bias", "3.weight", "3.bias",
                                        "7.weight", "7.bias"]
    assert repr(model) == repr(torch_model)
    check(model, torch_model, (3, 1, 8, 8))
    # And back: our state_dict loads into torch's model.
    state = {k: torch.tensor(numpy(v)) for k, v in model.state_dict().items()}
    torch_model.load_state_dict(state)


# ---- on the cuda device ----------------------------------------------------------------

@pytest.fixture
def cuda():
    pytest.importorskip("triton")
    if not (tp.cuda.is_available() or tp.cuda.is_interpreted()):
        pytest.skip("no GPU and no Triton interpreter")
    return tp.device("cuda")


CUDA_LAYERS = [
    ("Conv2d(2, 3, 3, padding=1, groups=1)", (1, 2, 4, 4)),
    ("Conv1d(2, 2, 3, padding=1, padding_mode='circular', groups=2)", (1, 2, 5)),
    ("ConvTranspose2d(2, 2, 2, stride=2)", (1, 2, 2, 3)),
    ("MaxPool2d(2, return_indices=True)", (1, 2, 4, 4)),
    ("AvgPool1d(2, count_include_pad=False, padding=1)", (1, 2, 5)),
    ("AdaptiveAvgPool2d(2)", (1, 2, 5, 3)),
    ("Upsample(scale_factor=2, mode='bilinear')", (1, 1, 2, 3)),
    ("Flatten()", (2, 2, 3)),
]


@pytest.mark.parametrize("spec, x_shape", CUDA_LAYERS, ids=[c[0] for c in CUDA_LAYERS])
def test_layers_on_cuda_match_cpu(cuda, spec, x_shape):
    module, _ = build(spec)
    a = RNG.standard_normal(x_shape).astype(np.float32)
    expected = module(tp.tensor(a))
    moved = module.to("cuda")
    assert moved is module
    for p in module.parameters():
        assert p.device == cuda and isinstance(p, nn.Parameter)
    got = module(tp.tensor(a).to(cuda))
    if isinstance(expected, tuple):
        np.testing.assert_array_equal(numpy(got[1]), numpy(expected[1]))
        got, expected = got[0], expected[0]
    assert got.device == cuda
    np.testing.assert_allclose(numpy(got), numpy(expected), rtol=1e-5, atol=1e-5)


def test_conv_gradients_on_cuda(cuda):
    conv, tconv = build("Conv2d(2, 2, 2, padding=1)")
    copy_weights(conv, tconv)
    conv.to(cuda)
    a = RNG.standard_normal((1, 2, 3, 3)).astype(np.float32)
    x = tp.tensor(a).to(cuda).requires_grad_()
    tx = torch.tensor(a, requires_grad=True)
    conv(x).sum().backward()
    tconv(tx).sum().backward()
    np.testing.assert_allclose(numpy(x.grad), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(numpy(conv.weight.grad), tconv.weight.grad.numpy(), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(numpy(conv.bias.grad), tconv.bias.grad.numpy(), rtol=1e-5,
                               atol=1e-5)
