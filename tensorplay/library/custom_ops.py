"""`tp.library.custom_op`: a new op, first-class, without forking the framework.

    rmsnorm = tp.library.custom_op(
        "mylib::rmsnorm(Tensor x, Tensor w, float eps=1e-6) -> Tensor",
        derivatives={"x": "...", "w": "..."})          # derivatives.yaml's language

    @rmsnorm.register_kernel("cpu")
    def _(x, w, eps): ...                              # the schema's argument names

    @rmsnorm.register_fake
    def _(x, w, eps): return tp.empty_like(x)          # shapes and dtypes only

    y = tp.ops.mylib.rmsnorm(x, w)                     # or rmsnorm(x, w)

or PyTorch's decorator form, the schema inferred from the type hints:

    @tp.library.custom_op("mylib::scale", mutates_args=())
    def scale(x: Tensor, a: float) -> Tensor: ...      # the kernel of every device

What each registration puts in the op's dispatch table (tensorplay/dispatch/dispatcher.py),
the same slots ops.yaml's entries fill at build time:

    register_kernel("cpu"/"cuda")  CPU / CUDA    ("default": both)
    register_fake                  Meta          (shapes only: tensors on device "meta")
    derivatives= / register_autograd  Autograd*  (the generated wrapper and node, or an
                                                  autograd.Function around the op)
    register_vmap                  the batching rule read at the Vmap keys
    register_autocast              AutocastCPU / AutocastCUDA

With no derivative, the autograd keys hold PyTorch's answer for a custom op without
register_autograd: the result gets a grad_fn whose backward raises (never a silently
detached result; tensorplay/autograd/not_implemented.py).

Autocast: like PyTorch, a custom op is *not* autocast unless `register_autocast` (or
`autocast=`) says how: inside `tp.autocast(...)` its inputs reach the kernel unchanged,
in whatever dtype they have (the Autocast keys have nothing to do and fall through).
"""
from __future__ import annotations

import ast

from tensorplay import _dtype as dt
from tensorplay.dispatch import trace
from tensorplay.dispatch.dispatcher import below_autograd, dispatcher
from tensorplay.dispatch.keys import DispatchKey, to_autocast_key, to_autograd_key
from tensorplay.dispatch.python_key import key_set_of, ops as ops_namespace
from tensorplay.dispatch.tls import ExcludeKeys
from tensorplay.errors import ArgumentError
from tensorplay.library.schema import infer_schema, op_schema, parse_schema

__all__ = ["custom_op", "CustomOpDef", "define", "impl", "register_kernel", "register_fake",
           "register_autograd", "register_vmap", "register_autocast"]

# the device names register_kernel takes -> the backend keys they fill
DEVICE_KEYS = {"cpu": (DispatchKey.CPU,), "cuda": (DispatchKey.CUDA,),
               "meta": (DispatchKey.Meta,), "default": (DispatchKey.CPU, DispatchKey.CUDA)}
# the backends whose autograd keys a custom op's autograd kernel fills (not Sparse:
# Composite code never runs on a sparse tensor, and a custom op has no sparse kernel)
DENSE_BACKENDS = (DispatchKey.CPU, DispatchKey.CUDA, DispatchKey.Vulkan, DispatchKey.Meta)


class CustomOpNamespace:
    """`tp.ops.mylib`: the custom ops of one namespace, as attributes."""

    def __init__(self, name):
        self.__name__ = name
        self.ops = {}

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self.ops[name]
        except KeyError:
            raise AttributeError(f"tp.ops.{self.__name__} has no op '{name}' (it has: "
                                 f"{', '.join(sorted(self.ops)) or 'none'})") from None

    def __repr__(self):
        return f"tp.ops.{self.__name__}"


def _literal(text):
    """A schema default as a Python value ("1e-06" -> 1e-06, "[1, 2]" -> (1, 2))."""
    if text is None:
        return None
    return ast.literal_eval(text)


