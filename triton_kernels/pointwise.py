"""The launchers of the pointwise ops on `cuda`: each puts an expression of the table in
triton_kernels/pointwise_expressions.py into the per-arity template of
triton_kernels/_template.py and launches it.

A launcher does what the template cannot know: the result's sizes and dtype (from the
op's shape rule, the one the Meta backend runs: `shape_rule` of kernel_support), the dtype
the expression is computed in (PyTorch's type promotion, with fp16/bf16 widened to
float32), and where the result goes (a new tensor, or `self` for the in-place
variants). The launchers of EXPRESSIONS are written out below; those of OPS are made
from each op's schema by `make_launcher`. Every one ends in `run_expression`.

    >>> import triton_kernels; print(triton_kernels.source("sigmoid"))
"""
from __future__ import annotations

import inspect

import triton

from tensorplay import _dtype as dt
from tensorplay._promotion import result_type, result_type2
from tensorplay.dispatch.plan_cache import plans
from tensorplay.errors import DTypeError
from tensorplay.kernel_support.checks import SELF
from tensorplay.kernel_support.ops import call_below_autograd, schema_of, shape_rule, shape_rule_of
from tensorplay.kernel_support.overlap import check_inplace_overlap
from tensorplay.kernel_support.results import numel_of
from triton_kernels import _template
from triton_kernels._launch import (
    INTERPRETED, broadcast_strides, coalesce, compute_dtype, launch, needs_wide_index,
    new_tensor, new_tensor_like, operands, pointer,
)
from triton_kernels.pointwise_expressions import EXPRESSIONS, OPS

# Elements per program. The interpreter pays ~0.5 ms per program whatever its size,
# so it gets bigger blocks; on a GPU 1024 elements over 4 warps streams well.
BLOCK = 8192 if INTERPRETED else 1024


def _entry(name):
    arity, expr, *scalars = EXPRESSIONS[name]
    return arity, expr, tuple(scalars[0]) if scalars else ()


def source(name, rank=1):
    """The generated Triton source of pointwise kernel `name` for a rank-`rank` result
    (for an OPS entry, its first variant: see `_variant`)."""
    if name in EXPRESSIONS:
        arity, expr, scalars = _entry(name)
        return _template.source(name, expr, arity, rank, scalars)
    entry = OPS[name]
    if callable(entry.expr):
        raise ValueError(f"{name}: the expression depends on the call's arguments; call "
                         f"the op once and read triton_kernels._template._sources")
    arity = len(schema_of(entry.op).tensor_positions)
    return _template.source(_variant(name, entry.expr), entry.expr, arity, rank)


def run(name, out, inputs, compute, alpha=1):
    """Compute EXPRESSIONS[name] of the `inputs` tensors into `out` (already allocated,
    any strides), broadcasting each input to out's sizes and computing in the TensorPlay
    dtype `compute`."""
    arity, expr, scalars = _entry(name)
    values = {"alpha": alpha} if scalars else {}
    return run_expression(name, expr, out, inputs, compute, values)


def run_expression(name, expr, out, inputs, compute, scalars, matrix=False):
    """The launcher every pointwise kernel shares: `expr` (named `name`, unique per
    expression) of `inputs` into `out`, with the `scalars` dict as kernel arguments.
    `matrix`: the expression reads `row` and `col`, so no dimension is merged."""
    sizes = out._impl.sizes
    n = numel_of(sizes)
    if n == 0:
        return out
    all_strides = (out._impl.strides,) + tuple(tuple(broadcast_strides(t, sizes))
                                               for t in inputs)
    # The launch plan depends on the sizes and strides only (not on the data): kept in
    # the plan cache, so that a loop over one shape coalesces and looks up once.
    signature = (name, expr, sizes, all_strides, tuple(scalars), matrix)
    kernel_name, fn, shape, flat_strides, grid = plans.get(
        "triton.pointwise", signature,
        lambda: _pointwise_plan(name, expr, sizes, all_strides, tuple(scalars), matrix))
    launch(kernel_name, fn, grid, pointer(out), *[pointer(t) for t in inputs],
           *scalars.values(), n, *shape, *flat_strides, COMPUTE=compute_dtype(compute),
           BLOCK=BLOCK, WIDE_INDEX=needs_wide_index(n, out, *inputs))
    return out


