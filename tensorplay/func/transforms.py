"""The function transforms of torch.func, on TensorPlay's reverse-mode autograd.

A transform takes a function and returns a new function:

    grad(f)(x)             df/dx of a scalar-valued f                     shape of x
    grad_and_value(f)(x)   (df/dx, f(x))
    vjp(f, x)              (f(x), vjp_fn); vjp_fn(v) = v^T J             one per primal
    jvp(f, (x,), (t,))     (f(x), J t), forward mode
    linearize(f, x)        (f(x), jvp_fn); jvp_fn(t) = J t
    jacrev(f)(x)           J, one vjp per output element                 f(x).shape + x.shape
    jacfwd(f)(x)           J, the jvps of every input element at once    f(x).shape + x.shape
    hessian(f)(x)          jacfwd(jacrev(f))(x): forward over reverse    x.shape + x.shape

Arguments and results may be nests of tuples, lists and dicts (`trees.py`); `argnums`
picks the positional arguments to differentiate (an int, or a tuple for a tuple of
results). Transforms nest (`grad(grad(f))`, `jacfwd(jacrev(f))`) because every call
keeps its own inputs apart from its caller's (`grad_levels.py`).

`grad`, `vjp` and `jacrev` run on the autograd graph (reverse mode); `jvp`, `linearize`
and `jacfwd` on forward mode (tensorplay/autograd/forward_ad.py: dual tensors, no graph),
`jacfwd` with the identity's columns as one batch of tangents under vmap. The two
compose: a reverse transform's own inputs keep the tangents of the forward levels
around it (grad_levels.py), so `hessian` is forward over reverse as in torch.func.
"""
from __future__ import annotations

import functools

import tensorplay as tp
from tensorplay.autograd import forward_ad as fwAD
from tensorplay.autograd.grad_mode import enable_grad, grad_state
from tensorplay.errors import ArgumentError, DimError, DTypeError, ShapeError, fmt_shape
from tensorplay.func.grad_levels import Level, is_tensor, vector_jacobian_product
from tensorplay.func.trees import LEAF, flatten, tree_map, unflatten
from tensorplay.func.vmap import vmap
from tensorplay.func.vmap_levels import _levels

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize"]


# ---- checking what the user gave ---------------------------------------------------------
def _check_argnums(argnums, num_args, transform):
    """`argnums` with negative positions made positive; an int stays an int."""
    items = argnums if isinstance(argnums, tuple) else (argnums,)
    if not items and isinstance(argnums, tuple):
        raise ArgumentError(f"{transform}: argument 'argnums' must be non-empty, got ()",
                            op=transform, arg="argnums")
    for a in items:
        if isinstance(a, bool) or not isinstance(a, int):
            raise ArgumentError(f"{transform}: argument 'argnums' must be an int or a tuple "
                                f"of ints, got {argnums!r}", op=transform, arg="argnums")
        if not -num_args <= a < num_args:
            raise DimError(f"{transform}: argument 'argnums' is {argnums!r}, but only "
                           f"{num_args} positional inputs were given", op=transform,
                           arg="argnums")
    normal = tuple(a % num_args for a in items)
    if len(set(normal)) != len(normal):
        raise ArgumentError(f"{transform}: argument 'argnums' must hold distinct positions, "
                            f"got {argnums!r}", op=transform, arg="argnums")
    return normal if isinstance(argnums, tuple) else normal[0]


def _make_args_differentiable(level, args, argnums, name="args"):
    """(args with the picked ones replaced by this call's inputs, the picked nest): the
    nest is `args[argnums]` for an int, the tuple of the picked args for a tuple."""
    args = list(args)
    for i in (argnums if isinstance(argnums, tuple) else (argnums,)):
        leaves, spec = flatten(args[i])
        where = f"{name}[{i}]" if spec == LEAF else f"a leaf of {name}[{i}]"
        args[i] = unflatten([level.make_differentiable(x, where) for x in leaves], spec)
    if isinstance(argnums, tuple):
        return args, tuple(args[i] for i in argnums)
    return args, args[argnums]


