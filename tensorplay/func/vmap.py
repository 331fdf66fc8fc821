"""`tp.vmap`: run a function written for one example on a whole batch at once.

    >>> x = tp.randn(8, 3)
    >>> tp.vmap(lambda v: (v * v).sum())(x).shape      # one dot product per row
    tp.Size([8])

How it works, in three steps:

1. *Wrap.* Each input tensor batched by `in_dims` becomes a BatchedTensor (batched.py)
   of a new vmap level: the function sees one example's shape.
2. *Batch each op.* A BatchedTensor's key set is the `Vmap<backend>` key, so every op
   it meets lands in `batching_kernel` below, registered at the Vmap keys of every
   op. The kernel unwraps the tensors of the innermost level to their physical
   tensors, applies the op's batching rule (ops.yaml `vmap:`), or, when there is
   none, the op's Composite decomposition (whose ops have rules), or the per-example
   loop (fallback.py); then it wraps the result. The rule calls ops on the physical
   tensors, so the call goes on *below* the Vmap key: to the next vmap level out, to
   autograd (which records the graph on the physical tensors), to the backend.
3. *Unwrap.* The outputs' batch dims are moved to `out_dims`.

Nested vmaps are levels: `vmap(vmap(f))` wraps twice, and a kernel call at level L only
unwraps level-L tensors (the physical tensors it computes on are level L-1 tensors,
batched again one call down). No mode key is needed for batching: the BatchedTensors carry
the key. Only random ops that see no batched tensor (`tp.rand(3)` inside `f`) need one to
obey `randomness`: the VmapMode key, included while `f` runs (random_under_vmap.py).
"""
from __future__ import annotations

import functools

from tensorplay._generated.op_tags import OP_TAGS
from tensorplay.dispatch import trace
from tensorplay.dispatch.dispatcher import dispatcher
from tensorplay.dispatch.keys import DispatchKey, to_vmap_key
from tensorplay.func.batched import (
    VmapError, batched_impl, unwrap_level, wrap_batched,
)
from tensorplay._generated.declarations import VMAP_RULES
from tensorplay.func.batching_rules import (
    RULES, NeedsDecomposition, NeedsFallback, call, register_rules,
)
from tensorplay.func import random_under_vmap
from tensorplay.func.batching_rules import random as random_rules
from tensorplay.dispatch.tls import IncludeKeys
from tensorplay.func.batching_rules.views import INPLACE_VIEWS
from tensorplay.func.fallback import loop_fallback
from tensorplay.func.trees import flatten as tree_flatten, unflatten as tree_unflatten
from tensorplay.func.vmap_levels import _Level, _levels, current_level  # noqa: F401 (re-exported)

RANDOMNESS = ("error", "different", "same")


# ---- the kernel at the Vmap keys -------------------------------------------------------------
def _innermost_level(op, args):
    level = 0
    for i in op.schema.tensor_positions:
        a = args[i]
        if isinstance(a, (list, tuple)):
            for t in a:
                impl = batched_impl(t)
                if impl is not None and impl.level > level:
                    level = impl.level
        else:
            impl = batched_impl(a)
            if impl is not None and impl.level > level:
                level = impl.level
    return level


# Ops that must keep a batched tensor batched even when its physical tensor is the same
# for every example: `detach` (then `requires_grad_`) is how a function under vmap asks
# for per-example gradients of an input given with in_dims=None.
KEEP_EXPANDED = {"detach", "detach_", *INPLACE_VIEWS}


def _unwrap(value, level, keep_expanded):
    phys, bdim = unwrap_level(value, level)
    if bdim is None or keep_expanded:
        return phys, bdim
    impl = phys._impl
    # An input given with in_dims=None is an expanded view (stride 0 on the batch dim):
    # one example's values for all. Unless autograd needs it per example, rules get the
    # single example, which keeps `linear(x, W)` a single matrix product.
    if impl.strides[bdim] == 0 and not impl.requires_grad and impl.sizes[bdim] > 0:
        return phys.select(bdim, 0), None
    return phys, bdim