def _pointwise_plan(name, expr, sizes, all_strides, scalars, matrix):
    """(kernel name, compiled template, merged sizes, their strides flattened, grid)."""
    if matrix:
        shape, strides = list(sizes), all_strides
    else:
        shape, strides = coalesce(sizes, [list(s) for s in all_strides])
    fn = _template.kernel(name, expr, len(all_strides) - 1, len(shape), scalars, matrix)
    flat_strides = tuple(s for per_operand in strides for s in per_operand)
    grid = (triton.cdiv(numel_of(sizes), BLOCK),)
    return _template.kernel_name(name, len(shape)), fn, tuple(shape), flat_strides, grid


# ---- binary ---------------------------------------------------------------------------
def _binary(name, rule, self, other, alpha=1):
    """`rule`: the op's shape rule, by the name ops.yaml's `meta:` gives it."""
    device, (a, b) = operands(name, self=self, other=other)
    spec = shape_rule(rule)(name, (self, other, alpha))
    out = new_tensor_like(spec.sizes, spec.dtype, device, (self, other))
    return run(name, out, (a, b), spec.dtype, alpha)


def add(self, other, alpha):
    return _binary("add", "binary", self, other, alpha)


def sub(self, other, alpha):
    return _binary("sub", "binary_sub", self, other, alpha)


def mul(self, other):
    return _binary("mul", "binary", self, other)


def div(self, other):
    return _binary("div", "binary_float", self, other)


def maximum(self, other):
    return _binary("maximum", "binary", self, other)


def minimum(self, other):
    return _binary("minimum", "binary", self, other)


def xlogy(self, other):
    return _binary("xlogy", "binary_float", self, other)


def pow(self, exponent):  # noqa: A001 - the op's name
    device, (a, b) = operands("pow", self=self, exponent=exponent)
    spec = shape_rule("binary_pow")("pow", (self, exponent))
    if not spec.dtype.is_floating_point and exponent._impl.wrapped_number:
        value = exponent.item()       # a Python number: PyTorch refuses a negative one
        if value < 0:
            raise DTypeError(f"pow(): Integers to negative integer powers are not allowed "
                             f"(argument 'exponent' is {value} and 'self' is "
                             f"{spec.dtype.name})", op="pow", arg="exponent")
    out = new_tensor_like(spec.sizes, spec.dtype, device, (self, exponent))
    return run("pow", out, (a, b), spec.dtype)


def _compare(name):
    def kernel(self, other):
        device, (a, b) = operands(name, self=self, other=other)
        spec = shape_rule("comparison")(name, (self, other))
        out = new_tensor_like(spec.sizes, dt.bool, device, (self, other))
        return run(name, out, (a, b), result_type2(self, other))
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


eq = _compare("eq")
ne = _compare("ne")
lt = _compare("lt")
le = _compare("le")
gt = _compare("gt")
ge = _compare("ge")


def where(condition, self, other):
    device, tensors = operands("where", condition=condition, self=self, other=other)
    spec = shape_rule("where")("where", (condition, self, other))
    out = new_tensor_like(spec.sizes, spec.dtype, device, (condition, self, other))
    return run("where", out, tensors, spec.dtype)


# ---- unary ----------------------------------------------------------------------------
def _unary(name, rule):
    def kernel(self):
        device, (a,) = operands(name, self=self)
        spec = shape_rule(rule)(name, (self,))
        out = new_tensor_like(spec.sizes, spec.dtype, device, (self,))
        return run(name, out, (a,), spec.dtype)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


neg = _unary("neg", "unary_neg")
abs = _unary("abs", "unary_abs")  # noqa: A001
sign = _unary("sign", "unary")
exp = _unary("exp", "unary_float")
log = _unary("log", "unary_float")
sqrt = _unary("sqrt", "unary_float")
sin = _unary("sin", "unary_float")
cos = _unary("cos", "unary_float")
tanh = _unary("tanh", "unary_float")
sigmoid = _unary("sigmoid", "unary_float")
relu = _unary("relu", "unary_relu")


