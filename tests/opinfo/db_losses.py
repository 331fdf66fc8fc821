"""Database entries: nll_loss and cross_entropy, their kernels (nll_loss_forward /
backward, the fused cross-entropy pair), ctc_loss and its kernels. The entries call `tp.nn.functional`, so the
PyTorch-signature wrappers are tested together with the ops of ops.yaml."""
from __future__ import annotations

import torch

import tensorplay as tp
from tensorplay.errors import ArgumentError, DimError, DTypeError, ShapeError
from opinfo.core import FLOATING, ErrorInput, OpInfo, SampleInput, make_tensor, rng_for
import warnings
from functools import partial

E = ErrorInput
S = SampleInput
TF = torch.nn.functional
F = tp.nn.functional
REDUCTION = {"none": 0, "mean": 1, "sum": 2}
REDUCTIONS = ("mean", "sum", "none")
HALF_TOL = {tp.float16: (5e-3, 5e-3), tp.bfloat16: (3e-2, 3e-2), tp.float32: (1e-5, 1e-5)}


def _grad(dtype, requires_grad):
    return requires_grad and dtype.is_floating_point


def _t(shape, dtype=tp.float32, device="cpu", **kw):
    return make_tensor(shape, dtype, device, rng=rng_for("loss errors", shape, dtype), **kw)


# ---- nll_loss and cross_entropy -------------------------------------------------------
# (input shape, layout, with weight, ignore_index, what)
NLL_CASES = (
    ((4, 5), "contiguous", False, -100, "2-D"),
    ((4, 5), "transposed", True, -100, "weight, non-contiguous"),
    ((5,), "contiguous", False, -100, "1-D input, 0-dim target"),
    ((2, 3, 2, 2), "contiguous", True, 1, "spatial dims, weight, ignore_index=1"),
    ((3, 4, 2), "strided", False, -100, "one spatial dim"),
    ((0, 3), "contiguous", False, -100, "empty batch"),
)


def _targets(shape, classes, ignore_index, device, rng):
    batch = () if len(shape) == 1 else (shape[0],) + tuple(shape[2:])
    t = make_tensor(batch, tp.int64, device, rng=rng, low=0, high=classes)
    if t.numel() > 1:
        flat = t.view(-1)
        flat[0] = ignore_index   # one ignored sample in every batch that has two
    return t


def _nll_cases(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    for i, (shape, layout, weighted, ignore, what) in enumerate(NLL_CASES):
        classes = shape[0] if len(shape) == 1 else shape[1]
        # Every reduction for the first case, one each (in turn) for the others: keeps
        # the gradient tests fast.
        for reduction in ("mean", "sum", "none") if i == 0 else (REDUCTIONS[i % 3],):
            x = make_tensor(shape, dtype, device, rng=rng, layout=layout,
                            requires_grad=_grad(dtype, requires_grad))
            w = make_tensor((classes,), dtype, device, rng=rng, low=0.2, high=2.0) \
                if weighted else None
            t = _targets(shape, classes, ignore, device, rng)
            yield x, t, w, reduction, ignore, f"{what}, {reduction}"


def _nll_samples(op, device, dtype, requires_grad):
    for x, t, w, reduction, ignore, what in _nll_cases(op, device, dtype, requires_grad):
        yield S(x, (t,), {"weight": w, "ignore_index": ignore, "reduction": reduction},
                name=what)
    x = make_tensor((3, 4), dtype, device, rng=rng_for("all ignored"))
    yield S(x, (tp.tensor([-100, -100, -100], device=device),), name="all ignored: nan")


def _nll_forward_samples(op, device, dtype, requires_grad):
    for x, t, w, reduction, ignore, what in _nll_cases(op, device, dtype, requires_grad):
        yield S(x, (t, w, reduction, ignore), name=what)


def _nll_backward_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype, "grad")
    for x, t, w, reduction, ignore, what in _nll_cases(op, device, dtype, False):
        _, total = _ref_nll_forward(
            torch.tensor(x.float().cpu().numpy()), torch.tensor(t.cpu().numpy()),
            None if w is None else torch.tensor(w.float().cpu().numpy()), reduction, ignore)
        shape = tuple(t.shape) if reduction == "none" else ()
        g = make_tensor(shape, dtype, device, rng=rng, requires_grad=_grad(dtype, requires_grad))
        # (an empty batch's 'mean' divides by a total weight of 0: nan, no finite differences)
        yield S(g, (x, t, w, reduction, ignore, tp.tensor(total.item(), dtype=dtype,
                                                             device=device)), name=what,
                grad=x.numel() > 0)