def batching_kernel(op):
    """The function registered at the Vmap keys of `op`."""
    schema = op.schema
    list_positions = set(schema.list_positions)
    tensor_positions = schema.tensor_positions

    def vmap_kernel(ks, *args):
        level = _innermost_level(op, args)
        entry = current_level(level)
        keep = op.name in KEEP_EXPANDED or _levels.wrapping
        phys = list(args)
        bdims = [None] * len(args)
        for i in tensor_positions:
            a = args[i]
            if a is None:
                continue
            if i in list_positions:
                pairs = [_unwrap(t, level, keep) for t in a]
                phys[i] = [p for p, _ in pairs]
                bdims[i] = [d for _, d in pairs]
            else:
                phys[i], bdims[i] = _unwrap(a, level, keep)
        if not any(d is not None and (not isinstance(d, list) or any(e is not None for e in d))
                   for d in bdims):
            # Every batched argument was one example repeated: no batching work at all.
            return _returning_self(op, args, call(op, *phys))
        rule = RULES.get(op.name)
        declined = False
        if rule is not None:
            try:
                if trace.state.active:
                    trace.hop("vmap", f"level {level}: batching rule {rule.__module__}."
                                      f"{rule.__name__}", trace.code_where(rule))
                out, out_bdims = _run_rule(rule, op, phys, bdims, entry)
                return _returning_self(op, args, _wrap(out, out_bdims, level))
            except NeedsFallback:
                declined = True
            except NeedsDecomposition:
                if trace.state.active:
                    trace.hop("vmap", f"level {level}: the rule declined; Composite "
                                      f"decomposition {op.kernel_names[DispatchKey.Composite]}")
                return op.kernels[DispatchKey.Composite](*args)
        elif _has_decomposition(op, args):
            if trace.state.active:
                trace.hop("vmap", f"level {level}: no rule; Composite decomposition "
                                  f"{op.kernel_names[DispatchKey.Composite]}")
            return op.kernels[DispatchKey.Composite](*args)
        if "random" in random_rules.tags(op) and entry.randomness != "different":
            random_rules.check_randomness(op, entry.randomness)
        if trace.state.active:
            trace.hop("vmap", f"level {level}: no rule; fallback loop over "
                              f"{entry.batch_size} examples")
        out, out_bdims = loop_fallback(op, phys, bdims, declined)
        return _returning_self(op, args, _wrap(out, out_bdims, level))

    vmap_kernel.__qualname__ = f"batching_kernel[{op.name}]"
    return vmap_kernel


def _run_rule(rule, op, phys, bdims, entry):
    if getattr(rule, "takes_randomness", False):
        return rule(op, phys, bdims, entry.randomness)
    return rule(op, phys, bdims)


def _has_decomposition(op, args):
    # A view op's Composite kernel builds the view from the impl's strides and offset,
    # which a BatchedTensor does not have: views without a rule loop instead.
    if op.kernels[DispatchKey.Composite] is None or "view" in OP_TAGS.get(op.name, ()):
        return False
    device = None
    for i in op.schema.tensor_positions:
        a = args[i]
        if isinstance(a, (list, tuple)):
            a = next((t for t in a if t is not None), None)
        if a is not None:
            device = a._impl.device
            break
    return device is None or not op._has_backend_kernel(device.key)


def _returning_self(op, args, out):
    """An in-place op returns the tensor it wrote: the BatchedTensor the caller holds.
    An in-place *view* op (`x.unsqueeze_(0)`) changes that tensor's shape: it is reseated
    on the physical view the rule computed."""
    if op.name in INPLACE_VIEWS:
        new = batched_impl(out)
        batched_impl(args[0]).reseat(new.value, new.bdim)
        return args[0]
    mutable = op.schema.mutable_positions
    if mutable and op.schema.num_returns == 1:
        return args[mutable[0]]
    return out


def _wrap(out, out_bdims, level):
    if isinstance(out, (tuple, list)):
        if not isinstance(out_bdims, (tuple, list)):
            out_bdims = (out_bdims,) * len(out)
        wrapped = [_wrap(o, d, level) for o, d in zip(out, out_bdims)]
        return tuple(wrapped) if isinstance(out, tuple) else wrapped
    if out_bdims is None or getattr(out, "_impl", None) is None:
        return out
    return wrap_batched(out, out_bdims, level)


