"""The Triton source of an op's CUDA kernel: `triton_kernels.source("softmax")`.

A launcher (the Python function ops.yaml names for the CUDA key) does not hold its kernel
in one place: it calls helpers, which launch `@triton.jit` functions or put an expression
into the pointwise template. So the source is found by reading the launcher's code, not by
running it: starting from the launcher, every function of triton_kernels/ that its code
names (globals, closure cells, attributes of triton_kernels modules) is followed, and

    an @triton.jit function it names        is a kernel it launches: its own source
                                            (inspect on the function's `.fn`)
    a template launch (run, run_expression)  with the expression it names (a string
                                            constant naming pointwise_expressions.py's
                                            table, or the `Pointwise` entry a generated
                                            launcher closes over; an expression made per
                                            call, the one of the schema's defaults): the
                                            generated source

An op whose CUDA kernel reaches neither (it computes on a host copy, or builds its result
from other ops) has no Triton kernel of its own, and one whose template expression is made
from each call's arguments (the random fills, tril's diagonal, round's decimals) has no
fixed source: NoKernelError naming it, saying which.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import re
import types

from tensorplay.errors import NoKernelError
from triton_kernels import _template

# The pointwise template's entry points: a launcher reaching one generates its kernel.
TEMPLATE_ENTRIES = {"run", "run_expression", "run_complex"}


def _is_jit(obj):
    """An @triton.jit function (JITFunction, or the interpreter's InterpretedFunction)."""
    return not isinstance(obj, type) and hasattr(obj, "fn") and hasattr(obj, "arg_names")


def _codes(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


class _Found:
    def __init__(self):
        self.kernels = []          # @triton.jit functions, in the order met
        self.expressions = []      # (kernel name, expression, arity, scalars)
        self.template = False      # reached the template
        self.seen = set()


def _walk(fn, found):
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    if not isinstance(fn, types.FunctionType) or fn in found.seen:
        return
    found.seen.add(fn)
    if fn.__module__ == "triton_kernels.pointwise" and fn.__name__ in TEMPLATE_ENTRIES:
        found.template = True
        return
    names, strings = set(), set()
    for code in _codes(fn.__code__):
        names.update(code.co_names)
        strings.update(c for c in code.co_consts if isinstance(c, str))
    objects = [fn.__globals__[n] for n in names if n in fn.__globals__]
    cells = [c.cell_contents for c in fn.__closure__ or () if _filled(c)]
    for obj in objects + cells:
        if isinstance(obj, types.ModuleType) and obj.__name__.startswith("triton_kernels"):
            # `reduction.reduce(...)`: the attributes of a kernel module the code names
            objects += [getattr(obj, n) for n in names if hasattr(obj, n)]
    for obj in objects + cells:
        if _is_jit(obj):
            if obj not in found.kernels:
                found.kernels.append(obj)
        elif isinstance(obj, types.FunctionType) and \
                (obj.__module__ or "").startswith("triton_kernels"):
            _walk(obj, found)
    _expressions(fn, strings, cells, found)


def _filled(cell):
    try:
        cell.cell_contents
    except ValueError:     # a closure variable not bound yet
        return False
    return True


def _expressions(fn, strings, cells, found):
    """The template expressions `fn` names: EXPRESSIONS keys among its string constants
    (`run("copy", ...)`), and a generated launcher's `Pointwise` entry (make_launcher)."""
    from triton_kernels import pointwise
    from triton_kernels.pointwise_expressions import Pointwise
    for name in sorted(strings | {c for c in cells if isinstance(c, str)}):
        if name in pointwise.EXPRESSIONS:
            arity, expr, scalars = pointwise._entry(name)
            found.expressions.append((name, expr, arity, scalars))
    entry = next((c for c in cells if isinstance(c, Pointwise)), None)
    if entry is None:
        return
    schema = pointwise.schema_of(entry.op)
    expr, scalars = entry.expr, ()
    if callable(expr):
        # An expression made per call from the op's other arguments (gelu's `approximate`):
        # the one its schema's defaults make.
        try:
            expr, values = expr(_defaults(schema))
        except Exception:        # noqa: BLE001 - no default form: nothing to show
            return
        scalars = tuple(values)
    found.expressions.append((pointwise._variant(fn.__name__, expr), expr,
                              len(schema.tensor_positions), scalars))


def _defaults(schema):
    """{argument name: default} from the schema text (`str approximate='none'`); None for
    the others (the tensors)."""
    values = dict.fromkeys(schema.arg_names)
    for name, text in re.findall(r"(\w+)=([^,)]+)", schema.text.partition("->")[0]):
        try:
            values[name] = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            pass
    return values


def _jit_source(kernel):
    fn = kernel.fn
    path = inspect.getsourcefile(fn) or "?"
    where = path[path.rfind("triton_kernels"):] if "triton_kernels" in path else path
    return f"# {where}: {fn.__name__}\n" + inspect.getsource(fn)


def _launchers(op, dispatch):
    """The CUDA launchers ops.yaml names for `op`: its own name, any overload of it
    (`add` -> add.Tensor), the private op a public one runs (`softmax` -> _softmax)."""
    wanted = {op, f"_{op}"}
    chosen = [dotted for name, dotted in dispatch
              if name in wanted or name.partition(".")[0] in wanted]
    out = []
    for dotted in dict.fromkeys(chosen):
        module, _, attr = dotted.rpartition(".")
        out.append(getattr(importlib.import_module(f"triton_kernels.{module}"), attr))
    return out


def source(op, dispatch, rank=1):
    """The Triton source of `op`'s CUDA kernels (see the module docstring). `dispatch`:
    ops.yaml's (op, kernel) pairs for the CUDA key. `rank`: the result rank a template
    kernel is generated for."""
    launchers = _launchers(op, dispatch)
    if not launchers:
        raise NoKernelError(f"source(): {op} has no CUDA kernel (ops.yaml names none for "
                            f"it)", op=op)
    found = _Found()
    for launcher in launchers:
        _walk(launcher, found)
    parts = [_jit_source(k) for k in found.kernels]
    if not found.kernels:     # a template kernel (hand-written ones come first)
        for name, expr, arity, scalars in dict.fromkeys(
                (n, e, a, tuple(s)) for n, e, a, s in found.expressions):
            parts.append(_template.source(name, expr, arity, rank, scalars))
    if found.template and not parts:
        raise NoKernelError(f"source(): {op} has no fixed Triton source: its CUDA kernel "
                            f"puts an expression made from each call's arguments into the "
                            f"pointwise template; call the op once, then read "
                            f"triton_kernels._template._sources", op=op)
    if not parts:
        raise NoKernelError(f"source(): {op} has no Triton kernel of its own: its CUDA "
                            f"kernel computes on a host copy or from other ops", op=op)
    return "\n\n".join(parts)
