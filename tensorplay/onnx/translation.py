"""One small function per op: a captured node (tensorplay/export/graph.py) -> ONNX nodes.

`TRANSLATIONS` maps an op's overload name (`linear`, `add.Tensor`, as in ops.yaml) to
its translation, `fn(ctx, node, *args)`, where the args are the node's in schema order
(Values, SymInts, Python values). A translation asks `ctx` for the ONNX names of its
inputs (`ctx.tensor(v)`, `ctx.ints(sizes)`) and adds ONNX nodes whose outputs are named
after the node's results (`ctx.out(node)`). An op without an entry raises
UnsupportedOperatorError naming it: add an entry here to export it.
"""
from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from tensorplay.export.values import SymInt, Value
from tensorplay.onnx.errors import UnsupportedOperatorError

ONNX_DTYPES = {
    "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE,
    "float16": TensorProto.FLOAT16, "bfloat16": TensorProto.BFLOAT16,
    "int64": TensorProto.INT64, "int32": TensorProto.INT32, "int16": TensorProto.INT16,
    "int8": TensorProto.INT8, "uint8": TensorProto.UINT8, "bool": TensorProto.BOOL,
}
INT64_MAX = 2 ** 63 - 1


def onnx_dtype(dtype, what):
    try:
        return ONNX_DTYPES[dtype.name]
    except KeyError:
        raise UnsupportedOperatorError(f"onnx.export(): {what} has dtype {dtype.name}, "
                                       f"which has no ONNX type here", op="onnx.export")


class Context:
    """What the translations build: the ONNX nodes and initializers, and the names."""

    def __init__(self, graph, rename):
        self.graph = graph
        self.rename = rename           # graph value name -> ONNX name (input/output names)
        self.nodes = []
        self.initializers = []
        self.known = set()             # ONNX names defined so far
        self.counter = 0
        self.node = None               # the node being translated (for error messages)
        self.lazy = {}                 # ONNX name -> array: initializers added on first use

    # ---- names -----------------------------------------------------------------------
    def name(self, value):
        return self.rename.get(value.name, value.name)

    def fresh(self, hint):
        self.counter += 1
        return f"{hint}__{self.counter}"

    def tensor(self, v, dtype=None):
        """The ONNX name of an input: a Value (a constant becomes an initializer on first
        use), or a Python number made a constant of `dtype` (a tp dtype)."""
        if isinstance(v, Value):
            name = self.name(v)
            if v.kind == "constant" and name not in self.known:
                self.add_initializer(name, self.graph.constants[v.name].numpy())
            if name in self.lazy and name not in self.known:
                self.add_initializer(name, self.lazy.pop(name))
            if name not in self.known:
                raise UnsupportedOperatorError(
                    f"onnx.export(): {self.node.func!r} reads {v.name}, a result that no "
                    f"translation produced (an output the exporter leaves out, such as "
                    f"the indices of max_pool2d or batch norm's saved statistics)",
                    op=self.node.func.name)
            return name
        return self.constant(np.array(v, dtype=_np_dtype(dtype)))

    def same_dtype(self, a, b, dtype):
        """Two operands of a binary op, a constant that was a Python number (a wrapped
        0-dim tensor) cast to `dtype` as TensorPlay's promotion does."""
        return [self._as(x, dtype) for x in (a, b)]

    def _as(self, x, dtype):
        if isinstance(x, Value):
            if x.kind == "constant" and self.graph.constants[x.name]._impl.wrapped_number:
                value = self.graph.constants[x.name].item()
                return self.constant(np.array(value, dtype=_np_dtype(dtype)))
            name = self.tensor(x)
            if x.dtype.name != dtype.name:
                return self.op("Cast", [name], to=onnx_dtype(dtype, x.name))
            return name
        return self.tensor(x, dtype)

    def initializers_names(self):
        return {t.name for t in self.initializers}

    def out(self, node, i=0):
        name = self.name(node.outputs[i])
        self.known.add(name)
        return name

    # ---- building --------------------------------------------------------------------
    def add_initializer(self, name, array):
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        self.known.add(name)
        return name

    def constant(self, array):
        return self.add_initializer(self.fresh("const"), array)

    def op(self, op_type, inputs, outputs=None, **attrs):
        """Add one ONNX node; returns its (first) output name."""
        outputs = outputs or [self.fresh(op_type.lower())]
        self.nodes.append(helper.make_node(op_type, inputs, outputs, **attrs))
        self.known.update(o for o in outputs if o)
        return outputs[0]

    def ints(self, values):
        """An int64 1-d tensor of `values`; SymInts computed from the inputs' shapes."""
        values = list(values)
        if not any(isinstance(v, SymInt) for v in values):
            return self.constant(np.array(values, dtype=np.int64))
        parts = [self.sym(v) if isinstance(v, SymInt) else
                 self.constant(np.array([v], dtype=np.int64)) for v in values]
        return self.op("Concat", parts, axis=0)

    def sym(self, s):
        """A SymInt as an int64 [1] tensor: const + sum(coef * Shape(input)[dim])."""
        total = self.constant(np.array([s.const], dtype=np.int64))
        for (pos, dim), coef, _ in s.terms:
            placeholder = self.graph.placeholders[pos]
            size = self.op("Shape", [self.name(placeholder)], start=dim, end=dim + 1)
            term = self.op("Mul", [size, self.constant(np.array([coef], dtype=np.int64))])
            total = self.op("Add", [total, term])
        return total