register_rules(VMAP_RULES)      # the rule of each op, as ops.yaml's `vmap:` names it

_registered = set()     # names of the ops that have the batching kernel


def register_batching_kernels():
    """Put the batching kernel at the Vmap key of every backend, for every op that does
    not have it yet (each vmap call checks again, for ops defined after this import).
    Not for Vulkan (no device) nor Sparse: vmap batches dense tensors only."""
    if len(_registered) == len(dispatcher.ops):
        return
    backends = [DispatchKey.CPU, DispatchKey.CUDA, DispatchKey.Meta]
    for op in list(dispatcher.ops.values()):
        if op.name in _registered:
            continue
        _registered.add(op.name)
        kernel = batching_kernel(op)
        for backend in backends:
            op.register(to_vmap_key(backend), kernel, name="tensorplay.func.vmap.batching_kernel",
                        check_signature=False)
        if getattr(RULES.get(op.name), "takes_randomness", False):
            # random ops obey `randomness` even when they see no batched tensor
            op.register(DispatchKey.VmapMode, random_under_vmap.mode_kernel(op),
                        name="tensorplay.func.random_under_vmap.mode_kernel",
                        check_signature=False)


register_batching_kernels()


# ---- vmap itself -----------------------------------------------------------------------------
def vmap(func, in_dims=0, out_dims=0, randomness="error", chunk_size=None):
    """`func` mapped over a batch dim of its inputs, as `torch.func.vmap`.

    Args:
        func: a function of tensors (and pytrees of them: tuple, list, dict).
        in_dims: per argument, the batch dim of each tensor (an int, or None: the same
            value for every example); an int or None for all, or a pytree matching the
            arguments. Keyword arguments are never batched.
        out_dims: where each output gets the batch dim (int or None for all, or a pytree
            matching the outputs). None only for outputs that are the same for all.
        randomness: "error" (random ops raise), "different" (each example draws its
            own numbers), "same" (one draw, shared by the batch).
        chunk_size: run at most this many examples at a time (less memory, same result).

    Returns:
        A function with `func`'s arguments, whose outputs have a batch dim.
    """
    if not callable(func):
        raise VmapError(f"vmap(func): expected `func` to be a function, got "
                        f"{type(func).__name__}", op="vmap", arg="func")
    if randomness not in RANDOMNESS:
        raise VmapError(f"vmap(): argument 'randomness' must be one of {RANDOMNESS}, got "
                        f"{randomness!r}", op="vmap", arg="randomness")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise VmapError(f"vmap(): argument 'chunk_size' must be a positive int or None, got "
                        f"{chunk_size!r}", op="vmap", arg="chunk_size")
    _check_dims_type(in_dims, "in_dims")
    _check_dims_type(out_dims, "out_dims")

    @functools.wraps(func)
    def vmapped(*args, **kwargs):
        flat_args, spec = tree_flatten(args)
        flat_in = _flat_in_dims(func, in_dims, args)
        size = _batch_size(func, flat_args, flat_in)
        if chunk_size is None or chunk_size >= size:
            return _run(func, flat_args, flat_in, spec, kwargs, size, out_dims, randomness)
        outs = []
        for start in range(0, size, chunk_size):
            n = min(chunk_size, size - start)
            part = [a if d is None else a.narrow(d, start, n) for a, d in zip(flat_args, flat_in)]
            outs.append(_run(func, part, flat_in, spec, kwargs, n, out_dims, randomness))
        return _concat_chunks(outs, out_dims)

    return vmapped


# ---- in_dims / out_dims: a prefix of the arguments' (outputs') nest ------------------------
#
#   broadcast_prefix((0, {"k": None}), ((a, b), {"k": c})) -> [0, 0, None]
#
# A leaf of the dims (an int or None) covers a whole subtree; None in the values is a
# container with no leaves, so the dims never have to mention it.
def broadcast_prefix(prefix, tree):
    """One entry of `prefix` per leaf of `tree`. Raises ValueError naming the mismatch."""
    out = []
    _broadcast(prefix, tree, out, "")
    return out