def _split_aux(output, has_aux, transform):
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise ArgumentError(f"{transform}: with has_aux=True the function must return a "
                            f"tuple (output, aux), got {_describe(output)}", op=transform,
                            arg="has_aux")
    for leaf in flatten(output[1])[0]:
        if not is_tensor(leaf):
            raise ArgumentError(f"{transform}: the aux output must hold only Tensors (as "
                                f"torch.func's), got a {type(leaf).__name__}", op=transform,
                                arg="has_aux")
    return output


def _describe(x):
    if isinstance(x, tuple):
        return f"a tuple of length {len(x)}"
    return f"a {type(x).__name__}"


def _flat_outputs(output, transform, complex_ok=False):
    """The output leaves, checked: at least one, all floating point tensors (or complex:
    vjp and jvp take complex outputs, as torch.func's; the Jacobians keep to real ones)."""
    leaves, spec = flatten(output)
    if not leaves:
        raise ArgumentError(f"{transform}: the function must return at least one Tensor, "
                            f"got {output!r}", op=transform, arg="func")
    for o in leaves:
        if not is_tensor(o):
            raise ArgumentError(f"{transform}: the function must return only Tensors, got "
                                f"a {type(o).__name__}", op=transform, arg="func")
        if not (o.dtype.is_floating_point or (complex_ok and o.dtype.is_complex)):
            kinds = "floating point or complex" if complex_ok else "floating point"
            raise DTypeError(f"{transform}: every output of the function must have a "
                             f"{kinds} dtype, got {o.dtype.name}", op=transform,
                             arg="func")
    return leaves, spec


def _check_like(given, expected, transform, arg):
    """Tensors in `given` with the shapes of the tensors in `expected`, one for one."""
    for i, (g, e) in enumerate(zip(given, expected)):
        if not is_tensor(g):
            raise ArgumentError(f"{transform}: {arg} must hold only Tensors, got a "
                                f"{type(g).__name__} at leaf {i}", op=transform, arg=arg)
        if tuple(g.shape) != tuple(e.shape):
            raise ShapeError(f"{transform}: leaf {i} of {arg} has shape {fmt_shape(g.shape)}, "
                             f"expected {fmt_shape(e.shape)}", op=transform, arg=arg)


# ---- grad, grad_and_value ----------------------------------------------------------------
def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning `(gradient, value)` of the scalar-valued `func`; with has_aux
    `func` returns `(value, aux)` and the new function `(gradient, (value, aux))`.

    >>> gx, v = grad_and_value(lambda x: (x ** 2).sum())(tp.tensor([1.0, 2.0]))
    >>> gx, v
    (tensor([2., 4.]), tensor(5.))
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        gradient, value, aux = _grad_and_value(func, argnums, has_aux, args, kwargs,
                                               "grad_and_value(f)(*args)")
        return (gradient, (value, aux)) if has_aux else (gradient, value)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of the scalar-valued `func` with respect to the
    argument(s) `argnums`, shaped like them; with has_aux, `(gradient, aux)`.

    >>> grad(lambda x: x.sin().sum())(tp.tensor([0.0]))
    tensor([1.])
    >>> grad(grad(lambda x: x ** 3))(tp.tensor(2.0))    # 6x
    tensor(12.)
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        gradient, _, aux = _grad_and_value(func, argnums, has_aux, args, kwargs,
                                           "grad(f)(*args)")
        return (gradient, aux) if has_aux else gradient
    return wrapper