def _np_dtype(dtype):
    if dtype is None:
        return None
    return helper.tensor_dtype_to_np_dtype(onnx_dtype(dtype, "a constant"))


def _rank(v):
    return len(v.shape)


def _dim(d, rank):
    return d + rank if d < 0 else d


TRANSLATIONS = {}


def translates(*names):
    def register(fn):
        for n in names:
            TRANSLATIONS[n] = fn
        return fn
    return register


def translate(ctx, node, table=None):
    fn = (TRANSLATIONS if table is None else table).get(node.func.name)
    if fn is None:
        raise UnsupportedOperatorError(
            f"onnx.export(): the op {node.func.name} ({node.func!r}) has no ONNX "
            f"translation (add one to TRANSLATIONS in tensorplay/onnx/translation.py)",
            op=node.func.name)
    ctx.node = node
    fn(ctx, node, *node.args)


# ---- elementwise ---------------------------------------------------------------------
UNARY = {"relu": "Relu", "neg": "Neg", "exp": "Exp", "sqrt": "Sqrt", "tanh": "Tanh",
         "sigmoid": "Sigmoid", "erf": "Erf", "clone": "Identity", "contiguous": "Identity",
         "alias": "Identity", "detach": "Identity", "abs": "Abs", "log": "Log"}


def _unary(op_type):
    def fn(ctx, node, x, *rest):
        ctx.op(op_type, [ctx.tensor(x)], [ctx.out(node)])
    return fn


for _name, _op_type in UNARY.items():
    TRANSLATIONS[_name] = _unary(_op_type)


@translates("rsqrt")
def rsqrt(ctx, node, x):
    ctx.op("Reciprocal", [ctx.op("Sqrt", [ctx.tensor(x)])], [ctx.out(node)])


@translates("silu")
def silu(ctx, node, x):
    name = ctx.tensor(x)
    ctx.op("Mul", [name, ctx.op("Sigmoid", [name])], [ctx.out(node)])


@translates("gelu")
def gelu(ctx, node, x, approximate="none"):
    """Gelu is an ONNX op from opset 20 only: its formula, for opset 17 and 18."""
    dt = node.outputs[0].dtype
    name = ctx.tensor(x)
    if approximate == "tanh":   # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = ctx.op("Mul", [name, ctx.op("Mul", [name, name])])
        inner = ctx.op("Add", [name, ctx.op("Mul", [cube, ctx.tensor(0.044715, dt)])])
        t = ctx.op("Tanh", [ctx.op("Mul", [inner, ctx.tensor(math.sqrt(2 / math.pi), dt)])])
    else:                       # 0.5 x (1 + erf(x / sqrt(2)))
        t = ctx.op("Erf", [ctx.op("Mul", [name, ctx.tensor(1 / math.sqrt(2), dt)])])
    half = ctx.op("Mul", [name, ctx.tensor(0.5, dt)])
    ctx.op("Mul", [half, ctx.op("Add", [t, ctx.tensor(1.0, dt)])], [ctx.out(node)])


def _binary(op_type):
    def fn(ctx, node, a, b, alpha=1):
        dt = node.outputs[0].dtype
        a, b = ctx.same_dtype(a, b, dt)
        if alpha != 1:                       # add(a, b, alpha) = a + alpha * b
            b = ctx.op("Mul", [b, ctx.tensor(alpha, dt)])
        ctx.op(op_type, [a, b], [ctx.out(node)])
    return fn


for _op_type, _names in {"Add": ("add.Tensor", "add.Scalar"),
                         "Sub": ("sub.Tensor", "sub.Scalar"),
                         "Mul": ("mul.Tensor", "mul.Scalar"),
                         "Div": ("div.Tensor", "div.Scalar"),
                         "Pow": ("pow.Tensor_Tensor", "pow.Tensor_Scalar")}.items():
    for _name in _names:
        TRANSLATIONS[_name] = _binary(_op_type)