def _broadcast(prefix, node, out, where):
    if prefix is None or isinstance(prefix, int):
        out.extend([prefix] * len(tree_flatten(node)[0]))
        return
    if node is None:
        return
    if isinstance(prefix, dict):
        if not isinstance(node, dict) or set(prefix) != set(node):
            got = sorted(map(str, node)) if isinstance(node, dict) else type(node).__name__
            raise ValueError(f"at {where or 'the top'}: the dims are a dict with keys "
                             f"{sorted(map(str, prefix))} but the value is {got}")
        for k in node:
            _broadcast(prefix[k], node[k], out, f"{where}[{k!r}]")
        return
    if not isinstance(node, (tuple, list)) or len(node) != len(prefix):
        what = type(node).__name__ + (f" of length {len(node)}"
                                      if isinstance(node, (tuple, list)) else "")
        raise ValueError(f"at {where or 'the top'}: the dims are a {type(prefix).__name__} "
                         f"of length {len(prefix)} but the value is a {what}")
    for i, (p, c) in enumerate(zip(prefix, node)):
        _broadcast(p, c, out, f"{where}[{i}]")


def _check_dims_type(dims, arg):
    leaves, _ = tree_flatten(dims)
    for d in leaves:
        if d is not None and (not isinstance(d, int) or isinstance(d, bool)):
            raise VmapError(f"vmap(): {arg} must be an int, None or a pytree of them, got "
                            f"{d!r} of type {type(d).__name__}", op="vmap", arg=arg)


def _func_name(func):
    return getattr(func, "__name__", repr(func))


def _flat_in_dims(func, in_dims, args):
    if isinstance(in_dims, (tuple, list)):
        if len(in_dims) != len(args):
            raise VmapError(f"vmap({_func_name(func)}, in_dims={in_dims}, ...)(<inputs>): "
                            f"in_dims is not compatible with the structure of `inputs`: "
                            f"in_dims has {len(in_dims)} entries but there are {len(args)} "
                            f"positional arguments", op="vmap", arg="in_dims")
    try:
        return broadcast_prefix(tuple(in_dims) if isinstance(in_dims, list) else in_dims,
                                args)
    except ValueError as e:
        raise VmapError(f"vmap({_func_name(func)}, in_dims={in_dims}, ...)(<inputs>): "
                        f"in_dims is not compatible with the structure of `inputs`: {e}",
                        op="vmap", arg="in_dims") from None


def _batch_size(func, flat_args, flat_in):
    sizes = []
    for i, (a, d) in enumerate(zip(flat_args, flat_in)):
        if d is None:
            continue
        if getattr(a, "_impl", None) is None:
            raise VmapError(f"vmap({_func_name(func)}, in_dims=..., ...)(<inputs>): Got "
                            f"in_dim={d} for an input but the input is of type "
                            f"{type(a).__name__}. We cannot vmap over non-Tensor arguments, "
                            f"please use None as the respective in_dim", op="vmap",
                            arg="in_dims")
        rank = a.dim()
        if not -rank <= d < max(rank, 0) or rank == 0:
            raise VmapError(f"vmap({_func_name(func)}, in_dims=..., ...)(<inputs>): Got "
                            f"in_dim={d} for some input, but that input is a Tensor of "
                            f"dimensionality {rank} so expected in_dim to satisfy "
                            f"-{rank} <= in_dim < {rank}.", op="vmap", arg="in_dims")
        sizes.append((i, a.shape[d]))
    if not sizes:
        raise VmapError(f"vmap({_func_name(func)}, in_dims=..., ...)(<inputs>): at least one "
                        f"input must be a Tensor batched by in_dims; got none (all in_dims "
                        f"are None or no input is a Tensor)", op="vmap", arg="in_dims")
    if len({s for _, s in sizes}) != 1:
        listed = ", ".join(f"input {i} has size {s}" for i, s in sizes)
        raise VmapError(f"vmap({_func_name(func)}, in_dims=..., ...)(<inputs>): Expected all "
                        f"tensors to have the same size in the mapped dimension, got sizes "
                        f"{[s for _, s in sizes]} for the mapped dimension ({listed})",
                        op="vmap", arg="in_dims")
    return sizes[0][1]


