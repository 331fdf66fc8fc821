"""The launchers of the pointwise ops on `cuda`: each puts an expression of the table in
triton_kernels/pointwise_expressions.py into the per-arity template of
triton_kernels/_template.py and launches it.

A launcher does what the template cannot know: the result's sizes and dtype (from the
op's shape rule, the one the Meta backend runs: `shape_rule` of kernel_support), the dtype
the expression is computed in (PyTorch's type promotion, with fp16/bf16 widened to
float32), and where the result goes (a new tensor, or `self` for the in-place
variants). The launchers of EXPRESSIONS are written out below; those of OPS are made
from each op's schema by `make_launcher`. Every one ends in `run_expression`.

Complex tensors: an op with a complex form (COMPLEX_EXPRESSIONS) runs it when an input
is complex (`run_complex`: the template's kernel over the (re, im) parts), computing in
the inputs' promoted complex dtype; its launchers tell the kernel registry so
(`takes_complex`). The others never see a complex tensor: the registry runs their CPU
kernel on host copies instead.

    >>> import triton_kernels; print(triton_kernels.source("sigmoid"))
"""
from __future__ import annotations

import inspect

import triton

from tensorplay import _dtype as dt
from tensorplay import library
from tensorplay._promotion import result_type, result_type2
from tensorplay.dispatch.autotune import Config, bucket, choose
from tensorplay.dispatch.plan_cache import plans
from tensorplay.errors import DTypeError
from tensorplay.kernel_support.checks import SELF
from tensorplay.kernel_support.ops import call_below_autograd, schema_of, shape_rule, shape_rule_of
from tensorplay.kernel_support.overlap import check_inplace_overlap
from tensorplay.kernel_support.results import factory, numel_of
from triton_kernels import _template
from triton_kernels._launch import (
    INTERPRETED, broadcast_strides, coalesce, compute_dtype, launch, needs_wide_index,
    new_tensor, new_tensor_like, operands, pointer,
)
from triton_kernels.pointwise_expressions import COMPLEX_EXPRESSIONS, EXPRESSIONS, OPS

# Elements per program, and the warps that share them: the template's configurations,
# autotuned per bucket of the element count (tensorplay/dispatch/autotune.py) with the
# first one the default. On a GPU 1024 elements over 4 warps streams well; bigger blocks
# pay off on long tensors. The interpreter pays ~0.5 ms per program whatever its size, so
# its default block is big (its second config exists to be measured against it).
if INTERPRETED:
    CONFIGS = [Config({"BLOCK": 8192}, num_warps=4), Config({"BLOCK": 1024}, num_warps=4)]
else:
    CONFIGS = [Config({"BLOCK": 1024}, num_warps=4), Config({"BLOCK": 2048}, num_warps=8),
               Config({"BLOCK": 4096}, num_warps=8), Config({"BLOCK": 512}, num_warps=4)]
SMALLEST_BLOCK = min(c.kwargs["BLOCK"] for c in CONFIGS)


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


def run_expression(name, expr, out, inputs, compute, scalars, matrix=False, parts=None):
    """The launcher every pointwise kernel shares: `expr` (named `name`, unique per
    expression) of `inputs` into `out`, with the `scalars` dict as kernel arguments.
    `matrix`: the expression reads `row` and `col`, so no dimension is merged. `parts`:
    the complex form's (complex inputs, complex result), see `run_complex`."""
    sizes = out._impl.sizes
    n = numel_of(sizes)
    if n == 0:
        return out
    all_strides = (out._impl.strides,) + tuple(tuple(broadcast_strides(t, sizes))
                                               for t in inputs)
    # The launch plan depends on the sizes and strides only (not on the data): kept in
    # the plan cache, so that a loop over one shape coalesces and looks up once.
    signature = (name, expr, sizes, all_strides, tuple(scalars), matrix, parts)
    kernel_name, fn, shape, flat_strides = plans.get(
        "triton.pointwise", signature,
        lambda: _pointwise_plan(name, expr, sizes, all_strides, tuple(scalars), matrix, parts))
    tl_compute, wide = compute_dtype(compute), needs_wide_index(n, out, *inputs)
    args = [pointer(t) for t in inputs] + [*scalars.values(), n, *shape, *flat_strides]

    def run_config(config, into):
        grid = (triton.cdiv(n, config.kwargs["BLOCK"]),)
        launch(kernel_name, fn, grid, pointer(into), *args, COMPUTE=tl_compute,
               BLOCK=config.kwargs["BLOCK"], WIDE_INDEX=wide, num_warps=config.num_warps,
               num_stages=config.num_stages)

    if n <= SMALLEST_BLOCK:
        config = CONFIGS[0]     # one program whatever the config: nothing to choose
    else:
        # One choice per bucket and dtype for every expression: the template's kernels
        # are memory-bound alike. Measured launches write a scratch result laid out as
        # `out`: an in-place op's `out` is one of its inputs, and each measured run must
        # read the inputs as they were.
        scratch = []        # made on the first measured run only, and reused

        def run_measured(c):
            if not scratch:
                scratch.append(factory.empty_strided(tuple(sizes), out._impl.strides,
                                                     dtype=out._impl.dtype,
                                                     device=out._impl.device))
            run_config(c, scratch[0])
        config = choose("pointwise template", CONFIGS, (bucket(n), compute.name),
                        run_measured)
    run_config(config, out)
    return out