class CustomOpDef:
    """A custom op: callable (`op(x, w)`, also as `tp.ops.mylib.f` and `.default`), with
    the `register_*` methods that fill its dispatch table."""

    def __init__(self, namespace, schema, *, derivatives=None, autocast=None, tags=()):
        self.namespace = namespace
        self.schema = schema                       # the codegen's FunctionSchema
        self.name = schema.name.base
        self.qualname = f"{namespace}::{schema.name}"
        if schema.name.overload:
            raise ArgumentError(f"custom_op(): '{self.qualname}': a custom op has one "
                                f"overload, 'default'; give it a name of its own instead",
                                op="custom_op", arg="name")
        if namespace not in ops_namespace.namespaces and any(
                n.partition(".")[0] == namespace for n in dispatcher.ops):
            raise ArgumentError(f"custom_op(): the namespace '{namespace}' is the name of an "
                                f"op (tp.ops.{namespace} names it); choose another",
                                op="custom_op", arg="name")
        if self.qualname in dispatcher.ops:
            raise ArgumentError(f"custom_op(): an op named '{self.qualname}' is already "
                                f"defined (as in PyTorch, an op is defined once)",
                                op="custom_op", arg="name")
        self.tags = tuple(tags)
        compiled = None
        if derivatives is not None:     # first: a formula that does not compile defines nothing
            compiled = self._compile(derivatives)
        self.handle = dispatcher.define(op_schema(namespace, schema))
        self._defaults = [(a.name, a.default is not None, _literal(a.python_default()))
                          for a in schema.arguments]
        self._kwarg_only = {a.name for a in schema.arguments if a.kwarg_only}
        self._backward_source = None
        self.node_class = None                     # the backward node its formulas made
        self.kernels = {}                          # device -> the function registered
        self._register_no_autograd()
        if compiled is not None:
            self._register_derivatives(*compiled)
        for device_type, cast_inputs in (autocast or {}).items():
            self.register_autocast(device_type, cast_inputs)
        space = ops_namespace.namespaces.get(namespace)
        if space is None:
            space = ops_namespace.namespaces[namespace] = CustomOpNamespace(namespace)
        space.ops[self.name] = self

    # ---- calling --------------------------------------------------------------------
    @property
    def default(self):
        """`tp.ops.mylib.f.default`: the op's one overload (this object)."""
        return self

    def __call__(self, *args, **kwargs):
        """The op's front door: the arguments bound to the schema (its defaults filled
        in), then the dispatcher, as a generated front door does (functional.py)."""
        names = [n for n, _, _ in self._defaults]
        positional = [n for n in names if n not in self._kwarg_only]
        if len(args) > len(positional):
            raise ArgumentError(f"{self.qualname}() takes {len(positional)} positional "
                                f"arguments but {len(args)} were given", op=self.qualname)
        bound = dict(zip(positional, args))
        for key, value in kwargs.items():
            if key not in names:
                raise ArgumentError(f"{self.qualname}() got an unexpected keyword argument "
                                    f"'{key}'", op=self.qualname, arg=key)
            if key in bound:
                raise ArgumentError(f"{self.qualname}() got multiple values for argument "
                                    f"'{key}'", op=self.qualname, arg=key)
            bound[key] = value
        values = []
        for name, has_default, default in self._defaults:
            if name in bound:
                values.append(bound[name])
            elif has_default:
                values.append(default)
            else:
                raise ArgumentError(f"{self.qualname}() missing required argument '{name}' "
                                    f"(schema: {self.handle.schema.text})", op=self.qualname,
                                    arg=name)
        self._check_tensors(values)
        return self.handle.call(key_set_of(values), *values)

    def _check_tensors(self, values):
        for a, v in zip(self.schema.arguments, values):
            if not a.type.is_tensor or (v is None and a.type.optional):
                continue
            items = v if a.type.is_list and isinstance(v, (list, tuple)) else [v]
            if any(getattr(t, "_impl", None) is None for t in items):
                expected = "a list of Tensors" if a.type.is_list else "a Tensor"
                raise ArgumentError(f"{self.qualname}(): argument '{a.name}' must be "
                                    f"{expected}, not {type(v).__name__}", op=self.qualname,
                                    arg=a.name)

    def __repr__(self):
        return f"<custom op {self.handle.schema.text}>"

    # ---- kernels ----------------------------------------------------------------------
    def register_kernel(self, device_types, fn=None):
        """Register `fn` as the op's kernel for `device_types` ("cpu", "cuda", "meta",
        "default" = every device, or a key's name, "CPU"; a tuple of them), replacing the
        one there. Usable as a decorator. The kernel takes the schema's arguments, by
        their names (the dispatcher checks them)."""
        if fn is None:
            return lambda f: self.register_kernel(device_types, f) or f
        if device_types is None:
            device_types = "default"
        if isinstance(device_types, str):
            device_types = (device_types,)
        for device in device_types:
            if isinstance(device, DispatchKey):
                device = device.name
            device = {"compositeexplicitautograd": "default"}.get(str(device).lower(),
                                                                  str(device).lower())
            keys = DEVICE_KEYS.get(device)
            if keys is None:
                raise ArgumentError(f"{self.qualname}.register_kernel(): unknown device type "
                                    f"{device!r} (one of {', '.join(DEVICE_KEYS)})",
                                    op=self.qualname, arg="device_types")
            for key in keys:
                self.handle.register(key, fn, name=_name_of(fn), replace=True)
            self.kernels[device] = fn
        return fn

    def register_fake(self, fn=None):
        """The op's fake (meta) kernel: given tensors on device "meta" (shapes, dtypes,
        no data), it returns results of the right shapes and dtypes (`tp.empty_like(x)`).
        It is what runs for meta tensors, and what opcheck checks the real kernels
        against."""
        if fn is None:
            return lambda f: self.register_fake(f) or f
        self.handle.register(DispatchKey.Meta, fn, name=_name_of(fn), replace=True)
        return fn

    # ---- autograd ---------------------------------------------------------------------
    def _register_autograd_kernel(self, kernel, name):
        for backend in DENSE_BACKENDS:
            self.handle.register(to_autograd_key(backend), kernel, name=name,
                                 check_signature=False)

    def _register_no_autograd(self):
        """PyTorch's custom op without register_autograd: the result has a grad_fn, and
        backward through it raises."""
        from tensorplay.autograd.not_implemented import not_implemented_kernel
        message = (f"Trying to backward through {self.qualname} but no autograd formula "
                   f"was registered. Please use register_autograd to add one.")
        self._register_autograd_kernel(not_implemented_kernel(self.handle, message),
                                       "tensorplay.autograd.not_implemented (no derivative "
                                       "registered: backward raises)")

    def set_derivatives(self, derivatives):
        """Compile `derivatives` ({input: formula in derivatives.yaml's language}) into a
        backward node and its autograd wrapper (derivatives.py), and register the wrapper
        at the autograd keys, as the generated ones are."""
        self._register_derivatives(*self._compile(derivatives))

    def _compile(self, derivatives):
        from tensorplay.library.derivatives import compile_derivatives
        return compile_derivatives(self.qualname, self.schema, dict(derivatives))

    def _register_derivatives(self, wrapper, node, source, handles):
        setattr(handles, self.schema.name.unambiguous_name, self.handle)
        self.node_class, self._backward_source = node, source
        what = node.__name__ if node is not None else "no differentiable output"
        self._register_autograd_kernel(wrapper, f"generated from derivatives: {what} "
                                                f"(op.backward_source())")

    def backward_source(self):
        """The Python source the formulas were compiled into (node class and autograd
        wrapper), or None when the op has no formulas."""
        return self._backward_source

    def register_autograd(self, backward, /, *, setup_context=None):
        """PyTorch's alternative to formulas: `setup_context(ctx, inputs, output)` saves
        what `backward(ctx, *grads)` needs; backward returns one gradient per input
        (None for the non-tensor ones). The op runs below autograd inside an
        autograd.Function (tensorplay/autograd/function.py), whose node is the result's
        grad_fn."""
        if self.handle.schema.mutable_positions:
            raise ArgumentError(f"{self.qualname}.register_autograd(): not supported for an "
                                f"op that mutates its inputs", op=self.qualname)
        kernel = _function_kernel(self, backward, setup_context)
        self._register_autograd_kernel(kernel, f"register_autograd({_name_of(backward)})")

    # ---- vmap and autocast -----------------------------------------------------------
    def register_vmap(self, fn=None):
        """The op's batching rule, PyTorch's signature: `fn(info, in_dims, *args) ->
        (output, out_dims)`, `in_dims` one per argument (the batch dim of a tensor, None
        for an unbatched tensor or a non-tensor), `info.batch_size` and
        `info.randomness`. Without one, vmap runs the op once per example."""
        if fn is None:
            return lambda f: self.register_vmap(f) or f
        from tensorplay.func.batching_rules import RULES
        RULES[self.handle.name] = _vmap_rule(fn)
        return fn

    def register_autocast(self, device_type, cast_inputs):
        """Inside `tp.autocast(device_type)`, cast the op's floating tensor inputs on that
        device to `cast_inputs` and run it with autocast off, as PyTorch's
        `torch.library.register_autocast`."""
        device_type = str(device_type)
        if device_type not in ("cpu", "cuda"):
            raise ArgumentError(f"{self.qualname}.register_autocast(): device_type must be "
                                f"'cpu' or 'cuda', got {device_type!r}", op=self.qualname,
                                arg="device_type")
        if not isinstance(cast_inputs, dt.dtype) or not cast_inputs.is_floating_point:
            raise ArgumentError(f"{self.qualname}.register_autocast(): cast_inputs must be a "
                                f"floating dtype, got {cast_inputs!r}", op=self.qualname,
                                arg="cast_inputs")
        backend = DispatchKey.CPU if device_type == "cpu" else DispatchKey.CUDA
        key = to_autocast_key(backend)
        self.handle.register(key, _autocast_kernel(self.handle, key, device_type, cast_inputs),
                             name=f"register_autocast({device_type!r}, {cast_inputs})",
                             check_signature=False)