@translates("rsub.Tensor", "rsub.Scalar")
def rsub(ctx, node, a, b, alpha=1):
    """rsub(a, b, alpha) = b - alpha * a"""
    if alpha != 1:
        _unsupported(node, "alpha != 1")
    _binary("Sub")(ctx, node, b, a)


def _compare(op_type, negate=False):
    def fn(ctx, node, a, b):
        # compare in the type TensorPlay promotes to: the tensor operand's
        dt = next((x.dtype for x in (a, b) if isinstance(x, Value) and not (
            x.kind == "constant" and ctx.graph.constants[x.name]._impl.wrapped_number)),
            a.dtype)
        a, b = ctx.same_dtype(a, b, dt)
        if negate:
            ctx.op("Not", [ctx.op(op_type, [a, b])], [ctx.out(node)])
        else:
            ctx.op(op_type, [a, b], [ctx.out(node)])
    return fn


for _name, (_op_type, _neg) in {"eq": ("Equal", False), "ne": ("Equal", True),
                                "lt": ("Less", False), "le": ("LessOrEqual", False),
                                "gt": ("Greater", False),
                                "ge": ("GreaterOrEqual", False)}.items():
    TRANSLATIONS[f"{_name}.Tensor"] = TRANSLATIONS[f"{_name}.Scalar"] = _compare(_op_type, _neg)


@translates("where.self", "where.ScalarOther", "where.ScalarSelf")
def where(ctx, node, cond, a, b):
    a, b = ctx.same_dtype(a, b, node.outputs[0].dtype)
    ctx.op("Where", [ctx.tensor(cond), a, b], [ctx.out(node)])


@translates("masked_fill.Scalar", "masked_fill.Tensor")
def masked_fill(ctx, node, x, mask, value):
    fill = ctx._as(value, x.dtype)
    ctx.op("Where", [ctx.tensor(mask), fill, ctx.tensor(x)], [ctx.out(node)])


@translates("_to_copy")
def to_copy(ctx, node, x, dtype=None, *rest):
    ctx.op("Cast", [ctx.tensor(x)], [ctx.out(node)],
           to=onnx_dtype(node.outputs[0].dtype, node.outputs[0].name))


# ---- reductions ----------------------------------------------------------------------
def _reduce(op_type):
    def fn(ctx, node, x, dim=None, keepdim=False, dtype=None):
        inputs = [ctx.tensor(x)]
        if dim is not None and len(dim):
            inputs.append(ctx.ints([_dim(d, _rank(x)) for d in dim]))
        ctx.op(op_type, inputs, [ctx.out(node)], keepdims=int(keepdim))
    return fn


TRANSLATIONS["sum.dim_IntList"] = TRANSLATIONS["sum"] = _reduce("ReduceSum")
TRANSLATIONS["mean.dim"] = TRANSLATIONS["mean"] = _reduce("ReduceMean")


def _all_any(op_type):
    """all / any of bools: the min / max of the values as int32 (ONNX reduces no bools)."""
    def fn(ctx, node, x, dim=None, keepdim=False):
        ints = ctx.op("Cast", [ctx.tensor(x)], to=TensorProto.INT32)
        inputs = [ints] if dim is None else [ints, ctx.ints([_dim(dim, _rank(x))])]
        red = ctx.op(op_type, inputs, keepdims=int(keepdim))
        ctx.op("Cast", [red], [ctx.out(node)], to=TensorProto.BOOL)
    return fn


TRANSLATIONS["all"] = TRANSLATIONS["all.dim"] = _all_any("ReduceMin")
TRANSLATIONS["any"] = TRANSLATIONS["any.dim"] = _all_any("ReduceMax")


@translates("_softmax", "softmax.int")
def softmax(ctx, node, x, dim, *rest):
    ctx.op("Softmax", [ctx.tensor(x)], [ctx.out(node)], axis=dim)


@translates("_log_softmax", "log_softmax.int")
def log_softmax(ctx, node, x, dim, *rest):
    ctx.op("LogSoftmax", [ctx.tensor(x)], [ctx.out(node)], axis=dim)


# ---- products ------------------------------------------------------------------------
@translates("mm", "bmm", "matmul")
def matmul(ctx, node, a, b):
    ctx.op("MatMul", [ctx.tensor(a), ctx.tensor(b)], [ctx.out(node)])