def _rows(x):
    """(N, C, d1, ...) -> (N * d1 * ..., C): aten's nll kernels take 1-D or 2-D input."""
    return x if x.dim() <= 2 else x.movedim(1, -1).reshape(-1, x.shape[1])


class _SavesInput(torch.autograd.Function):
    """The identity on x that saves x, as PyTorch's public nll_loss of an (N, C, d1, ...)
    input saves a view of it (NllLoss2DBackward0): _rows' copy left the twin saving the
    copy, so an in-place change of x after the call did not make its backward raise where
    TensorPlay's, and PyTorch's own nll_loss's, do (fuzz seed 2052863)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors               # (the version check of the saved input)
        return grad

    @staticmethod
    def jvp(ctx, x_t):
        return x_t


def _ref_nll_forward(x, t, w, reduction, ignore):
    if x.dim() > 2 and x.requires_grad:
        x = _SavesInput.apply(x)
    out, total = torch.ops.aten.nll_loss_forward(_rows(x), t.reshape(-1) if x.dim() > 2
                                                 else t, w, REDUCTION[reduction], ignore)
    if reduction == "none":
        # TensorPlay's total_weight is the sum of the weights for every reduction (PyTorch's
        # is 0 here). The value is written into the tensor PyTorch's backward saved, through
        # .data (which bumps no version), so that an in-place change of total_weight makes
        # backward raise in both, as it does for the other reductions.
        summed = torch.ops.aten.nll_loss_forward(_rows(x), t.reshape(-1) if x.dim() > 2
                                                 else t, w, 2, ignore)[1]
        total.data.copy_(summed)
        out = out.reshape(t.shape)
    return out, total


def _ref_nll_backward(g, x, t, w, reduction, ignore, total):
    gx = torch.ops.aten.nll_loss_backward(g.reshape(-1) if g.dim() > 1 else g, _rows(x),
                                          t.reshape(-1) if x.dim() > 2 else t, w,
                                          REDUCTION[reduction], ignore, total)
    if x.dim() <= 2:
        return gx
    moved = (x.shape[0],) + tuple(x.shape[2:]) + (x.shape[1],)
    # Row-major, as PyTorch's own gradient of an N-d nll_loss (nll_loss2d_backward, which
    # the 3-d and 5-d cases reach through a view) is: the movedim is this reference's
    # detour through the 2-d kernel, not a layout PyTorch gives.
    return gx.reshape(moved).movedim(-1, 1).contiguous()


def _ce_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype, "ce")
    grad = _grad(dtype, requires_grad)
    for x, t, w, reduction, ignore, what in _nll_cases(op, device, dtype, requires_grad):
        yield S(x, (t,), {"weight": w, "ignore_index": ignore, "reduction": reduction},
                name=what)
        if reduction != "none":
            yield S(x.detach().clone().requires_grad_(grad), (t,),
                    {"weight": w, "ignore_index": ignore, "reduction": reduction,
                     "label_smoothing": 0.2}, name=f"{what}, label_smoothing")
    for i, (shape, weighted, smoothing) in enumerate((((4, 5), False, 0.0),
                                                      ((2, 3, 2), True, 0.1),
                                                      ((5,), False, 0.3))):
        for reduction in REDUCTIONS if i == 0 else REDUCTIONS[i:i + 1]:
            classes = shape[0] if len(shape) == 1 else shape[1]
            x = make_tensor(shape, dtype, device, rng=rng, requires_grad=grad)
            p = tp.softmax(make_tensor(shape, dtype, device, rng=rng), 0 if len(shape) == 1
                           else 1).requires_grad_(grad)
            w = make_tensor((classes,), dtype, device, rng=rng, low=0.2, high=2.0) \
                if weighted else None
            yield S(x, (p,), {"weight": w, "reduction": reduction,
                              "label_smoothing": smoothing},
                    name=f"probabilities {list(shape)}, {reduction}, smoothing={smoothing}")
    yield S(tp.tensor([[1e4, 0.0, -1e4], [-1e4, 1e4, 0.0]], dtype=dtype, device=device)
            .requires_grad_(grad), (tp.tensor([2, 1], device=device),), name="extreme logits",
            grad=False)


def _fused_ce_samples(op, device, dtype, requires_grad):
    for x, t, w, reduction, ignore, what in _nll_cases(op, device, dtype, requires_grad):
        if x.dim() == 2:
            yield S(x, (t, w, reduction, ignore), name=what)


class _FusedCrossEntropy(torch.autograd.Function):
    """PyTorch's cross_entropy (its loss and gradient), as one node that saves what the
    fused op's backward saves: target, weight and the probs and total_weight outputs (as
    PyTorch's composition saves log_softmax's result, not self). PyTorch has no fused op;
    with this reference an in-place change of one of those tensors makes backward raise
    in both libraries. The probs output is differentiable (softmax's gradient)."""

    @staticmethod
    def forward(ctx, x, t, w, reduction, ignore):
        loss = TF.cross_entropy(x, t, w, ignore_index=ignore, reduction=reduction)
        probs = torch.softmax(x, 1)
        total = _ref_nll_forward(x, t, w, reduction, ignore)[1]
        ctx.save_for_backward(t, w, probs, total)
        ctx.reduction, ctx.ignore = reduction, ignore
        ctx.mark_non_differentiable(total)
        return loss, probs, total

    @staticmethod
    def backward(ctx, grad, grad_probs, _grad_total):
        t, w, probs, total = ctx.saved_tensors
        w = None if w is None else w.detach()      # (not differentiable, as in PyTorch)
        grad_x = _ref_fused_ce_backward(grad, probs, t, w, ctx.reduction, ctx.ignore, total)
        grad_x = grad_x + probs * (grad_probs - (grad_probs * probs).sum(1, keepdim=True))
        return grad_x, None, None, None, None


def _ref_fused_ce(x, t, w, reduction, ignore):
    return _FusedCrossEntropy.apply(x, t, w, reduction, ignore)


def _fused_ce_backward_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype, "grad")
    for x, t, w, reduction, ignore, what in _nll_cases(op, device, dtype, False):
        if x.dim() != 2:
            continue
        tx, tt = torch.tensor(x.float().cpu().numpy()), torch.tensor(t.cpu().numpy())
        tw = None if w is None else torch.tensor(w.float().cpu().numpy())
        total = _ref_nll_forward(tx, tt, tw, reduction, ignore)[1]
        grad = _grad(dtype, requires_grad)
        g = make_tensor(tuple(t.shape) if reduction == "none" else (), dtype, device, rng=rng,
                        requires_grad=grad)
        probs = tp.tensor(torch.softmax(tx, 1).numpy(), dtype=dtype, device=device)
        probs.requires_grad_(grad)
        # (an empty batch's 'mean' divides by a total weight of 0: no finite differences)
        yield S(g, (probs, t, w, reduction, ignore, tp.tensor(total.item(), dtype=dtype,
                                                                device=device)), name=what,
                grad=x.numel() > 0)


