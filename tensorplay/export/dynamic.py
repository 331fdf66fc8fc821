"""Dynamic sizes: which input dims may change, and the ints of the graph that follow them.

`Dim("batch")` marks an input dim as dynamic (PyTorch's `dynamic_shapes` forms). Ops
take sizes as plain ints (`view(x, [4, 64])`), so one run cannot tell a 4 that is the
batch from a 4 that is a constant. Capture therefore runs the model again with each
dynamic dim one larger (the input grown by repeating its first slice along that dim),
and once more with every dynamic dim two larger to check: an int that moved with a dim
is `const + coef * size` (a `SymInt`), fitted from the first two runs, and the third run
must agree with the fit. What does not fit raises `ExportError` at export, naming the op:

- a different sequence of ops at another size (control flow on a size);
- an int that is not affine in the sizes (`size * size`);
- a constant tensor (made by `tp.arange`, `tp.full`, ... which are not dispatched) whose
  size follows a dynamic dim: its values are frozen at capture.
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay.errors import TensorPlayError
from tensorplay.export.values import SymInt, Value


class ExportError(TensorPlayError):
    """The model cannot be exported as asked (torch._dynamo's UserError plays this role)."""


class Dim:
    """A dynamic dim: `Dim("batch", min=1, max=1024)` (torch.export.Dim). `Dim.AUTO` and
    `Dim.DYNAMIC` mark a dim dynamic under a generated name, `Dim.STATIC` (or None) static."""

    AUTO = DYNAMIC = STATIC = None      # set below

    def __init__(self, name, *, min=None, max=None):
        self.__name__ = name
        self.min, self.max = min, max

    def __repr__(self):
        return f"Dim({self.__name__!r})"


Dim.AUTO = Dim("AUTO")
Dim.DYNAMIC = Dim("DYNAMIC")
Dim.STATIC = Dim("STATIC")


def dynamic_dims(dynamic_shapes, arg_names, inputs):
    """[(input position, dim, name)] from PyTorch's forms of `dynamic_shapes`: a dict by
    argument name or a tuple by position, each entry a {dim: Dim} dict or a per-dim
    tuple (Dim or None)."""
    if dynamic_shapes is None:
        return []
    if isinstance(dynamic_shapes, dict):
        unknown = [k for k in dynamic_shapes if k not in arg_names]
        if unknown:
            raise ExportError(f"export(): dynamic_shapes names {unknown}, which are not "
                              f"inputs of the model (its inputs: {arg_names})",
                              op="export", arg="dynamic_shapes")
        specs = [dynamic_shapes.get(n) for n in arg_names]
    else:
        specs = list(dynamic_shapes) + [None] * (len(arg_names) - len(dynamic_shapes))
    out = []
    for pos, spec in enumerate(specs):
        if spec is None:
            continue
        items = spec.items() if isinstance(spec, dict) else enumerate(spec)
        for dim, d in items:
            if d is None or d is Dim.STATIC:
                continue
            if not isinstance(d, Dim):
                raise ExportError(f"export(): dynamic_shapes of '{arg_names[pos]}' dim {dim}"
                                  f" must be a tp.export.Dim, got {d!r}",
                                  op="export", arg="dynamic_shapes")
            ndim = inputs[pos].dim()
            dim = dim + ndim if dim < 0 else dim
            if not 0 <= dim < ndim:
                raise ExportError(f"export(): dynamic_shapes of '{arg_names[pos]}' names dim"
                                  f" {dim}, but the input has {ndim} dims",
                                  op="export", arg="dynamic_shapes")
            name = f"s_{arg_names[pos]}_{dim}" if d in (Dim.AUTO, Dim.DYNAMIC) else d.__name__
            out.append((pos, dim, name))
    return out


def grown(inputs, dims, names, by):
    """The inputs with each dynamic dim of a name in `names` `by` longer: the first slice
    repeated at the end (values stay valid: indices stay in range)."""
    out = list(inputs)
    for pos, dim, name in dims:
        if name in names:
            t = out[pos]
            first = t.narrow(dim, 0, 1)
            out[pos] = tp.cat([t] + [first] * by, dim)
    return out


def merge(graphs, base_sizes, names):
    """Fit the ints of `graphs[0]` (the sizes as given) against `graphs[1 + k]` (dim name
    k one larger) and check the fit on `graphs[-1]` (every dim two larger). `base_sizes`:
    name -> (size, (placeholder position, dim)). Rewrites graphs[0] in place."""
    base, check = graphs[0], graphs[-1]
    moved = graphs[1:-1]

    def fit(a, others, last, where):
        if isinstance(a, Value):
            return a
        if isinstance(a, (list, tuple)):
            return type(a)(fit(x, [o[i] for o in others], last[i], where)
                           for i, x in enumerate(a))
        if isinstance(a, int) and not isinstance(a, bool):
            coefs = [o - a for o in others]
            if not any(coefs):
                if last != a:
                    _raise(where, f"the int {a} is {last} when the sizes grow by two")
                return a
            const = a - sum(c * base_sizes[n][0] for c, n in zip(coefs, names))
            terms = tuple((base_sizes[n][1], c, n) for c, n in zip(coefs, names) if c)
            predicted = a + 2 * sum(coefs)
            if predicted != last:
                _raise(where, f"the int {a} follows the dynamic sizes in no affine way "
                              f"({a}, then {others}, then {last})")
            return SymInt(const, terms)
        return a

    for i, node in enumerate(base.nodes):
        others = [g.nodes[i] if i < len(g.nodes) else None for g in moved + [check]]
        if any(o is None or o.func is not node.func for o in others):
            _raise(f"op {i} ({node.func!r})", "another size of a dynamic dim runs other ops "
                   "(control flow on a size)")
        where = f"{node.func!r} (op {i})"
        node.args = fit(node.args, [o.args for o in others[:-1]], others[-1].args, where)
        for j, v in enumerate(node.outputs):
            if v is not None:
                v.shape = fit(v.shape, [o.outputs[j].shape for o in others[:-1]],
                              others[-1].outputs[j].shape, where)
    for p, *rest in zip(base.placeholders, *[g.placeholders for g in graphs[1:]]):
        p.shape = fit(p.shape, [r.shape for r in rest[:-1]], rest[-1].shape, p.name)
    for name, t in base.constants.items():
        if any(tuple(g.constants[name].shape) != tuple(t.shape) for g in graphs[1:]
               if name in g.constants):
            _raise(f"constant {name}", "a tensor not made by a dispatched op (tp.arange, "
                   "tp.full, ...; dropout's mask in training mode: call model.eval()) has "
                   "a size that follows a dynamic dim; its values are frozen at capture")
    return base


def _raise(where, why):
    raise ExportError(f"export(): cannot make {where} dynamic: {why}. Export with that "
                      f"dim static (dynamic_shapes=None), or compute it from the input "
                      f"with dispatched ops", op="export", arg="dynamic_shapes")