def _grad_and_value(func, argnums, has_aux, args, kwargs, transform):
    argnums = _check_argnums(argnums, len(args), transform)
    with Level(transform) as level, enable_grad():
        args, picked = _make_args_differentiable(level, args, argnums)
        output, aux = _split_aux(func(*args, **kwargs), has_aux, transform)
        if not is_tensor(output):
            raise ArgumentError(f"{transform}: the function must return a Tensor, got "
                                f"{_describe(output)}", op=transform, arg="func")
        if output.dim() != 0:
            raise ShapeError(f"{transform}: the function must return a scalar Tensor, got "
                             f"one of shape {fmt_shape(output.shape)}. Maybe you wanted "
                             f"vjp or jacrev instead?", op=transform, arg="func")
        inputs, spec = flatten(picked)
        grads = vector_jacobian_product((output,), inputs, None,
                                        create_graph=level.any_outer((output,)))
        gradient = unflatten(grads, spec)
    return level.lower(gradient), level.lower(output), level.lower(aux)


# ---- vjp, jvp ----------------------------------------------------------------------------
def vjp(func, *primals, has_aux=False):
    """`(func(*primals), vjp_fn)`, with `vjp_fn(cotangents)` the tuple of
    `cotangents^T d func / d primals[i]`, one per primal (cotangents shaped like the
    output). `vjp_fn` may be called many times; with has_aux, `(output, vjp_fn, aux)`.
    """
    transform = "vjp(f, *primals)"
    with Level(transform) as level, enable_grad():
        inputs, _ = _make_args_differentiable(level, primals, tuple(range(len(primals))),
                                              name="primals")
        output, aux = _split_aux(func(*inputs), has_aux, transform)
        outputs, out_spec = _flat_outputs(output, transform, complex_ok=True)
    inputs = tuple(inputs)
    flat_inputs, in_spec = flatten(inputs)

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        name = "vjp_fn(cotangents)"
        cotangent_leaves, spec = flatten(cotangents)
        if spec != out_spec:
            raise ArgumentError(f"{name}: cotangents must have the structure of the "
                                f"function's output {out_spec}, got {spec}", op=name,
                                arg="cotangents")
        _check_like(cotangent_leaves, outputs, name, "cotangents")
        if create_graph is None:
            # a graph for whoever differentiates this call: an enclosing transform, or one
            # that differentiates with respect to the cotangents
            create_graph = grad_state.enabled and any(
                level.reaches_outer(t) for t in outputs + cotangent_leaves)
        with enable_grad():
            grads = vector_jacobian_product(outputs, flat_inputs, cotangent_leaves,
                                            create_graph=create_graph,
                                            retain_graph=retain_graph)
        return level.lower(unflatten(grads, in_spec), keep_history=create_graph)

    if has_aux:
        return level.lower(output), vjp_fn, level.lower(aux)
    return level.lower(output), vjp_fn


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """`(func(*primals), J t)`: the Jacobian-vector product in the direction `tangents`
    (a tuple shaped like `primals`); with has_aux, `(output, jvp_out, aux)`.

    True forward mode (tensorplay/autograd/forward_ad.py): each primal becomes a dual
    tensor carrying its tangent, `func` runs once, and every op pushes the tangents along
    by its tangent formula. No backward graph is built. strict=True raises when an output
    does not depend on the inputs (its tangent is then zeros)."""
    transform = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise ArgumentError(f"{transform}: primals must be a tuple (it should be valid to "
                            f"call f(*primals)), got {_describe(primals)}", op=transform,
                            arg="primals")
    flat_primals, primal_spec = flatten(primals)
    flat_tangents, tangent_spec = flatten(tangents)
    if primal_spec != tangent_spec:
        raise ArgumentError(f"{transform}: tangents must have the structure of primals "
                            f"{primal_spec}, got {tangent_spec}", op=transform, arg="tangents")
    if not flat_primals:
        raise ArgumentError(f"{transform}: primals must hold at least one Tensor",
                            op=transform, arg="primals")
    for i, x in enumerate(flat_primals):
        if not is_tensor(x):
            raise ArgumentError(f"{transform}: primals must hold only Tensors, got "
                                f"{_describe(x)} at leaf {i}", op=transform, arg="primals")
        if not x.dtype.is_differentiable:
            raise DTypeError(f"{transform}: primals must have a floating point or complex "
                             f"dtype, got {x.dtype.name} at leaf {i}", op=transform,
                             arg="primals")
    _check_like(flat_tangents, flat_primals, transform, "tangents")
    with fwAD.dual_level():
        duals = [fwAD.make_dual(x, t) for x, t in zip(flat_primals, flat_tangents)]
        output, aux = _split_aux(func(*unflatten(duals, primal_spec)), has_aux, transform)
        outputs, out_spec = _flat_outputs(output, transform, complex_ok=True)
        values, products = _unpack_outputs(outputs, transform, strict)
    result = (unflatten(values, out_spec), unflatten(products, out_spec))
    if has_aux:
        return result + (tree_map(_primal_of, aux),)
    return result