def _name_of(fn):
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', fn)}"


def _function_kernel(op, backward, setup_context):
    """The autograd kernel of register_autograd: an autograd.Function whose forward runs
    the op below autograd. Function.apply sees tensors only as top-level arguments, so a
    Tensor[] argument travels as its elements (PyTorch's `supports_tensorlist`), and the
    key set and the lists' lengths travel last (PyTorch's `Metadata`)."""
    from tensorplay.autograd.function import Function
    from tensorplay.autograd.recording import any_requires_grad
    handle = op.handle
    lists = set(handle.schema.list_positions)

    def forward(ctx, *flat):
        ks, lengths = flat[-1]
        inputs = _unflatten(flat[:-1], lengths)
        ctx.list_lengths = lengths
        output = below_autograd(handle, ks, *inputs)
        if setup_context is not None:
            setup_context(ctx=ctx, inputs=tuple(inputs), output=output)
        return output

    def run_backward(ctx, *grads):
        lengths = ctx.list_lengths
        needs = ctx.needs_input_grad
        # the user's backward sees one flag per input of the op (any element, for a list)
        ctx.needs_input_grad = tuple(n if length is None else any(n) for n, length in
                                     zip(_unflatten(needs[:-1], lengths), lengths))
        try:
            result = backward(ctx, *grads)
        finally:
            ctx.needs_input_grad = needs
        if not isinstance(result, tuple):
            result = (result,)
        flat = []
        for r, length in zip(result, lengths):
            if length is None:
                flat.append(r)
            else:
                flat.extend(r if r is not None else (None,) * length)
        return (*flat, None)

    generated = type(f"GeneratedBackwardFor_{op.namespace}_{op.name}_default", (Function,),
                     {"forward": staticmethod(forward), "backward": staticmethod(run_backward),
                      "__module__": getattr(backward, "__module__", __name__)})
    tensor_positions = handle.schema.tensor_positions

    def autograd_function(ks, *args):
        if not any(any_requires_grad(args[i]) if i in lists and args[i] is not None else
                   getattr(args[i], "_impl", None) is not None and args[i]._impl.requires_grad
                   for i in tensor_positions):
            return below_autograd(handle, ks, *args)
        flat, lengths = [], []
        for i, a in enumerate(args):
            if i in lists and a is not None:
                flat.extend(a)
                lengths.append(len(a))
            else:
                flat.append(a)
                lengths.append(None)
        return generated.apply(*flat, (ks, tuple(lengths)))

    autograd_function.records_only = True
    return autograd_function


