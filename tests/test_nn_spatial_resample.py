"""tp.nn.functional interpolate / unfold / fold against PyTorch, with gradients to second
order (all three are linear maps, so their double backward is exact)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tensorplay as tp
import tensorplay.nn.functional as F
from tensorplay.autograd import gradcheck, gradgradcheck
from tensorplay.errors import ArgumentError, ShapeError

RNG = np.random.default_rng(11)

CASES = [
    ("interpolate", (2, 3, 4, 5), dict(scale_factor=2)),
    ("interpolate", (1, 2, 5, 4), dict(size=(7, 3))),
    ("interpolate", (1, 2, 5, 4), dict(scale_factor=(1.7, 0.6))),
    ("interpolate", (2, 3, 6), dict(scale_factor=1.5)),
    ("interpolate", (2, 3, 4, 5), dict(size=(7, 9), mode="bilinear", align_corners=True)),
    ("interpolate", (2, 3, 4, 5), dict(size=(7, 3), mode="bilinear", align_corners=False)),
    ("interpolate", (1, 2, 4, 5), dict(scale_factor=2.5, mode="bilinear")),
    ("interpolate", (1, 2, 4, 5), dict(scale_factor=2.5, mode="bilinear",
                                       recompute_scale_factor=True)),
    ("interpolate", (2, 3, 5), dict(size=8, mode="linear", align_corners=True)),
    ("interpolate", (2, 3, 5), dict(scale_factor=0.5, mode="linear")),
    ("unfold", (2, 3, 5, 4), dict(kernel_size=(2, 3), dilation=(2, 1), padding=1, stride=2)),
    ("unfold", (3, 4, 4), dict(kernel_size=2)),
]


def _call(lib, name, x, kwargs):
    return getattr(lib, name)(x, **kwargs)


@pytest.mark.parametrize("name, shape, kwargs", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_matches_torch(name, shape, kwargs):
    a = RNG.standard_normal(shape)
    x, tx = tp.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = _call(F, name, x, kwargs), _call(TF, name, tx, kwargs)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), atol=1e-12)
    g = RNG.standard_normal(tuple(ty.shape))
    (y * tp.tensor(g)).sum().backward()
    (ty * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=1e-12)
    x2 = tp.tensor(RNG.standard_normal((1,) + tuple(shape[1:])), requires_grad=True)
    fn = lambda x: _call(F, name, x, kwargs)   # noqa: E731
    assert gradcheck(fn, (x2,))
    assert gradgradcheck(fn, (x2,))


def test_interpolate_float32_positions_match_torch():
    """Source positions are computed in float32 as PyTorch does: awkward ratios agree."""
    a = RNG.standard_normal((1, 1, 7, 13)).astype(np.float32)
    for kwargs in (dict(size=(23, 29)), dict(size=(5, 11), mode="bilinear"),
                   dict(scale_factor=1.3)):
        got = F.interpolate(tp.tensor(a), **kwargs).numpy()
        want = TF.interpolate(torch.tensor(a), **kwargs).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_fold_matches_torch():
    a = RNG.standard_normal((1, 3 * 2 * 3, 15))
    kwargs = dict(output_size=(4, 5), kernel_size=(2, 3), dilation=1, padding=(1, 0), stride=1)
    x, tx = tp.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = F.fold(x, **kwargs), TF.fold(tx, **kwargs)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), atol=1e-12)
    fn = lambda x: F.fold(x, **kwargs)   # noqa: E731
    assert gradcheck(fn, (x,)) and gradgradcheck(fn, (x,))


@pytest.mark.parametrize("call, error, regex, arg", [
    (lambda x: F.interpolate(x, scale_factor=2, mode="bicubic"), ArgumentError,
     r"interpolate\(\): argument 'mode' must be one of", "mode"),
    (lambda x: F.interpolate(x, scale_factor=2, mode="linear"), ShapeError,
     r"interpolate\(\): mode 'linear' needs a 3-D input", "input"),
    (lambda x: F.interpolate(x, scale_factor=2, align_corners=True), ArgumentError,
     r"interpolate\(\): argument 'align_corners' only applies", "align_corners"),
    (lambda x: F.interpolate(x), ArgumentError,
     r"interpolate\(\): exactly one of argument 'size' and argument 'scale_factor'", "size"),
    (lambda x: F.interpolate(x, size=(1, 2, 3)), ArgumentError,
     r"interpolate\(\): argument 'size' must have 2 element", "size"),
    (lambda x: F.unfold(x, 5), ShapeError, r"im2col\(\): no sliding block fits", "self"),
    (lambda x: F.fold(F.unfold(x, 2), (4, 5), 2), ShapeError,
     r"col2im\(\): argument 'self' has 9 blocks", "self"),
])
def test_errors(call, error, regex, arg):
    with pytest.raises(error, match=regex) as info:
        call(tp.zeros(1, 2, 4, 4))
    assert info.value.arg == arg