@translates("linear")
def linear(ctx, node, x, weight, bias=None):
    """x @ weight.T (+ bias): MatMul then Add, for inputs of any rank (Gemm is 2-d)."""
    wt = ctx.op("Transpose", [ctx.tensor(weight)], perm=[1, 0])
    if bias is None:
        ctx.op("MatMul", [ctx.tensor(x), wt], [ctx.out(node)])
    else:
        ctx.op("Add", [ctx.op("MatMul", [ctx.tensor(x), wt]), ctx.tensor(bias)],
               [ctx.out(node)])


@translates("addmm")
def addmm(ctx, node, bias, a, b, beta=1, alpha=1):
    ctx.op("Gemm", [ctx.tensor(a), ctx.tensor(b), ctx.tensor(bias)], [ctx.out(node)],
           alpha=float(alpha), beta=float(beta))


@translates("embedding")
def embedding(ctx, node, weight, indices, *rest):
    ctx.op("Gather", [ctx.tensor(weight), ctx.tensor(indices)], [ctx.out(node)], axis=0)


# ---- shapes --------------------------------------------------------------------------
@translates("view", "_unsafe_view", "reshape")
def reshape(ctx, node, x, size):
    ctx.op("Reshape", [ctx.tensor(x), ctx.ints(size)], [ctx.out(node)])


@translates("flatten.using_ints")
def flatten(ctx, node, x, start=0, end=-1):
    if _dim(end, _rank(x)) != _rank(x) - 1:
        return reshape(ctx, node, x, node.outputs[0].shape)
    ctx.op("Flatten", [ctx.tensor(x)], [ctx.out(node)], axis=_dim(start, _rank(x)))


@translates("transpose.int")
def transpose(ctx, node, x, d0, d1):
    perm = list(range(_rank(x)))
    d0, d1 = _dim(d0, _rank(x)), _dim(d1, _rank(x))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    ctx.op("Transpose", [ctx.tensor(x)], [ctx.out(node)], perm=perm)


@translates("t")
def t(ctx, node, x):
    ctx.op("Transpose", [ctx.tensor(x)], [ctx.out(node)], perm=list(range(_rank(x)))[::-1])


@translates("permute")
def permute(ctx, node, x, dims):
    ctx.op("Transpose", [ctx.tensor(x)], [ctx.out(node)],
           perm=[_dim(d, _rank(x)) for d in dims])


@translates("expand")
def expand(ctx, node, x, size, implicit=False):
    """ONNX's Expand broadcasts, so a -1 (keep this size) can be a 1."""
    ctx.op("Expand", [ctx.tensor(x), ctx.ints([1 if s == -1 else s for s in size])],
           [ctx.out(node)])


@translates("unsqueeze")
def unsqueeze(ctx, node, x, dim):
    ctx.op("Unsqueeze", [ctx.tensor(x), ctx.ints([_dim(dim, _rank(x) + 1)])],
           [ctx.out(node)])


@translates("squeeze.dim")
def squeeze(ctx, node, x, dim):
    if x.shape[_dim(dim, _rank(x))] != 1:       # squeeze of a dim that is not 1: a no-op
        ctx.op("Identity", [ctx.tensor(x)], [ctx.out(node)])
    else:
        ctx.op("Squeeze", [ctx.tensor(x), ctx.ints([_dim(dim, _rank(x))])], [ctx.out(node)])


@translates("slice.Tensor")
def slice_(ctx, node, x, dim=0, start=None, end=None, step=1):
    start = 0 if start is None else start
    end = INT64_MAX if end is None else end
    ctx.op("Slice", [ctx.tensor(x), ctx.ints([start]), ctx.ints([end]),
                     ctx.ints([_dim(dim, _rank(x))]), ctx.ints([step])], [ctx.out(node)])


@translates("select.int")
def select(ctx, node, x, dim, index):
    """x.select(dim, index): Gather with a 0-d index, which drops the gathered axis (a
    negative index counts from the end, as Gather's do)."""
    ctx.op("Gather", [ctx.tensor(x), ctx.constant(np.array(index, dtype=np.int64))],
           [ctx.out(node)], axis=_dim(dim, _rank(x)))


@translates("unbind.int")
def unbind(ctx, node, x, dim=0):
    """x.unbind(dim): select's Gather once per output (unbind records as one op: it has
    a derivative of its own)."""
    axis = _dim(dim, _rank(x))
    for i in range(len(node.outputs)):
        ctx.op("Gather", [ctx.tensor(x), ctx.constant(np.array(i, dtype=np.int64))],
               [ctx.out(node, i)], axis=axis)