def _unflatten(flat, lengths):
    """The op's arguments from the flat ones: each Tensor[] argument's elements in a list."""
    args, at = [], 0
    for length in lengths:
        if length is None:
            args.append(flat[at])
            at += 1
        else:
            args.append(list(flat[at:at + length]))
            at += length
    return args


class VmapInfo:
    """What a batching rule learns of the vmap it runs in (PyTorch's VmapInfo)."""

    def __init__(self, batch_size, randomness):
        self.batch_size = batch_size
        self.randomness = randomness

    def __repr__(self):
        return f"VmapInfo(batch_size={self.batch_size}, randomness={self.randomness!r})"


def _vmap_rule(fn):
    """A batching rule of tensorplay/func/batching_rules (`rule(op, phys, bdims) ->
    (out, out_bdims)`) that calls `fn` the PyTorch way."""
    from tensorplay.func.vmap_levels import _levels

    def custom_vmap_rule(op, phys, bdims):
        size = next(t._impl.sizes[d] for t, d in zip(phys, bdims)
                    if d is not None and not isinstance(d, list))
        randomness = _levels.stack[-1].randomness if _levels.stack else "error"
        return fn(VmapInfo(size, randomness), tuple(bdims), *phys)

    # (explain() names a rule by its module and name: the user's function's)
    custom_vmap_rule.__module__ = getattr(fn, "__module__", "?")
    custom_vmap_rule.__qualname__ = custom_vmap_rule.__name__ = \
        getattr(fn, "__qualname__", "custom_vmap_rule")
    return custom_vmap_rule