def _ref_fused_ce_backward(g, probs, t, w, reduction, ignore, total):
    """probs * s - onehot(t) * s with s = w[t] * g, written with torch ops (so torch can
    differentiate it with respect to g and probs as the kernel's formula does), in the
    order of PyTorch's cross_entropy backward (log_softmax's backward of nll_loss's
    gradient): an infinite s gives NaN at the target (inf * p - inf), not the -inf of
    (probs - onehot) * s (seed 13557), and inf * p elsewhere."""
    valid = t != ignore
    picked = torch.where(valid, t, 0)
    row_weight = valid.to(probs.dtype) * (1 if w is None else w[picked])
    # An ignored row's gradient is 0 even for a NaN/inf g, as in PyTorch's own
    # cross_entropy backward (nll_loss_backward never writes that row): chosen, not 0 * g.
    scale = torch.where(valid, row_weight * (g / total if reduction == "mean" else g), 0)
    target = TF.one_hot(picked, probs.shape[1]).bool()
    scaled = probs * scale.unsqueeze(1)
    return torch.where(target, scaled - scale.unsqueeze(1), scaled)


def errors_nll(op, device):
    x = _t((3, 4), device=device)
    yield E(S(x, (_t((3,), tp.float32, device=device),)), DTypeError,
            rf"{op.name}\(\): argument 'target' must be an int64 \(or uint8\) tensor",
            arg="target")
    yield E(S(x, (tp.tensor([0, 1], device=device),)), ShapeError,
            rf"{op.name}\(\): argument 'target' must have shape \[3\]", arg="target")
    yield E(S(x, (tp.tensor([0, 1, 2], device=device),), {"weight": _t((3,), device=device)}),
            ShapeError, rf"{op.name}\(\): argument 'weight' must have shape \[4\]",
            arg="weight")
    yield E(S(x, (tp.tensor([0, 1, 2], device=device),), {"reduction": "avg"}), ArgumentError,
            rf"{op.name}\(\): argument 'reduction' must be one of 'none', 'mean', 'sum'",
            arg="reduction")