# ---- in place: the result is written through self's own strides ----------------------
def _inplace(name, rule, self, other, alpha=1):
    _, (_, b) = operands(f"{name}_", self=self, other=other)
    # shapes, and may the result be cast to self?
    shape_rule(rule)(f"{name}_", (self, other, alpha))
    check_inplace_overlap(f"{name}_", self, ("other", other))
    compute = result_type2(self, other)
    if name == "div" and not compute.is_floating_point:
        compute = dt.get_default_dtype()
    return run(name, self, (self, b), compute, alpha)


def add_(self, other, alpha):
    return _inplace("add", "binary_inplace", self, other, alpha)


def sub_(self, other, alpha):
    return _inplace("sub", "binary_inplace", self, other, alpha)


def mul_(self, other):
    return _inplace("mul", "binary_inplace", self, other)


def div_(self, other):
    return _inplace("div", "binary_float_inplace", self, other)


def relu_(self):
    shape_rule("unary_relu")("relu_", (self,))
    operands("relu_", self=self)
    check_inplace_overlap("relu_", self)
    return run("relu", self, (self,), self._impl.dtype)


# ---- the launchers of OPS, made from each op's schema -------------------------------
_variants = {}     # (kernel name, expression) -> the template name of that variant


def _variant(kernel, expr):
    name = _variants.get((kernel, expr))
    if name is None:
        count = sum(1 for k, _ in _variants if k == kernel)
        name = _variants[(kernel, expr)] = kernel if count == 0 else f"{kernel}_v{count}"
    return name


def _compute_dtype(entry, spec, tensors):
    """In place (spec is SELF) and for tests: the tensors' promoted dtype. Otherwise the
    result's dtype, as the op's rule gives it."""
    if entry.compute in ("inputs", "float") or spec is SELF:
        dtype = result_type(*tensors)
        if entry.compute == "float" and not dtype.is_floating_point:
            return dt.float64       # |x - y| of unsigned integers must not wrap around
        return dtype
    return spec.dtype


def make_launcher(kernel_name, entry):
    """The CUDA kernel of `entry.op`, with the schema's parameter names."""
    schema = schema_of(entry.op)
    names = schema.arg_names
    positions = schema.tensor_positions
    inplace = bool(schema.mutable_positions)
    op = entry.op.partition(".")[0]                 # the name errors use: "clamp_"

    def launcher(*args):
        a = dict(zip(names, args))
        tensors = {names[i]: args[i] for i in positions if args[i] is not None}
        device, moved = operands(op, **tensors)
        spec = shape_rule_of(entry.op)(op, args)    # the checks; SELF for the in-place forms
        compute = _compute_dtype(entry, spec, list(tensors.values()))
        if entry.check is not None:
            entry.check(op, a, compute)
        expr, scalars = entry.expr(a) if callable(entry.expr) else (entry.expr, {})
        if inplace:
            check_inplace_overlap(op, args[0], *list(tensors.items())[1:])
        out = args[0] if inplace else \
            new_tensor_like(spec.sizes, spec.dtype, device, list(tensors.values()))
        run_expression(_variant(kernel_name, expr), expr, out, moved, compute, scalars)
        return out

    launcher.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
    launcher.__name__ = launcher.__qualname__ = kernel_name
    launcher.__doc__ = f"{entry.op} on cuda, elementwise: {entry.expr}"
    return launcher


for _kernel_name, _op_entry in OPS.items():
    globals()[_kernel_name] = make_launcher(_kernel_name, _op_entry)
del _kernel_name, _op_entry
_nan_to_num_float_ = globals()["nan_to_num_"]


def nan_to_num_(self, nan, posinf, neginf):
    """In place. Integers and bool have no nan or inf: PyTorch copies self onto itself,
    which writes nothing (so an expanded integer tensor is no overlap to refuse)."""
    if self._impl.dtype.is_floating_point:
        return _nan_to_num_float_(self, nan, posinf, neginf)
    operands("nan_to_num_", self=self)
    return self


def equal(self, other):
    """True when both have the same shape and values (not a pointwise result: a bool)."""
    operands("equal", self=self, other=other)
    if self._impl.sizes != other._impl.sizes:
        return False
    if self._impl.numel() == 0:
        return True
    return bool(call_below_autograd("eq.Tensor", self, other).min().item())
