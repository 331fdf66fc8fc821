"""Database entries: the pointwise losses, BCE, KL, margin and cosine-embedding losses
(nll_loss and cross_entropy: db_nn_layers_nll.py). The entries call `tp.nn.functional`, so the
PyTorch-signature wrappers are tested together with the ops of ops.yaml."""
from __future__ import annotations

import warnings
from functools import partial

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, ShapeError
from opinfo.core import FLOATING, ErrorInput, OpInfo, SampleInput, make_tensor, rng_for

E = ErrorInput
S = SampleInput
TF = torch.nn.functional
F = tp.nn.functional
REDUCTIONS = ("mean", "sum", "none")
HALF_TOL = {tp.float16: (5e-3, 5e-3), tp.bfloat16: (3e-2, 3e-2), tp.float32: (1e-5, 1e-5)}


def _grad(dtype, requires_grad):
    return requires_grad and dtype.is_floating_point


def _t(shape, dtype=tp.float32, device="cpu", **kw):
    return make_tensor(shape, dtype, device, rng=rng_for("loss errors", shape, dtype), **kw)


# ---- pointwise losses -----------------------------------------------------------------
POINTWISE_CASES = (
    ((3, 4), (3, 4), "contiguous", "transposed", "same shape"),
    ((), (), "contiguous", "contiguous", "0-dim"),
    ((2, 3, 4), (2, 3, 4), "strided", "expanded", "non-contiguous"),
    ((0, 3), (0, 3), "contiguous", "contiguous", "empty"),
)


def _pointwise_loss_samples(op, device, dtype, requires_grad, kwargs_list=({},), low=None,
                            high=None, target_low=None, target_high=None):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    turn = 0
    for a, b, la, lb, what in POINTWISE_CASES:
        for kwargs in kwargs_list:
            turn += 1
            for reduction in REDUCTIONS if turn == 1 else (REDUCTIONS[turn % 3],):
                x = make_tensor(a, dtype, device, rng=rng, layout=la, low=low, high=high,
                                requires_grad=grad)
                y = make_tensor(b, dtype, device, rng=rng, layout=lb, low=target_low,
                                high=target_high, requires_grad=grad)
                yield S(x, (y,), {"reduction": reduction, **kwargs},
                        name=f"{what}, {reduction} {kwargs}")


def errors_reduction(op, device):
    yield E(S(_t((3,), device=device), (_t((3,), device=device),), {"reduction": "avg"}),
            ArgumentError, rf"{op.name}\(\): argument 'reduction' must be one of",
            arg="reduction")


def errors_smooth_l1(op, device):
    yield from errors_reduction(op, device)
    yield E(S(_t((3,), device=device), (_t((3,), device=device),), {"beta": -1.0}),
            ArgumentError, r"smooth_l1_loss\(\): argument 'beta' must be non-negative",
            arg="beta")


def errors_huber(op, device):
    yield from errors_reduction(op, device)
    yield E(S(_t((3,), device=device), (_t((3,), device=device),), {"delta": 0.0}),
            ArgumentError, r"huber_loss\(\): argument 'delta' must be positive", arg="delta")


def _bce_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    yield from _pointwise_loss_samples(op, device, dtype, requires_grad, low=0.05, high=0.95,
                                       target_low=0.0, target_high=1.0)
    for reduction in ("mean", "none"):
        yield S(make_tensor((3, 4), dtype, device, rng=rng, low=0.05, high=0.95,
                            requires_grad=grad),
                (make_tensor((3, 4), dtype, device, rng=rng, low=0.0, high=1.0),),
                {"weight": make_tensor((4,), dtype, device, rng=rng, low=0.5, high=2.0),
                 "reduction": reduction}, name=f"weight, {reduction}")
    # log(0) is clamped at -100: a finite loss at the ends of [0, 1].
    yield S(tp.tensor([0.0, 1.0, 0.0, 1.0], dtype=dtype, device=device),
            (tp.tensor([0.0, 0.0, 1.0, 1.0], dtype=dtype, device=device),),
            {"reduction": "none"}, name="probabilities 0 and 1", grad=False)