def _run(func, flat_args, flat_in, spec, kwargs, size, out_dims, randomness):
    register_batching_kernels()
    level = (_levels.stack[-1].level if _levels.stack else 0) + 1
    _levels.stack.append(_Level(level, size, randomness))
    random_under_vmap.enter()
    try:
        wrapped = [_wrap_input(a, d, size, level) for a, d in zip(flat_args, flat_in)]
        with IncludeKeys(random_under_vmap.VMAP_MODE):
            out = func(*tree_unflatten(wrapped, spec), **kwargs)
        return _unwrap_outputs(func, out, out_dims, level, size)
    finally:
        random_under_vmap.leave()
        _levels.stack.pop()


def _wrap_input(a, d, size, level):
    if getattr(a, "_impl", None) is None:
        return a
    if d is not None:
        return wrap_batched(a, d % a.dim(), level)
    # The same value for every example: an expanded view (no copy), so that gradients
    # taken under vmap w.r.t. it are per example. An input batched by an outer vmap stays
    # batched there (no shortcut to its single example while expanding it).
    _levels.wrapping = True
    try:
        expanded = a.unsqueeze(0).expand((size,) + tuple(a.shape))
    finally:
        _levels.wrapping = False
    return wrap_batched(expanded, 0, level)


def _unwrap_outputs(func, out, out_dims, level, size):
    flat_out, spec = tree_flatten(out)
    try:
        flat_dims = broadcast_prefix(out_dims, out)
    except ValueError as e:
        raise VmapError(f"vmap({_func_name(func)}, ..., out_dims={out_dims})(<inputs>): "
                        f"out_dims is not compatible with the structure of `outputs`: {e}",
                        op="vmap", arg="out_dims") from None
    result = []
    for o, d in zip(flat_out, flat_dims):
        if getattr(o, "_impl", None) is None:
            result.append(o)
            continue
        phys, bdim = unwrap_level(o, level)
        if bdim is not None:
            impl = phys._impl
            if d is None:
                if impl.strides[bdim] == 0:
                    result.append(phys.select(bdim, 0))
                    continue
                raise VmapError(f"vmap({_func_name(func)}, ..., out_dims={out_dims}): an "
                                f"output that differs across the batch cannot have out_dim "
                                f"None", op="vmap", arg="out_dims")
            target = _out_dim(func, d, phys.dim())
            result.append(phys if target == bdim else phys.movedim(bdim, target))
        elif d is None:
            result.append(o)
        else:
            # Not batched: the same value for every example, returned expanded.
            o = o.unsqueeze(_out_dim(func, d, o.dim() + 1))
            shape = list(o.shape)
            shape[_out_dim(func, d, o.dim())] = size
            result.append(o.expand(shape))
    return tree_unflatten(result, spec)


def _out_dim(func, d, rank):
    if not -rank <= d < rank:
        raise VmapError(f"vmap({_func_name(func)}, ..., out_dims={d}): out_dim {d} is out of "
                        f"range for an output with {rank} dims (batch dim included)",
                        op="vmap", arg="out_dims")
    return d % rank


def _concat_chunks(outs, out_dims):
    flat0, spec = tree_flatten(outs[0])
    flat_dims = broadcast_prefix(out_dims, outs[0])
    flats = [tree_flatten(o)[0] for o in outs]
    result = []
    for k, d in enumerate(flat_dims):
        parts = [f[k] for f in flats]
        if getattr(parts[0], "_impl", None) is None or d is None:
            result.append(parts[0])
        else:
            result.append(_cat(parts, d % parts[0].dim()))
    return tree_unflatten(result, spec)


def _cat(parts, dim):
    return call(dispatcher.find("cat"), parts, dim)