def errors_nll_forward(op, device):
    x = _t((3, 4), device=device)
    yield E(S(x, (tp.tensor([0, 4, 1], device=device), None, "mean", -100)), DimError,
            r"nll_loss_forward\(\): Target 4 is out of bounds", arg="target", meta=False)
    yield E(S(x, (tp.tensor([0, 1, 1], dtype=tp.int32, device=device), None, "mean", -100)),
            DTypeError, r"nll_loss_forward\(\): argument 'target' must be an int64 \(or uint8\)",
            arg="target")


def errors_fused_ce(op, device):
    yield E(S(_t((3, 4, 2), device=device), (tp.tensor([[0, 1]] * 3, device=device), None,
                                               "mean", -100)), ShapeError,
            r"_cross_entropy_forward\(\): argument 'self' must be 2-D \(N, C\)", arg="self",
            torch_raises=False)


def errors_cross_entropy(op, device):
    x = _t((3, 4), device=device)
    yield E(S(x, (_t((3, 5), device=device),)), ShapeError,
            r"cross_entropy_loss\(\): class probabilities in argument 'target' must have the "
            r"input's shape \[3, 4\]", arg="target")
    yield E(S(x, (tp.tensor([0, 1, 2], device=device),), {"label_smoothing": 1.5}),
            ArgumentError, r"cross_entropy_loss\(\): argument 'label_smoothing' must be between",
            arg="label_smoothing")
    yield E(S(x, (tp.tensor([0, 1, 2], device=device),), {"reduction": "avg"}), ArgumentError,
            r"cross_entropy_loss\(\): argument 'reduction' must be one of", arg="reduction")


CLASS_LOSSES = [
    OpInfo("nll_loss", op=F.nll_loss, ref=TF.nll_loss, overloads=("nll_loss",),
           dtypes=FLOATING, sample_inputs_func=_nll_samples,
           error_inputs_func=errors_nll, tolerances=HALF_TOL),
    OpInfo("nll_loss_forward", ref=_ref_nll_forward,
           overloads=("nll_loss_forward",), dtypes=FLOATING,
           sample_inputs_func=_nll_forward_samples, error_inputs_func=errors_nll_forward,
           tolerances=HALF_TOL),
    OpInfo("nll_loss_backward", ref=_ref_nll_backward,
           overloads=("nll_loss_backward",), dtypes=FLOATING,
           sample_inputs_func=_nll_backward_samples),
    OpInfo("cross_entropy_loss", op=F.cross_entropy, ref=TF.cross_entropy,
           overloads=("cross_entropy_loss", "nll_loss_forward"), dtypes=FLOATING,
           sample_inputs_func=_ce_samples, error_inputs_func=errors_cross_entropy,
           tolerances=HALF_TOL),
    OpInfo("_cross_entropy_forward", ref=_ref_fused_ce, overloads=("_cross_entropy_forward",),
           dtypes=FLOATING, sample_inputs_func=_fused_ce_samples, error_inputs_func=errors_fused_ce,
           # Its total_weight output is not differentiable: gradcheck runs on the
           # cross_entropy_loss entry, which calls this kernel.
           gradcheck=False),
    OpInfo("_cross_entropy_backward", ref=_ref_fused_ce_backward,
           overloads=("_cross_entropy_backward",), dtypes=FLOATING,
           sample_inputs_func=_fused_ce_backward_samples),
]




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