def _primal_of(x):
    return fwAD.unpack_dual(x).primal if is_tensor(x) else x


def _unpack_outputs(outputs, transform, strict=False):
    """(values, tangents) of a dual level's outputs; an output that met no dual tensor
    has the tangent zeros (as torch.func), which strict=True refuses."""
    values, tangents = [], []
    for k, o in enumerate(outputs):
        value, tangent = fwAD.unpack_dual(o)
        if tangent is None:
            if strict:
                raise ArgumentError(f"{transform}: output {k} of the function does not "
                                    f"depend on the inputs, which strict=True does not "
                                    f"allow", op=transform, arg="strict")
            tangent = tp.zeros_like(value)
        values.append(value)
        tangents.append(tangent)
    return values, tangents


def linearize(func, *primals):
    """`(func(*primals), jvp_fn)` with `jvp_fn(*tangents)` the Jacobian at `primals`
    applied to `tangents`, as torch.func.linearize. PyTorch traces `func` once and replays
    the trace; here `jvp_fn` runs `jvp` again (one forward-mode pass per call)."""
    transform = "linearize(func, *primals)"
    flat_primals, primal_spec = flatten(primals)
    for x in flat_primals:
        if not is_tensor(x):
            raise ArgumentError(f"{transform}: primals must hold only Tensors, got "
                                f"{_describe(x)}", op=transform, arg="primals")
    fixed = tuple(x.detach() for x in flat_primals)
    output = func(*primals)

    def jvp_fn(*tangents):
        flat_tangents, spec = flatten(tangents)
        if spec != primal_spec:
            raise ArgumentError(f"jvp_fn(*tangents): tangents must have the structure of "
                                f"primals {primal_spec}, got {spec}", op="jvp_fn",
                                arg="tangents")
        return jvp(func, unflatten(list(fixed), primal_spec),
                   unflatten(flat_tangents, primal_spec))[1]
    return output, jvp_fn


def _check_outputs_depend(transposed, dummies, transform):
    """strict=True: output k is independent of the inputs when J^T u never reads u_k."""
    reached = [t for t in transposed if t.requires_grad]
    used = tp.autograd.grad(reached, dummies, [tp.zeros_like(t) for t in reached],
                            retain_graph=True, allow_unused=True) if reached else ()
    for k in range(len(dummies)):
        if not used or used[k] is None:
            raise ArgumentError(f"{transform}: output {k} of the function does not depend on "
                                f"the inputs, which strict=True does not allow",
                                op=transform, arg="strict")


# ---- Jacobians ---------------------------------------------------------------------------
def _map_over_rows(fn, rows):
    """`fn` applied to each row of `rows` (dim 0), its results stacked along a new dim 0,
    leaf by leaf: `vmap(fn)(rows)`, one batched backward pass instead of one per row.

    Inside another vmap (`vmap(jacrev(f))`) the rows are a second batch of cotangents
    for a graph already batched at the outer level, which the batched gradient does not
    serve (its inputs would be batched at fewer levels than its outputs): there the rows
    run one by one."""
    if rows.shape[0] and not _levels.stack:
        return vmap(fn)(rows)
    results = [fn(rows[k]) for k in range(rows.shape[0])]
    if not results:
        # (no rows: one call on zeros gives the structure and shapes, and no values)
        leaves, spec = flatten(fn(tp.zeros(tuple(rows.shape[1:]), dtype=rows.dtype)))
        return unflatten([leaf.unsqueeze(0).narrow(0, 0, 0) for leaf in leaves], spec)
    flat = [flatten(r)[0] for r in results]
    spec = flatten(results[0])[1]
    if len(results) == 1:       # (a scalar function's one row: no stack to pay for)
        return unflatten([leaf.unsqueeze(0) for leaf in flat[0]], spec)
    return unflatten([tp.stack([leaves[i] for leaves in flat]) for i in range(len(flat[0]))],
                     spec)


