"""The nn functions PyTorch also serves in the `torch` namespace.

Most are the very functions of `torch.nn.functional` (`torch.conv2d is F.conv2d`), and
`tp.conv2d` is `tp.nn.functional.conv2d` the same way (SAME_AS_FUNCTIONAL). A few have
ATen's signature at the torch level instead of nn.functional's: the dropouts take a
required `train` flag (`torch.alpha_dropout(input, p, train)`), the losses take
`reduction` as ATen's enum (0 none, 1 mean, 2 sum), rrelu takes a generator. They are
written below, each calling nn.functional's code, so the two forms cannot drift apart.
"""
from __future__ import annotations

from tensorplay.errors import ArgumentError
from tensorplay.nn import _functional_activations, _functional_dropout
from tensorplay.nn import functional as F

# torch.X is torch.nn.functional.X for these (checked by tests/test_nn_torch_namespace.py)
SAME_AS_FUNCTIONAL = (
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "bilinear", "pdist", "channel_shuffle",
)

# ATen's `Reduction` enum, by value (aten/src/ATen/core/Reduction.h)
REDUCTIONS = ("none", "mean", "sum")


def _reduction(op, reduction):
    """ATen's enum value, or nn.functional's name of it (both are accepted)."""
    if isinstance(reduction, str) and reduction in REDUCTIONS:
        return reduction
    if type(reduction) is int and 0 <= reduction < len(REDUCTIONS):
        return REDUCTIONS[reduction]
    raise ArgumentError(f"{op}(): argument 'reduction' must be 0 (none), 1 (mean) or 2 "
                        f"(sum), but got {reduction!r}", op=op, arg="reduction")


def alpha_dropout(input, p, train):
    return F.alpha_dropout(input, p, train)


def feature_alpha_dropout(input, p, train):
    return F.feature_alpha_dropout(input, p, train)


def feature_dropout(input, p, train):
    """Dropout of whole channels: one draw per (sample, channel) of an (N, C, *) input."""
    return _functional_dropout._channel_dropout("feature_dropout", input, p, train, False,
                                                input.dim())


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _functional_activations.rrelu(input, lower, upper, training, generator=generator)


def native_channel_shuffle(input, groups):
    return F.channel_shuffle(input, groups)


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    return F.hinge_embedding_loss(input, target, margin,
                                  reduction=_reduction("hinge_embedding_loss", reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        reduction=1):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction("triplet_margin_loss", reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction("poisson_nll_loss", reduction))


# The in-place forms (torch.dropout_(input, p, train), ...): the same, written into input.
def dropout_(input, p, train):
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout_(input, p, train):
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout_(input, p, train):
    return F.feature_alpha_dropout(input, p, train, inplace=True)


def feature_dropout_(input, p, train):
    return _functional_dropout._channel_dropout("feature_dropout_", input, p, train, True,
                                                input.dim())


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _functional_activations.rrelu(input, lower, upper, training, inplace=True,
                                         generator=generator)


def embedding_renorm_(input, indices, max_norm, norm_type):
    """The rows of `input` that `indices` names scaled down to norm max_norm, in place."""
    from tensorplay.nn import _functional_embedding
    return _functional_embedding._embedding_renorm_(input, indices, max_norm, norm_type)


ATEN_FORMS = ("dropout_", "alpha_dropout_", "feature_alpha_dropout_", "feature_dropout_",
              "rrelu_", "embedding_renorm_",
              "alpha_dropout", "feature_alpha_dropout", "feature_dropout", "rrelu",
              "native_channel_shuffle",
              "hinge_embedding_loss", "triplet_margin_loss", "poisson_nll_loss")


def names():
    """{torch-level name: function} for tensorplay/_api.py. (SyncBatchNorm's steps,
    torch.batch_norm_stats and the others, are ops of ops.yaml.)"""
    out = {name: getattr(F, name) for name in SAME_AS_FUNCTIONAL}
    out.update({name: globals()[name] for name in ATEN_FORMS})
    return out
