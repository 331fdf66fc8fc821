"""The batching-rule registry and the rule families shared by many ops.

A batching rule says how to run an op on a batch at once. Every rule has one
signature (JAX's `batching.py` style):

    rule(op, args, bdims) -> (out, out_bdims)

    op       the OperatorHandle being batched (its schema names the arguments)
    args     the op's positional arguments, with every tensor batched at the current
             vmap level replaced by its *physical* tensor
    bdims    one entry per argument: the batch dim of that physical tensor, or
             NOT_MAPPED (None) for an argument that is not batched (a list of them
             for a Tensor[] argument)
    out      the result computed on physical tensors; out_bdims says where its batch
             dim is (one entry per output when the op returns several)

The batching kernel (`vmap.py`) unwraps, calls the rule, wraps the result. Rules call
ops on physical tensors through the ordinary front doors, so autograd records them on
the physical tensors and nested levels dispatch to the Vmap key again.

Where each op's rule is: its ops.yaml entry says (`vmap:`), and the code generator
writes the table `VMAP_RULES` (tensorplay/_generated/declarations.py) that
`register_rules()` below loads into RULES, as tensorplay/_backend_loading.py loads
kernels. A dotted name is a function of a family's module here
(`vmap: conv.convolution_rule` is batching_rules/conv.py:convolution_rule); a bare name is
one of the rule families of this module, which many families share:

    pointwise_rule   broadcast with the batch dim in front (every op tagged pointwise)
    dim_rule         move the batch dim first, shift the dim arguments (every op tagged
                     reduction that has a `dim`; scans, sorts, softmax...)
    fold_rule        fold the batch into N (ops on (N, C, *spatial): pooling, resample,
                     padding, fold)

The tags that imply a rule, and the family modules, are listed in ops.yaml's header and
tensorplay/codegen/families.py.
"""
from __future__ import annotations

import importlib
import sys

from tensorplay._dtype import bool as bool_dtype, combine_categories, promote_types
from tensorplay._generated.op_tags import OP_TAGS
from tensorplay.errors import DimError
from tensorplay.func.batched import VmapError

NOT_MAPPED = None

RULES = {}      # op full name -> rule


def register_rules(table):
    """Fill RULES from `table` (op -> rule name, as ops.yaml's `vmap:` names them: the
    generated VMAP_RULES). A name that resolves to nothing is an error naming the op and
    the module, as a kernel's is (tensorplay/_backend_loading.py)."""
    for op, name in table.items():
        module_name, _, fn_name = name.rpartition(".")
        module = importlib.import_module(f"{__name__}.{module_name}") if module_name \
            else sys.modules[__name__]
        rule = getattr(module, fn_name, None)
        if rule is None:
            raise ImportError(f"ops.yaml: '{op}' names batching rule '{name}' but "
                              f"{module.__name__} has no '{fn_name}'")
        RULES[op] = rule


class NeedsFallback(Exception):
    """Raised by a rule for an argument combination it does not cover (e.g. a loss with
    class probabilities and weights): the batching kernel loops over the batch instead,
    and records the op in `fallback_ops()` like an op without a rule."""


class NeedsDecomposition(Exception):
    """Raised by the rule of a Composite op for arguments it does not cover (attention with
    dropout, whose random draws must obey vmap's `randomness`): the batching kernel runs
    the op's decomposition on the batched tensors instead, each of its ops batched."""


# ---- helpers ------------------------------------------------------------------------------
def call(op, *args):
    """Run `op` on physical arguments: the key set is recomputed from them, so a lower
    vmap level (or autograd, or the backend) handles the call next."""
    ks = 0
    for i in op.schema.tensor_positions:
        a = args[i]
        if a is None:
            continue
        if isinstance(a, (list, tuple)):
            for t in a:
                if t is not None:
                    ks |= t._impl.keys
        else:
            ks |= a._impl.keys
    return op.call(ks, *args)


def batch_size(args, bdims):
    for a, d in zip(args, bdims):
        if isinstance(d, (list, tuple)):
            for t, e in zip(a, d):
                if e is not None:
                    return t.shape[e]
        elif d is not None:
            return a.shape[d]
    raise VmapError("vmap: internal error: a batching rule ran with no batched argument")


def to_front(x, bdim):
    """The physical tensor with its batch dim first (a view)."""
    if bdim is None or bdim == 0:
        return x
    return x.movedim(bdim, 0)


def materialize(x, bdim, size):
    """`x` with a batch dim first: moved there, or (unbatched) expanded to `size` (a view)."""
    if bdim is None:
        return x.unsqueeze(0).expand((size,) + tuple(x.shape))
    return to_front(x, bdim)


