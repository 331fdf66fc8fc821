"""Database entries: cosine_similarity, pairwise_distance, cdist, dist."""
from __future__ import annotations
import torch
import tensorplay as tp
from tensorplay.errors import ArgumentError, DTypeError, ShapeError
from opinfo.core import ErrorInput as E, FLOATING, make_tensor, OpInfo, rng_for, SampleInput as S
from opinfo.reduction_common import t_
F = tp.nn.functional
TF = torch.nn.functional
from opinfo.samples import TOL, _grad, _pair_samples, _t, _x


# ---- distances --------------------------------------------------------------------------
def _distance_pairs(op, device, dtype, requires_grad):
    rng = rng_for(op.full_name, dtype)
    grad = _grad(dtype, requires_grad)
    for a, b, la, lb in (((3, 5), (3, 5), "contiguous", "transposed"),
                         ((2, 3, 4), (3, 4), "strided", "contiguous"),
                         ((4,), (4,), "contiguous", "contiguous"),
                         ((3, 1), (1, 4), "contiguous", "contiguous")):
        yield (make_tensor(a, dtype, device, rng=rng, layout=la, requires_grad=grad),
               make_tensor(b, dtype, device, rng=rng, layout=lb, requires_grad=grad),
               f"{list(a)} and {list(b)}")


def _cosine_samples(op, device, dtype, requires_grad):
    for x1, x2, what in _distance_pairs(op, device, dtype, requires_grad):
        dim = -1 if x1.dim() < 2 or x1.shape[-1] == 4 else 1
        yield S(x1, (x2,), {"dim": dim}, name=f"{what} dim={dim}")
    z = tp.zeros(2, 3, dtype=dtype, device=device)
    yield S(z, (tp.ones(2, 3, dtype=dtype, device=device),), name="zero vector", grad=False)


def _pairwise_samples(op, device, dtype, requires_grad):
    for i, (x1, x2, what) in enumerate(_distance_pairs(op, device, dtype, requires_grad)):
        p, keepdim = ((2.0, False), (1.0, True), (3.0, False), (float("inf"), False))[i]
        yield S(x1, (x2,), {"p": p, "keepdim": keepdim}, name=f"{what} p={p} keepdim={keepdim}")
    x1, x2, what = next(_distance_pairs(op, device, dtype, False))
    yield S(x1, (x2,), {"p": 0.0}, name="p=0 (count)", grad=False)


def errors_pairwise(op, device):
    yield E(S(_t((3, 4), device=device), (_t((5, 4), device=device),)), ShapeError,
            r"pairwise_distance\(\): argument 'x2' \(shape \[5, 4\]\) is not broadcastable",
            arg="x2")


# ---- cdist, norms -----------------------------------------------------------------------
def _cdist_samples(op, device, dtype, requires_grad):
    def pair():
        return (_x(op, device, dtype, requires_grad, (4, 3)),
                _x(op, device, dtype, requires_grad, (5, 3), "transposed"))
    for p in (2.0, 1.0, 3.0, float("inf")):
        x1, x2 = pair()
        yield S(x1, (x2,), {"p": p}, name=f"p={p}")
    x1, x2 = pair()
    yield S(x1, (x2,), {"p": 0.0}, name="p=0 (count)", grad=False)
    yield S(_x(op, device, dtype, requires_grad, (2, 3, 2)),
            (_x(op, device, dtype, requires_grad, (1, 4, 2)),), name="broadcast batch")


def _errors_cdist(op, device):
    yield E(S(t_((3, 4), device=device), (t_((2, 5), device=device),)), ShapeError,
            r"X1 and X2 must have the same number of columns", arg="x2")
    yield E(S(t_((4,), device=device), (t_((2, 4), device=device),)), ShapeError,
            r"only supports at least 2D tensors, X1 got: 1D", arg="x1")


def _errors_dist(op, device):
    yield E(S(t_((3,), tp.int64, device=device), (t_((3,), tp.int64, device=device),)),
            DTypeError, r"dist\(\): input dtype should be floating point", arg="self")

op_db = [
    OpInfo("cosine_similarity", op=F.cosine_similarity, ref=TF.cosine_similarity,
           overloads=("cosine_similarity",), dtypes=FLOATING, sample_inputs_func=_cosine_samples,
           tolerances=TOL),
    OpInfo("pairwise_distance", op=F.pairwise_distance, ref=TF.pairwise_distance,
           overloads=("pairwise_distance",), dtypes=FLOATING,
           sample_inputs_func=_pairwise_samples, error_inputs_func=errors_pairwise,
           tolerances=TOL),
    # PyTorch's cdist has no float16 / bfloat16 kernel on the CPU to compare with.
    OpInfo("cdist", overloads=("cdist",), dtypes=(tp.float32, tp.float64), tolerances=TOL,
           sample_inputs_func=_cdist_samples, error_inputs_func=_errors_cdist),
    OpInfo("dist", overloads=("dist",), dtypes=FLOATING, tolerances=TOL,
           sample_inputs_func=_pair_samples, error_inputs_func=_errors_dist),
]