def _unit_pieces(row, like):
    """Row `row` of an identity matrix cut into pieces shaped (and typed) like `like`."""
    pieces, start = [], 0
    for t in like:
        n = t.numel()
        pieces.append(row.narrow(0, start, n).reshape(tuple(t.shape)).to(t.dtype))
        start += n
    return pieces


def _offsets(tensors):
    out, start = [], 0
    for t in tensors:
        out.append(start)
        start += t.numel()
    return out


def _jacobian_tree(blocks, outputs, out_spec, in_spec):
    """blocks[k][j] is d outputs[k] / d inputs[j]: nest them as torch.func does, the
    output's structure outside, the differentiated arguments' structure inside."""
    return unflatten([unflatten(row, in_spec) for row in blocks], out_spec)


def _rows_in_chunks(fn, rows, chunk_size, preallocate):
    """jacrev's chunk_size: `_map_over_rows` on `chunk_size` rows at a time (less memory,
    the same result); chunk_size=1 is a plain loop, one vjp per row, as in PyTorch. The
    chunks' results are concatenated leaf by leaf, or copied into results allocated
    up front (`_preallocate_and_copy`)."""
    total = rows.shape[0]
    if chunk_size is None or chunk_size >= total:
        return _map_over_rows(fn, rows)
    parts = []
    for start in range(0, total, chunk_size):
        chunk = rows.narrow(0, start, min(chunk_size, total - start))
        if chunk_size == 1:
            leaves, spec = flatten(fn(chunk[0]))
            parts.append(unflatten([leaf.unsqueeze(0) for leaf in leaves], spec))
        else:
            parts.append(_map_over_rows(fn, chunk))
    flat = [flatten(p)[0] for p in parts]
    spec = flatten(parts[0])[1]
    joined = []
    for i in range(len(flat[0])):
        pieces = [leaves[i] for leaves in flat]
        if preallocate:
            out = tp.empty((total,) + tuple(pieces[0].shape[1:]), dtype=pieces[0].dtype,
                           device=pieces[0].device)
            start = 0
            for piece in pieces:
                out.narrow(0, start, piece.shape[0]).copy_(piece)
                start += piece.shape[0]
            joined.append(out)
        else:
            joined.append(tp.cat(pieces, 0))
    return unflatten(joined, spec)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """A function returning the Jacobian of `func` with respect to `argnums`, by reverse
    mode: one vjp per output element, on the rows of an identity matrix. Each block has
    shape `output.shape + input.shape`; with has_aux, `(jacobian, aux)`.

    chunk_size: None (default) computes every row's vjp in one batched backward pass;
    an int computes `chunk_size` rows at a time (less memory), 1 one row at a time.

    >>> jacrev(tp.sin)(tp.tensor([0.0, 1.0]))
    tensor([[1.0000, 0.0000],
            [0.0000, 0.5403]])
    """
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        transform = "jacrev(f)(*args)"
        argnums_ = _check_argnums(argnums, len(args), transform)
        with Level(transform) as level, enable_grad():
            args_, picked = _make_args_differentiable(level, args, argnums_)
            output, aux = _split_aux(func(*args_, **kwargs), has_aux, transform)
            outputs, out_spec = _flat_outputs(output, transform)
            inputs, in_spec = flatten(picked)
            create_graph = level.any_outer(outputs)
            total = sum(o.numel() for o in outputs)

            def row_vjp(row):
                return vector_jacobian_product(outputs, inputs, _unit_pieces(row, outputs),
                                               create_graph=create_graph)

            # per input: (total, *input.shape), the rows of every output one after another
            stacked = _rows_in_chunks(row_vjp, tp.eye(total, dtype=outputs[0].dtype),
                                      chunk_size, _preallocate_and_copy)
            starts = _offsets(outputs)
            blocks = [[s.narrow(0, start, o.numel()).reshape(tuple(o.shape) + tuple(x.shape))
                       for s, x in zip(stacked, inputs)]
                      for o, start in zip(outputs, starts)]
            jacobian = _jacobian_tree(blocks, outputs, out_spec, in_spec)
        if has_aux:
            return level.lower(jacobian), level.lower(aux)
        return level.lower(jacobian)
    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """A function returning the Jacobian of `func` with respect to `argnums` by forward
    mode: the inputs become dual tensors whose tangent is the batch of every column of
    an identity matrix (a vmap over the tangents only), so `func` runs once and each op
    pushes all the columns at once. Same result and shapes as `jacrev`; `randomness` is
    vmap's (random ops under the batch of tangents)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        transform = "jacfwd(f)(*args)"
        argnums_ = _check_argnums(argnums, len(args), transform)
        picked = args[argnums_] if isinstance(argnums_, int) else tuple(
            args[i] for i in argnums_)
        inputs, in_spec = flatten(picked)
        for i, x in enumerate(inputs):
            if not is_tensor(x):
                raise ArgumentError(f"{transform}: the differentiated arguments must be "
                                    f"Tensors, got {_describe(x)}", op=transform,
                                    arg="argnums")
            if not x.dtype.is_differentiable:
                raise DTypeError(f"{transform}: argument {i} must have a floating point or "
                                 f"complex dtype to be differentiated, got {x.dtype.name}",
                                 op=transform, arg="argnums")
        total = sum(x.numel() for x in inputs)
        found = {}

        def columns(row):
            with fwAD.dual_level():
                duals = [fwAD.make_dual(x, t)
                         for x, t in zip(inputs, _unit_pieces(row, inputs))]
                args_ = list(args)
                if isinstance(argnums_, int):
                    args_[argnums_] = unflatten(duals, in_spec)
                else:
                    parts = unflatten(duals, in_spec)
                    for i, part in zip(argnums_, parts):
                        args_[i] = part
                output, aux = _split_aux(func(*args_, **kwargs), has_aux, transform)
                outputs, out_spec = _flat_outputs(output, transform)
                values, tangents = _unpack_outputs(outputs, transform)
                # (the values and aux are not batched: they are kept aside, not returned
                # through vmap, which would expand them over the columns)
                found.update(values=values, out_spec=out_spec,
                             aux=tree_map(_primal_of, aux) if has_aux else None)
            return tangents

        eye = tp.eye(total, dtype=inputs[0].dtype, device=inputs[0].device)
        stacked = vmap(columns, randomness=randomness)(eye)
        outputs, out_spec = found["values"], found["out_spec"]
        starts = _offsets(inputs)
        blocks = [[_columns_to_block(s.narrow(0, start, x.numel()), o, x)
                   for x, start in zip(inputs, starts)]
                  for s, o in zip(stacked, outputs)]
        jacobian = _jacobian_tree(blocks, outputs, out_spec, in_spec)
        return (jacobian, found["aux"]) if has_aux else jacobian
    return wrapper


def _columns_to_block(columns, output, x):
    """(x.numel(), *output.shape) columns -> the block of shape output.shape + x.shape."""
    flat = columns.reshape(x.numel(), output.numel()).transpose(0, 1)
    return flat.reshape(tuple(output.shape) + tuple(x.shape))


def hessian(func, argnums=0):
    """A function returning the Hessian of the scalar-valued `func` with respect to
    `argnums`: forward over reverse, `jacfwd(jacrev(func, argnums), argnums)` (one
    reverse pass whose every op carries the batch of tangents), shape
    `x.shape + x.shape`."""
    return jacfwd(jacrev(func, argnums), argnums)