def _pointwise_plan(name, expr, sizes, all_strides, scalars, matrix, parts):
    """(kernel name, compiled template, merged sizes, their strides flattened)."""
    if matrix:
        shape, strides = list(sizes), all_strides
    else:
        shape, strides = coalesce(sizes, [list(s) for s in all_strides])
    fn = _template.kernel(name, expr, len(all_strides) - 1, len(shape), scalars, matrix,
                          parts)
    flat_strides = tuple(s for per_operand in strides for s in per_operand)
    return _template.kernel_name(name, len(shape)), fn, tuple(shape), flat_strides


# ---- the complex forms ----------------------------------------------------------------
def complex_form(kernel_name):
    """The name of kernel `kernel_name`'s COMPLEX_EXPRESSIONS entry (an in-place form,
    `exp_`, shares exp's), or None. None for the in-place form of a real result (abs_:
    a complex tensor cannot hold it)."""
    name = kernel_name[:-1] if kernel_name.endswith("_") else kernel_name
    entry = COMPLEX_EXPRESSIONS.get(name)
    if entry is None or (name != kernel_name and entry[1] == "real"):
        return None
    return name


def is_complex_call(*tensors):
    return any(t is not None and t._impl.dtype.is_complex for t in tensors)


def complex_result(name, sizes, device, tensors):
    """(a new result of the complex form of `name`, the dtype it computes in). It computes
    in the inputs' promoted dtype, complex; a real result (abs) is of its parts' dtype."""
    compute = result_type(*tensors)
    dtype = compute if COMPLEX_EXPRESSIONS[name][1] == "complex" else compute.to_real()
    # (complex angle is row-major in PyTorch: it writes into a fresh out= tensor)
    return new_tensor_like(sizes, dtype, device, () if name == "angle" else tensors), compute


def run_complex(name, out, inputs, compute, scalars=None):
    """The complex form of `name` (COMPLEX_EXPRESSIONS) of `inputs`, computed in the
    complex dtype `compute` (the kernel in its parts' float dtype), into `out`. A complex
    scalar argument (`alpha`) is handed to the kernel as its two parts. One kernel is
    generated per pattern of complex and real inputs (`mul_complex_cr`: complex * real)."""
    arity, result, expr, *names = COMPLEX_EXPRESSIONS[name]
    if result == "complex" and not out._impl.dtype.is_complex:   # z added into a float x
        raise DTypeError(f"{name}(): result type {compute.name} can't be cast to the desired "
                         f"output type {out._impl.dtype.name}", op=name)
    values = {}
    for scalar in (names[0] if names else ()):
        value = complex(scalars[scalar])
        values[f"{scalar}_re"], values[f"{scalar}_im"] = value.real, value.imag
    pattern = tuple(t._impl.dtype.is_complex for t in inputs)
    variant = f"{name}_complex_{''.join('c' if c else 'r' for c in pattern)}"
    return run_expression(variant, expr, out, inputs, compute, values,
                          parts=(pattern, result == "complex"))


# ---- binary ---------------------------------------------------------------------------
def _binary(name, rule, self, other, alpha=1):
    """`rule`: the op's shape rule, by the name ops.yaml's `meta:` gives it."""
    device, (a, b) = operands(name, self=self, other=other)
    spec = shape_rule(rule)(name, (self, other, alpha))
    if is_complex_call(a, b):
        out, compute = complex_result(name, spec.sizes, device, (self, other))
        return run_complex(name, out, (a, b), compute, {"alpha": alpha})
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
    if is_complex_call(self, other):        # the result's dtype is theirs, not condition's
        out, compute = complex_result("where", spec.sizes, device, (self, other))
        return run_complex("where", out, tensors, compute)
    out = new_tensor_like(spec.sizes, spec.dtype, device, (condition, self, other))
    return run("where", out, tensors, spec.dtype)


# ---- unary ----------------------------------------------------------------------------
def _unary(name, rule):
    def kernel(self):
        device, (a,) = operands(name, self=self)
        spec = shape_rule(rule)(name, (self,))
        if is_complex_call(a):
            out, compute = complex_result(name, spec.sizes, device, (self,))
            return run_complex(name, out, (a,), compute)
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
    if compute.is_complex:
        return run_complex(name, self, (self, b), compute, {"alpha": alpha})
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
    form = complex_form(kernel_name)

    def launcher(*args):
        a = dict(zip(names, args))
        tensors = {names[i]: args[i] for i in positions if args[i] is not None}
        device, moved = operands(op, **tensors)
        spec = shape_rule_of(entry.op)(op, args)    # the checks; SELF for the in-place forms
        if form is not None and is_complex_call(*moved):
            return _launch_complex(form, op, args, inplace, spec, device, tensors, moved, a)
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


def _launch_complex(form, op, args, inplace, spec, device, tensors, moved, scalars):
    """A launcher of OPS on complex inputs: its complex form, into self or a new result."""
    inputs = list(tensors.values())
    if inplace:
        check_inplace_overlap(op, args[0], *list(tensors.items())[1:])
        out, compute = args[0], result_type(*inputs)
    else:
        out, compute = complex_result(form, spec.sizes, device, inputs)
    return run_complex(form, out, moved, compute, scalars)


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


# Every launcher with a complex form says so to the kernel registry (library.kernel).
for _kernel_name in [n for n in globals() if complex_form(n) is not None]:
    library.kernel(takes_complex=True)(globals()[_kernel_name])
del _kernel_name


def equal(self, other):
    """True when both have the same shape and values (not a pointwise result: a bool)."""
    operands("equal", self=self, other=other)
    if self._impl.sizes != other._impl.sizes:
        return False
    if self._impl.numel() == 0:
        return True
    return bool(call_below_autograd("eq.Tensor", self, other).min().item())