def errors_bce(op, device):
    yield from errors_reduction(op, device)
    yield E(S(_t((3,), device=device, low=0.1, high=0.9), (_t((4,), device=device),)),
            ShapeError, r"binary_cross_entropy\(\): argument 'target' must have the same "
            r"shape", arg="target")
    yield E(S(tp.tensor([0.5, 1.5], device=device), (tp.tensor([0.0, 1.0], device=device),)),
            ArgumentError, r"binary_cross_entropy\(\): all elements of argument 'self' should "
            r"be between 0 and 1", arg="self", meta=False)


def _bce_logits_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    yield from _pointwise_loss_samples(op, device, dtype, requires_grad, target_low=0.0,
                                       target_high=1.0)
    for reduction in ("mean", "sum", "none"):
        yield S(make_tensor((3, 4), dtype, device, rng=rng, requires_grad=grad),
                (make_tensor((3, 4), dtype, device, rng=rng, low=0.0, high=1.0,
                             requires_grad=grad),),
                {"weight": make_tensor((4,), dtype, device, rng=rng, low=0.5, high=2.0),
                 "pos_weight": make_tensor((4,), dtype, device, rng=rng, low=0.5, high=3.0),
                 "reduction": reduction}, name=f"weight and pos_weight, {reduction}")
    big = [100.0, -100.0, 1e4, -1e4, 30.0, -30.0] if dtype is not tp.float16 else \
        [100.0, -100.0, 30.0, -30.0]
    yield S(tp.tensor(big, dtype=dtype, device=device).requires_grad_(grad),
            (tp.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 0.0][:len(big)], dtype=dtype, device=device),),
            {"reduction": "none"}, name="extreme logits", grad=False)


def errors_bce_logits(op, device):
    yield from errors_reduction(op, device)
    yield E(S(_t((3,), device=device), (_t((4,), device=device),)), ShapeError,
            r"binary_cross_entropy_with_logits\(\): argument 'target' must have the same "
            r"shape", arg="target")