def logical_rank(x, bdim):
    return x.dim() - (bdim is not None)


def wrap_dim(dim, rank, op_name, arg="dim"):
    """A logical dim in [0, rank) (a 0-dim tensor accepts 0 and -1, as PyTorch's do)."""
    bound = max(rank, 1)
    if not -bound <= dim < bound:
        raise DimError(f"{op_name}(): argument '{arg}' (dim {dim}) is out of range for a "
                       f"tensor of {rank} dims under vmap (expected in [{-bound}, "
                       f"{bound - 1}])", op=op_name, arg=arg)
    return dim % bound


def pad_rank(x, rank):
    """A batch-first physical tensor with size-1 dims inserted after the batch dim until
    its logical rank is `rank` (so it broadcasts against unbatched tensors of that rank,
    which align from the right and never meet the batch dim)."""
    for _ in range(rank - (x.dim() - 1)):
        x = x.unsqueeze(1)
    return x


def op_name(op):
    return op.name.split(".")[0]


# ---- pointwise: broadcast with the batch dim in front -------------------------------------
#
#   logical shapes       physical, after the rule      result
#   x [3] (bdim 1: [3,B]) ->  [B, 1, 3]                 [B, 2, 3] bdim 0
#   y [2, 3] unbatched    ->  [2, 3] (unchanged)
#
def per_example_rule(op, args, bdims):
    """Ops whose arguments' values decide their work (histogram's bin edges from each
    example's min and max, put's positions, ctc_loss's lengths read on the host): one
    call cannot serve the batch, so vmap runs the op once per example."""
    raise NeedsFallback(op.name)


def pointwise_rule(op, args, bdims):
    positions = [i for i in op.schema.tensor_positions if args[i] is not None]
    ranks = [logical_rank(args[i], bdims[i]) for i in positions]
    rank = max(ranks)
    check_inplace_target(op, args, bdims)
    new = list(args)
    for i in positions:
        if bdims[i] is not None:
            new[i] = pad_rank(to_front(args[i], bdims[i]), rank)
    if rank > 0 and any(r == 0 and bdims[i] is not None for i, r in zip(positions, ranks)):
        _keep_scalar_promotion(new, args, bdims, positions, ranks)
    return call(op, *new), 0


def _keep_scalar_promotion(new, args, bdims, positions, ranks):
    """A batched 0-dim example is a dimensioned physical tensor, which would promote like
    one (float32 [3] + float64 0-dim is float32, but float32 [B, 3] + float64 [B, 1] is
    float64): cast it to the dtype the example's op computes in."""
    best = [None, None]
    for i, r in zip(positions, ranks):
        cls = 0 if r > 0 else 1
        d = args[i].dtype
        best[cls] = d if best[cls] is None else promote_types(best[cls], d)
    want = combine_categories(best[0], best[1])
    for i, r in zip(positions, ranks):
        if r == 0 and bdims[i] is not None and new[i].dtype not in (want, bool_dtype):
            new[i] = new[i].to(want)


def check_inplace_target(op, args, bdims):
    """PyTorch's rule: an in-place op may not write batched values into a tensor that is
    not batched (it has room for one example, not for the batch)."""
    for m in op.schema.mutable_positions:
        if args[m] is not None and bdims[m] is None:
            raise VmapError(
                f"vmap: {op.name}(self, *extra_args) is not possible because there exists "
                f"a Tensor `other` in extra_args that has more elements than `self`. This "
                f"happened due to `other` being vmapped over but `self` not being vmapped "
                f"over in a vmap. Please try to use out-of-place operators instead of "
                f"{op.name}.", op=op.name, arg=op.schema.arg_names[m])



# ---- ops along dims: move the batch dim first, shift the dims by one -----------------------
#
#   logical call            physical call (batch dim first)
#   sum(x, dim=-1)          sum(x', dim=rank)      (wrapped against the logical rank, +1)
#   sum(x, dim=None)        sum(x', dim=[1..rank]) (every logical dim; the batch dim stays)
#   max(x) (no dim arg)     max.dim(x'.flatten(1), 1).values
#
# A 0-dim example is viewed as [B, 1] so dim 0 / -1 still names a dim; its result is
# brought back to [B].
DIM_ARGS = ("dim", "dims", "dim0", "dim1", "dim2", "dimension", "source", "destination",
            "axis0", "axis1")


def _shift_dims(value, rank, name, arg, none_means_all):
    if value is None:
        return list(range(1, rank + 1)) if none_means_all else None
    if isinstance(value, (list, tuple)):
        if not value and none_means_all:
            return list(range(1, rank + 1))
        return [wrap_dim(d, rank, name, arg) + 1 for d in value]
    return wrap_dim(value, rank, name, arg) + 1