POINTWISE_LOSSES = [
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


# ---- ctc_loss ---------------------------------------------------------------------------
# The samples hold logits; the entries take their log_softmax first (PyTorch's gradient of
# _ctc_loss assumes log_probs came from it, so finite differences agree only through it).
# (T, N, C, targets, 2-D?, input_lengths, target_lengths, blank, zero_infinity, layout,
# index dtype, smooth: no infinite loss)
CTC_CASES = (
    (5, 2, 4, [[1, 2, 0], [3, 3, 1]], True, [5, 4], [2, 3], 0, False, "contiguous", tp.int64,
     True),
    (6, 3, 5, [1, 4, 4, 2], False, [6, 6, 3], [3, 0, 1], 0, False, "transposed", tp.int32,
     True),
    (4, 2, 3, [[0, 1], [1, 1]], True, [4, 1], [2, 2], 2, True, "strided", tp.int64, False),
    (3, 1, 3, [[1]], True, [3], [1], 0, False, "contiguous", tp.int64, True),
)


def _ctc_samples(op, device, dtype, requires_grad, reductions=(None,)):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for i, (T, N, C, tg, padded, il, tl, blank, zinf, layout, index, smooth) in \
            enumerate(CTC_CASES):
        x = make_tensor((T, N, C), dtype, device, rng=rng, layout=layout, requires_grad=grad)
        targets = tp.tensor(tg, dtype=index, device=device)
        reduction = reductions[i % len(reductions)]
        name = f"T={T} N={N} C={C} targets={tg} lengths={il}/{tl} blank={blank} {layout}"
        if reduction is None:
            yield S(x, (targets, il, tl, blank, zinf), name=name, grad=smooth)
            continue
        if op.variant == "Tensor":
            il, tl = tp.tensor(il, device=device), tp.tensor(tl, device=device)
        yield S(x, (targets, il, tl, blank, reduction, zinf), name=f"{name} reduction="
                f"{reduction}", grad=smooth or zinf)


def _ctc_loss_reduced_samples(op, device, dtype, requires_grad):
    yield from _ctc_samples(op, device, dtype, requires_grad, reductions=(1, 0, 2))


def _valid_alpha(nll_alpha, input_lengths, target_lengths, lib):
    """PyTorch leaves log_alpha unwritten past each entry's lengths: compare the rest."""
    nll, alpha = nll_alpha
    if alpha.device.type == "meta":
        return nll, alpha
    width = alpha.shape[-1]
    mask = [[[t < L and s < 2 * S + 1 for s in range(width)] for t in range(alpha.shape[1])]
            for L, S in zip(input_lengths, target_lengths)]
    mask = lib.tensor(mask, device=alpha.device)
    return nll, lib.where(mask, alpha, lib.zeros_like(alpha))


def _tp_ctc(x, targets, il, tl, blank, zinf):
    return _valid_alpha(tp._ctc_loss(x.log_softmax(2), targets, il, tl, blank, zinf), il, tl,
                        tp)


def _torch_ctc(x, targets, il, tl, blank, zinf):
    return _valid_alpha(torch._ctc_loss(x.log_softmax(2), targets, il, tl, blank, zinf), il,
                        tl, torch)


def _ctc_backward_samples(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    fake = OpInfo("_ctc_loss", sample_inputs_func=_ctc_samples)
    for s in _ctc_samples(fake, device, dtype, False):
        targets, il, tl, blank, zinf = s.args
        lp = s.input.log_softmax(2)
        nll, alpha = tp._ctc_loss(lp, targets, il, tl, blank, zinf)
        grad = make_tensor((lp.shape[1],), dtype, device, rng=rng)
        yield S(grad, (lp, targets, il, tl, nll, alpha, blank, zinf), name=s.name)


def _torch_ctc_backward(grad, lp, targets, il, tl, nll, alpha, blank, zinf):
    """PyTorch's backward from its own forward's results (it reads log_alpha only where
    it wrote it, which ours equals)."""
    nll, alpha = torch._ctc_loss(lp, targets, il, tl, blank, zinf)
    return torch.ops.aten._ctc_loss_backward(grad, lp, targets, il, tl, nll, alpha, blank,
                                             zinf)


def _tp_ctc_loss(x, *args):
    return tp.ctc_loss(x.log_softmax(2), *args)


def _torch_ctc_loss(x, *args):
    return torch.ctc_loss(x.log_softmax(2), *args)


def errors_ctc(op, device):
    name = "_ctc_loss"
    x = _t((4, 2, 3), device=device)
    tg = tp.tensor([[1, 2], [1, 1]], device=device)
    yield E(S(x, (tg, [4, 4], [2, 2], 3, False)), ArgumentError,
            rf"{name}\(\): argument 'blank' must be in label range \[0, 3\)", arg="blank")
    yield E(S(x, (tg, [5, 4], [2, 2], 0, False)), ArgumentError,
            rf"{name}\(\): expected argument 'input_lengths' to have value at most 4",
            arg="input_lengths")
    yield E(S(x, (tg, [4], [2, 2], 0, False)), ShapeError,
            rf"{name}\(\): argument 'input_lengths' must be of size batch_size \(2\)",
            arg="input_lengths")
    yield E(S(x, (tg, [4, 4], [3, 2], 0, False)), ShapeError,
            rf"{name}\(\): argument 'targets' \(2-D: one padded row per batch entry\) must "
            r"have shape \[2, >= 3\]", arg="targets")
    yield E(S(x, (tg.float(), [4, 4], [2, 2], 0, False)), DTypeError,
            rf"{name}\(\): argument 'targets' must be an int64 or int32 tensor",
            arg="targets", torch_raises=False)


def errors_ctc_loss(op, device):
    x = _t((4, 2, 3), device=device)
    tg = tp.tensor([[1, 2], [1, 1]], device=device)
    yield E(S(x, (tg, [4, 4], [2, 2], 0, 3, False)), ArgumentError,
            r"ctc_loss\(\): argument 'reduction' must be 0 \(none\), 1 \(mean\) or 2",
            arg="reduction", torch_raises=False, meta=False)


CTC_LOSSES = [
    OpInfo("_ctc_loss", op=_tp_ctc, ref=_torch_ctc, overloads=("_ctc_loss",),
           dtypes=(tp.float32, tp.float64), sample_inputs_func=_ctc_samples,
           # (gradcheck: through ctc_loss below; log_alpha, an output with no gradient,
           # moves under finite differences)
           gradcheck=False, error_inputs_func=errors_ctc, method=False),
    OpInfo("_ctc_loss_backward", ref=_torch_ctc_backward, overloads=("_ctc_loss_backward",),
           dtypes=(tp.float32, tp.float64), sample_inputs_func=_ctc_backward_samples,
           supports_autograd=False),
    OpInfo("ctc_loss", variant="IntList", op=_tp_ctc_loss, ref=_torch_ctc_loss,
           overloads=("ctc_loss.IntList", "_ctc_loss"), dtypes=(tp.float32, tp.float64),
           sample_inputs_func=_ctc_loss_reduced_samples, supports_gradgrad=False,
           error_inputs_func=errors_ctc_loss, method=False),
    OpInfo("ctc_loss", variant="Tensor", op=_tp_ctc_loss, ref=_torch_ctc_loss,
           overloads=("ctc_loss.Tensor", "_ctc_loss"), dtypes=(tp.float32, tp.float64),
           sample_inputs_func=_ctc_loss_reduced_samples, supports_gradgrad=False,
           supports_meta=False, method=False),   # (meta: the lengths are read as values)
]

op_db = CLASS_LOSSES + POINTWISE_LOSSES + CTC_LOSSES