def _kl_div_ref(input, target, **kwargs):
    """PyTorch's kl_div, without its warning that 'mean' will change meaning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return TF.kl_div(input, target, **kwargs)


def _kl_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for reduction in ("mean", "sum", "none", "batchmean"):
        for log_target in (False, True):
            x = tp.log_softmax(make_tensor((3, 4), dtype, device, rng=rng), 1)
            p = tp.softmax(make_tensor((3, 4), dtype, device, rng=rng), 1)
            y = tp.log_softmax(p, 1) if log_target else p
            yield S(x.requires_grad_(grad), (y.requires_grad_(grad),),
                    {"reduction": reduction, "log_target": log_target},
                    name=f"{reduction}, log_target={log_target}")
    yield S(make_tensor((4,), dtype, device, rng=rng, high=0.0, requires_grad=grad),
            (tp.tensor([0.0, 0.5, 0.5, 0.0], dtype=dtype, device=device),),
            {"reduction": "sum"}, name="zero target probabilities", grad=False)


def _ranking_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for shape in ((5,), (2, 3), ()):
        for margin, reduction in ((0.0, "mean"), (0.5, "sum"), (-0.3, "none")):
            sign = make_tensor(shape, dtype, device, rng=rng, exclude_zero=True)
            yield S(make_tensor(shape, dtype, device, rng=rng, requires_grad=grad),
                    (make_tensor(shape, dtype, device, rng=rng, requires_grad=grad),
                     tp.sign(sign)), {"margin": margin, "reduction": reduction},
                    name=f"{list(shape)} margin={margin} {reduction}")


def errors_three_inputs(op, device):
    yield E(S(_t((3,), device=device), (_t((3,), device=device), _t((3,), device=device)),
              {"reduction": "avg"}),
            ArgumentError, rf"{op.name}\(\): argument 'reduction' must be one of",
            arg="reduction")


def _cosine_embedding_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for shape, target in (((3, 5), [1, -1, 1]), ((4,), 1), ((2, 3), [-1, -1])):
        for margin, reduction in ((0.0, "mean"), (0.2, "sum"), (-0.5, "none")):
            yield S(make_tensor(shape, dtype, device, rng=rng, requires_grad=grad),
                    (make_tensor(shape, dtype, device, rng=rng, requires_grad=grad),
                     tp.tensor(target, dtype=dtype, device=device)),
                    {"margin": margin, "reduction": reduction},
                    name=f"{list(shape)} margin={margin} {reduction}")


def errors_cosine_embedding(op, device):
    yield E(S(_t((3, 4), device=device), (_t((3, 4), device=device),
                                          _t((3, 4), device=device))), ShapeError,
            r"cosine_embedding_loss\(\): expected 1-D or 2-D 'input1' and 'input2' with "
            r"'target' one dimension less", arg="target")


op_db = [
    OpInfo("mse_loss", op=F.mse_loss, ref=TF.mse_loss, overloads=("mse_loss",), dtypes=FLOATING,
           sample_inputs_func=_pointwise_loss_samples, error_inputs_func=errors_reduction),
    OpInfo("l1_loss", op=F.l1_loss, ref=TF.l1_loss, overloads=("l1_loss",), dtypes=FLOATING,
           sample_inputs_func=_pointwise_loss_samples, error_inputs_func=errors_reduction),
    OpInfo("smooth_l1_loss", op=F.smooth_l1_loss, ref=TF.smooth_l1_loss,
           overloads=("smooth_l1_loss",), dtypes=FLOATING, error_inputs_func=errors_smooth_l1,
           sample_inputs_func=partial(_pointwise_loss_samples,
                                      kwargs_list=({}, {"beta": 0.5}, {"beta": 0.0}))),
    OpInfo("huber_loss", op=F.huber_loss, ref=TF.huber_loss, overloads=("huber_loss",),
           dtypes=FLOATING, error_inputs_func=errors_huber,
           sample_inputs_func=partial(_pointwise_loss_samples,
                                      kwargs_list=({}, {"delta": 0.5}, {"delta": 2.0}))),
    OpInfo("binary_cross_entropy", op=F.binary_cross_entropy, ref=TF.binary_cross_entropy,
           overloads=("binary_cross_entropy",), dtypes=FLOATING, sample_inputs_func=_bce_samples,
           error_inputs_func=errors_bce),
    OpInfo("binary_cross_entropy_with_logits", op=F.binary_cross_entropy_with_logits,
           ref=TF.binary_cross_entropy_with_logits,
           overloads=("binary_cross_entropy_with_logits",), dtypes=FLOATING,
           sample_inputs_func=_bce_logits_samples, error_inputs_func=errors_bce_logits,
           tolerances=HALF_TOL),
    OpInfo("kl_div", op=F.kl_div, ref=_kl_div_ref, overloads=("kl_div",), dtypes=FLOATING,
           sample_inputs_func=_kl_samples, error_inputs_func=errors_reduction),
    OpInfo("margin_ranking_loss", op=F.margin_ranking_loss, ref=TF.margin_ranking_loss,
           overloads=("margin_ranking_loss",), dtypes=FLOATING,
           sample_inputs_func=_ranking_samples, error_inputs_func=errors_three_inputs),
    OpInfo("cosine_embedding_loss", op=F.cosine_embedding_loss, ref=TF.cosine_embedding_loss,
           overloads=("cosine_embedding_loss",), dtypes=FLOATING,
           sample_inputs_func=_cosine_embedding_samples,
           error_inputs_func=errors_cosine_embedding),
]