@translates("cat")
def cat(ctx, node, tensors, dim=0):
    ctx.op("Concat", [ctx.tensor(v) for v in tensors], [ctx.out(node)],
           axis=_dim(dim, _rank(node.outputs[0])))


@translates("triu", "tril")
def trilu(ctx, node, x, diagonal=0):
    ctx.op("Trilu", [ctx.tensor(x), ctx.constant(np.array(diagonal, dtype=np.int64))],
           [ctx.out(node)], upper=int(node.func.packet == "triu"))


# ---- layers --------------------------------------------------------------------------
@translates("convolution")
def convolution(ctx, node, x, weight, bias, stride, padding, dilation, transposed,
                output_padding, groups):
    inputs = [ctx.tensor(x), ctx.tensor(weight)] + ([ctx.tensor(bias)] if bias is not None
                                                     else [])
    attrs = dict(strides=list(stride), pads=list(padding) * 2, dilations=list(dilation),
                 group=groups, kernel_shape=list(weight.shape[2:]))
    if transposed:
        ctx.op("ConvTranspose", inputs, [ctx.out(node)], output_padding=list(output_padding),
               **attrs)
    else:
        ctx.op("Conv", inputs, [ctx.out(node)], **attrs)


@translates("max_pool2d_with_indices", "max_pool2d")
def max_pool2d(ctx, node, x, kernel, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    """Only the values: a graph that reads the indices is refused (ctx.tensor says so)."""
    two = lambda v: list(v) * 2 if len(v) == 1 else list(v)    # noqa: E731
    ctx.op("MaxPool", [ctx.tensor(x)], [ctx.out(node)], kernel_shape=two(kernel),
           strides=two(stride or kernel), pads=two(padding) * 2, dilations=two(dilation),
           ceil_mode=int(ceil_mode))


@translates("avg_pool2d")
def avg_pool2d(ctx, node, x, kernel, stride=(), padding=(0,), ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    if divisor_override is not None:
        _unsupported(node, "divisor_override")
    two = lambda v: list(v) * 2 if len(v) == 1 else list(v)    # noqa: E731
    ctx.op("AveragePool", [ctx.tensor(x)], [ctx.out(node)], kernel_shape=two(kernel),
           strides=two(stride or kernel), pads=two(padding) * 2, ceil_mode=int(ceil_mode),
           count_include_pad=int(count_include_pad))


@translates("native_batch_norm")
def batch_norm(ctx, node, x, weight, bias, mean, var, training, momentum, eps):
    """Inference batch norm (the running statistics): a model in training mode is
    refused, since ONNX's BatchNormalization would not update them the same way."""
    if training:
        _unsupported(node, "training=True (export the model in eval mode)")
    channels = x.shape[1]
    np_dt = _np_dtype(x.dtype)
    w = ctx.tensor(weight) if weight is not None else ctx.constant(np.ones(channels, np_dt))
    b = ctx.tensor(bias) if bias is not None else ctx.constant(np.zeros(channels, np_dt))
    ctx.op("BatchNormalization", [ctx.tensor(x), w, b, ctx.tensor(mean), ctx.tensor(var)],
           [ctx.out(node)], epsilon=float(eps))


@translates("native_layer_norm")
def layer_norm(ctx, node, x, normalized_shape, weight, bias, eps):
    np_dt = _np_dtype(x.dtype)
    shape = list(normalized_shape)
    w = ctx.tensor(weight) if weight is not None else ctx.constant(np.ones(shape, np_dt))
    inputs = [ctx.tensor(x), w] + ([ctx.tensor(bias)] if bias is not None else [])
    ctx.op("LayerNormalization", inputs, [ctx.out(node)], axis=-len(shape),
           epsilon=float(eps))


@translates("native_dropout")
def dropout(ctx, node, x, p, train, *rest):
    if train:
        _unsupported(node, "train=True (export the model in eval mode)")
    ctx.op("Identity", [ctx.tensor(x)], [ctx.out(node)])


def _unsupported(node, why):
    raise UnsupportedOperatorError(f"onnx.export(): {node.func!r} with {why} has no ONNX "
                                   f"translation", op=node.func.name)


def value_info(name, value):
    """A graph input's / output's ONNX type: dynamic dims by name, others by size."""
    dims = []
    for s in value.shape:
        if isinstance(s, SymInt):
            simple = s.const == 0 and len(s.terms) == 1 and s.terms[0][1] == 1
            dims.append(s.terms[0][2] if simple else None)
        else:
            dims.append(s)
    return helper.make_tensor_value_info(name, onnx_dtype(value.dtype, name), dims)


__all__ = ["TRANSLATIONS", "Context", "translate", "value_info"]