def _single_dim_args(op):
    """The dim arguments typed `int?` (one dim, None for all): their None flattens."""
    text = op.schema.text
    return {arg for arg in DIM_ARGS if f"int? {arg}" in text}


def _list_dim_positions(op):
    return {i for i, arg in enumerate(op.schema.arg_names)
            if arg in DIM_ARGS and f"[1]? {arg}" in op.schema.text}


def dim_rule(op, args, bdims):
    """For ops whose only tensor is `self` (or whose tensors all have its shape) and
    whose dim arguments index it."""
    schema = op.schema
    names = schema.arg_names
    flatten = [i for i, arg in enumerate(names)
               if arg in _single_dim_args(op) and args[i] is None]
    if op.name.startswith("linalg_norm") and args[names.index("dim")] is None and \
            args[names.index("ord")] is None:
        # linalg.norm with neither dim nor ord: the 2-norm of the flattened example.
        flatten = [names.index("dim")]
    if flatten:
        # argmax(x) (dim=None): the flattened example along dim 1.
        x = to_front(args[0], bdims[0])
        rank = x.dim() - 1
        new = list(args)
        new[0] = x.reshape((x.shape[0], -1))
        new[flatten[0]] = 1 if flatten[0] not in _list_dim_positions(op) else [1]
        out = call(op, *new)
        keepdim = "keepdim" in names and args[names.index("keepdim")]
        if keepdim:
            out = out.reshape((x.shape[0],) + (1,) * rank)
        return out, 0
    check_inplace_target(op, args, bdims)
    size = batch_size(args, bdims)
    new = list(args)
    rank = None
    for i in schema.tensor_positions:
        if args[i] is None:
            continue
        new[i] = materialize(args[i], bdims[i], size)
        rank = logical_rank(args[i], bdims[i]) if rank is None else rank
    scalar = rank == 0
    if scalar and op.name == "unfold":
        return new[0].unsqueeze(1), 0      # a 0-dim tensor unfolds to its one element
    if scalar:
        for i in schema.tensor_positions:
            if new[i] is not None:
                new[i] = new[i].unsqueeze(1)
        rank = 1
    reduction = "reduction" in OP_TAGS.get(op.name, ())
    name = op_name(op)
    for i, arg in enumerate(schema.arg_names):
        if arg in DIM_ARGS and i not in schema.tensor_positions:
            new[i] = _shift_dims(args[i], rank, name, arg, none_means_all=reduction)
    out = call(op, *new)
    if scalar:
        out = _squeeze_scalar(out, size)
    return out, _front_bdims_of(out)


def _squeeze_scalar(out, size):
    if isinstance(out, (tuple, list)):
        return type(out)(_squeeze_scalar(o, size) for o in out)
    return out.reshape((size,))


def _front_bdims_of(out):
    """Batch dim 0 for every output."""
    if isinstance(out, (tuple, list)):
        return tuple(0 for _ in out)
    return 0



# ---- convolution and pooling: fold the batch into N ------------------------------------------
def fold_into_n(x, bdim, full_rank):
    """(x as [B*N, ...], unfold) for an input of `full_rank` dims with a batch dim N, or
    (x', identity) when the example has no N (the batch dim takes its place)."""
    x = to_front(x, bdim)
    if x.dim() - 1 == full_rank:
        size, n = x.shape[0], x.shape[1]
        folded = x.reshape((size * n,) + tuple(x.shape[2:]))
        return folded, lambda out: out.view((size, n) + tuple(out.shape[1:]))
    return x, lambda out: out


def fold_rule(op, args, bdims):
    if any(d is not None for d in bdims[1:]):
        raise NeedsFallback(op.name)
    full = 3 if op.name == "col2im" else 4      # col2im: (N, C * kernel, L)
    if "pool3d" in op.name:
        full = 5                                # (N, C, D, H, W)
    if op.name in ("_pad_nd", "constant_pad_nd", "pad"):
        if op.name == "constant_pad_nd" or args[2] == "constant":
            # Constant padding touches the last len(pad)/2 dims of any tensor: B is one
            # more leading dim.
            return call(op, to_front(args[0], bdims[0]), *args[1:]), 0
        # Reflect/replicate/circular padding wants (N, C, *spatial) or (C, *spatial).
        full = len(args[1]) // 2 + 2
    x, unfold = fold_into_n(args[0], bdims[0], full)
    out = call(op, x, *args[1:])
    if isinstance(out, tuple):
        return tuple(unfold(o) for o in out), (0,) * len(out)
    return unfold(out), 0