def _autocast_kernel(handle, key, device_type, cast_inputs):
    bit = 1 << key
    positions = handle.schema.tensor_positions
    names = handle.schema.arg_names

    def cast(value, arg):
        impl = getattr(value, "_impl", None)
        if impl is None or not impl.dtype.is_floating_point or impl.dtype is cast_inputs \
                or impl.device.type != device_type:
            return value
        if trace.state.active:
            trace.hop("cast", f"{arg}: {impl.dtype.name} -> {cast_inputs.name}")
        return value.to(cast_inputs)

    def custom_autocast(ks, *args):
        with ExcludeKeys(bit):
            args = list(args)
            for i in positions:
                a = args[i]
                if isinstance(a, (list, tuple)):
                    args[i] = type(a)(cast(t, f"{names[i]}[{j}]") for j, t in enumerate(a))
                else:
                    args[i] = cast(a, names[i])
            return handle.redispatch(ks & ~bit, *args)

    return custom_autocast


# ---- the entry points -----------------------------------------------------------------
def custom_op(name, fn=None, /, *, mutates_args=None, derivatives=None, autocast=None,
              tags=(), device_types=None, schema=None):
    """Define a custom op.

    From a schema string (TensorPlay's form, derivatives.yaml formulas optional):

        op = custom_op("mylib::f(Tensor x, float a=2.0) -> Tensor",
                       derivatives={"x": "grad * a"})

    As PyTorch's decorator, the schema inferred from the type hints (or given as
    `schema="(Tensor x) -> Tensor"`), the function the kernel of `device_types`
    (every device by default):

        @custom_op("mylib::g", mutates_args=())
        def g(x: Tensor, a: float) -> Tensor: ...
    """
    if "(" in name:
        if fn is not None or mutates_args is not None or schema is not None:
            raise ArgumentError("custom_op(): a full schema string takes no function, "
                                "mutates_args or schema (they are in the string)",
                                op="custom_op", arg="name")
        namespace, parsed = parse_schema(name)
        return CustomOpDef(namespace, parsed, derivatives=derivatives, autocast=autocast,
                           tags=tags)

    def define(func):
        if mutates_args is None:
            raise ArgumentError("custom_op(): the decorator form needs mutates_args (the "
                                "names of the arguments the function writes; () if none)",
                                op="custom_op", arg="mutates_args")
        text = name + (schema if schema is not None else
                       infer_schema(func, mutates_args=mutates_args))
        namespace, parsed = parse_schema(text)
        op = CustomOpDef(namespace, parsed, derivatives=derivatives, autocast=autocast,
                         tags=tags)
        op.register_kernel(device_types or "default", func)
        op.__doc__ = func.__doc__
        op.__wrapped__ = func
        return op

    return define if fn is None else define(fn)


def define(qualname, schema, *, lib=None, tags=()):
    """PyTorch's low-level form: `define("mylib::f", "(Tensor x) -> Tensor")` defines the
    op (no kernel yet: `impl` or `register_kernel` adds them). `lib` is accepted for
    PyTorch's signature; the op lives in the dispatcher, not in a Library block."""
    namespace, parsed = parse_schema(qualname + schema)
    return CustomOpDef(namespace, parsed, tags=tags)


def impl(qualname, types, func=None):
    """`impl("mylib::f", "cpu", fn)` (or as a decorator): `register_kernel` by name."""
    return _op(qualname).register_kernel(types, func)


def _op(op):
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, str):
        namespace, _, name = op.partition("::")
        space = ops_namespace.namespaces.get(namespace)
        if space is not None and name in space.ops:
            return space.ops[name]
    raise ArgumentError(f"expected a custom op (or its 'namespace::name'), got {op!r}",
                        op="tp.library", arg="op")


def register_kernel(op, device_types, fn=None):
    """`tp.library.register_kernel("mylib::f", "cpu", fn)`: as `op.register_kernel`."""
    return _op(op).register_kernel(device_types, fn)


def register_fake(op, fn=None):
    return _op(op).register_fake(fn)


def register_autograd(op, backward, /, *, setup_context=None):
    return _op(op).register_autograd(backward, setup_context=setup_context)


def register_vmap(op, fn=None):
    return _op(op).register_vmap(fn)


def register_autocast(op, device_type, cast_inputs):
    return _op(op).register_autocast(device_type, cast_inputs)

