"""The Python key: ops handed to Python code below autograd (tensor subclasses, modes).

Two things put the `Python` key (5) in a call's key set, below the autograd keys and
above the backends:

- a **tensor subclass** whose class defines `__tensorplay_dispatch__`: its impl adds the
  key (`tensorplay/_subclass.py`), so every op on it, once autograd has recorded the
  graph, calls `cls.__tensorplay_dispatch__(func, types, args, kwargs)`;
- a **dispatch mode** (`with LoggingMode():`, any `TensorPlayDispatchMode`): entering it
  adds the key to this thread's *included* set and pushes the mode on this thread's
  stack, so every op of every tensor calls `mode.__tensorplay_dispatch__(...)`.

One *boxed fallback* serves every op at that key (`Dispatcher.register_fallback`, at the
bottom of this file): it does not know the op's arguments, only that they come as a
tuple. `func` is the op as an object (`tp.ops.mm.default`): calling it dispatches again
from the key set of the arguments it is given. The arguments come in schema order, all
positional (`kwargs` is `{}`), as the dispatcher passes them. A handler unwraps its
subclass tensors before it calls `func`, so the inner call reaches the backends; a mode
is popped off the stack while its handler runs, so its own calls of `func` do not come
back to it (the next mode out, if any, sees them). Both rules are PyTorch's
(`__torch_dispatch__`).

Because the key sits below autograd, the handler sees the ops that compute, never the
composite ops that decompose above autograd (`matmul` on 2-d tensors reaches it as
`mm`), and a mode that is on during `backward()` sees the ops of the backward pass.
"""
from __future__ import annotations

import threading

from tensorplay.dispatch.dispatcher import dispatcher
from tensorplay.dispatch.keys import AUTOGRAD_MASK, DispatchKey
from tensorplay.dispatch.tls import ExcludeKeys, local_keys
from tensorplay.errors import ArgumentError

PYTHON_BIT = 1 << DispatchKey.Python

__all__ = ["OpOverload", "ops", "TensorPlayDispatchMode", "active_modes", "PYTHON_BIT"]


# ---- the op as an object -------------------------------------------------------------
class OpOverload:
    """One overload of an op (`tp.ops.add.Tensor`), the `func` a handler receives.

    `name` is the overload's full name (`add.Tensor`), `packet` the op's (`add`),
    `schema` its `OpSchema`. Calling it dispatches the op on the given arguments, from
    their key sets and this thread's included / excluded keys, as `handle.call` does."""

    __slots__ = ("handle", "name", "packet", "overload", "schema", "aliased_return",
                 "is_view")

    def __init__(self, handle):
        self.handle = handle
        self.name = handle.name
        self.packet, _, overload = handle.name.partition(".")
        self.overload = overload or "default"
        self.schema = handle.schema
        # `add_(...) -> Tensor(a!)`: the result is the mutated argument itself
        returns = self.schema.text.rpartition("->")[2]
        self.aliased_return = "!" in returns and self.schema.num_returns == 1 \
            and bool(self.schema.mutable_positions)
        # `slice(Tensor(a) self, ...) -> Tensor(a)`: the result is a view of the first argument
        self.is_view = "(a" in returns and "!" not in returns

    @property
    def __name__(self):
        return self.name

    def __call__(self, *args, **kwargs):
        if kwargs or len(args) != len(self.schema.arg_names):
            args = self._bind(args, kwargs)
        return self.handle.call(key_set_of(args), *args)

    def _bind(self, args, kwargs):
        """Keyword arguments in their schema positions (every argument must be given:
        the schema's defaults are applied by the front doors, not here)."""
        names = self.schema.arg_names
        if len(args) > len(names):
            raise ArgumentError(f"{self}: takes {len(names)} arguments but {len(args)} were "
                                f"given (the schema is `{self.schema.text}`)", op=self.name)
        out = list(args) + [None] * (len(names) - len(args))
        given = [True] * len(args) + [False] * (len(names) - len(args))
        for key, value in kwargs.items():
            if key not in names:
                raise ArgumentError(f"{self}: unexpected keyword argument '{key}' (the "
                                    f"schema is `{self.schema.text}`)", op=self.name, arg=key)
            out[names.index(key)] = value
            given[names.index(key)] = True
        for name, ok in zip(names, given):
            if not ok:
                raise ArgumentError(f"{self}: argument '{name}' is missing (the schema is "
                                    f"`{self.schema.text}`; pass every argument)",
                                    op=self.name, arg=name)
        return tuple(out)

    def __repr__(self):
        return f"tp.ops.{self.packet.replace('::', '.')}.{self.overload}"


def key_set_of(args):
    """The union of the key sets of the tensors in `args` (tensor lists included)."""
    ks = 0
    for a in args:
        impl = getattr(a, "_impl", None)
        if impl is not None:
            ks |= impl.keys
        elif isinstance(a, (list, tuple)):
            for b in a:
                inner = getattr(b, "_impl", None)
                if inner is not None:
                    ks |= inner.keys
    return ks


_overloads = {}      # op name -> its OpOverload: one object per op, so `func is ...` works


def overload_of(handle):
    func = _overloads.get(handle.name)
    if func is None or func.handle is not handle:
        func = _overloads[handle.name] = OpOverload(handle)
    return func


class OpPacket:
    """`tp.ops.add`: the overloads of one op, as attributes (`.Tensor`, `.Scalar`;
    `.default` for an op without an overload name)."""

    def __init__(self, name):
        self.__name__ = name

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        full = self.__name__ if overload == "default" else f"{self.__name__}.{overload}"
        if full not in dispatcher.ops:
            have = sorted(n.partition(".")[2] or "default" for n in dispatcher.ops
                          if n.partition(".")[0] == self.__name__)
            raise AttributeError(f"tp.ops.{self.__name__} has no overload '{overload}' "
                                 f"(it has: {', '.join(have) or 'none'})")
        return overload_of(dispatcher.ops[full])

    def __repr__(self):
        return f"tp.ops.{self.__name__}"


class OpsNamespace:
    """`tp.ops.<op>.<overload>`: every op of the dispatcher as an `OpOverload`;
    `tp.ops.<namespace>.<op>`: a custom op (tensorplay/library/custom_ops.py), which fills
    `namespaces` when it defines one."""

    def __init__(self):
        self.namespaces = {}     # "mylib" -> its custom ops (tp.ops.mylib)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        space = self.namespaces.get(name)
        if space is not None:
            return space
        if not any(n.partition(".")[0] == name for n in dispatcher.ops):
            raise AttributeError(f"tp.ops has no op named '{name}'")
        return OpPacket(name)

    def __repr__(self):
        return "tp.ops"


ops = OpsNamespace()


# ---- modes ---------------------------------------------------------------------------
class _ModeStack(threading.local):
    def __init__(self):
        self.modes = []


_stack = _ModeStack()


def active_modes():
    """This thread's dispatch modes, innermost last."""
    return tuple(_stack.modes)


def _push(mode):
    _stack.modes.append(mode)
    local_keys.included = local_keys.included | PYTHON_BIT


def _pop():
    mode = _stack.modes.pop()
    if not _stack.modes:
        local_keys.included = local_keys.included & ~PYTHON_BIT
    return mode


class TensorPlayDispatchMode:
    """Base class of a dispatch mode: `with MyMode():` routes every op of this thread
    (below autograd) to `MyMode.__tensorplay_dispatch__(self, func, types, args, kwargs)`,
    which returns the op's result, usually after calling `func(*args, **kwargs)`."""

    def __tensorplay_dispatch__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError(f"{type(self).__name__} must define "
                                  f"__tensorplay_dispatch__(self, func, types, args, kwargs)")

    def __enter__(self):
        _push(self)
        return self

    def __exit__(self, exc_type, exc, traceback):
        if not _stack.modes or _stack.modes[-1] is not self:
            raise RuntimeError(f"{type(self).__name__}: modes must exit in the reverse "
                               f"order of entering (the innermost is "
                               f"{type(_stack.modes[-1]).__name__ if _stack.modes else 'none'})")
        _pop()


class _ModePopped:
    """The innermost mode off the stack while its own handler runs."""

    __slots__ = ("mode",)

    def __enter__(self):
        self.mode = _pop()
        return self.mode

    def __exit__(self, exc_type, exc, traceback):
        _push(self.mode)


# ---- the fallback --------------------------------------------------------------------
def subclass_types(args):
    """The distinct classes of the arguments that carry the Python key, subclasses
    before the classes they derive from (the order PyTorch tries them in)."""
    types = []
    for a in args:
        items = a if isinstance(a, (list, tuple)) else (a,)
        for b in items:
            impl = getattr(b, "_impl", None)
            if impl is not None and impl.key_set() & PYTHON_BIT and type(b) not in types:
                types.append(type(b))
    ordered = []
    for t in types:
        at = next((i for i, u in enumerate(ordered) if issubclass(t, u)), len(ordered))
        ordered.insert(at, t)
    return tuple(ordered)


def dispatch_to_python(func, args):
    """Run `func` on `args` through the innermost mode, or else the first subclass whose
    `__tensorplay_dispatch__` does not return NotImplemented."""
    types = subclass_types(args)
    # Below autograd, as the autograd wrapper's own redispatch is (it excludes the
    # autograd keys only when it records): what the handler runs records nothing.
    with ExcludeKeys(AUTOGRAD_MASK):
        if _stack.modes:
            with _ModePopped() as mode:
                out = mode.__tensorplay_dispatch__(func, types, args, {})
            if out is not NotImplemented:
                return _finish(func, args, out)
        for cls in types:
            out = cls.__tensorplay_dispatch__(func, types, args, {})
            if out is not NotImplemented:
                return _finish(func, args, out)
    names = ", ".join(t.__name__ for t in types) or "no tensor subclass and no mode"
    raise TypeError(f"{func.name}: no __tensorplay_dispatch__ handled the call (tried: "
                    f"{names})")


def _finish(func, args, out):
    """What the caller gets: an in-place op returns the tensor it was given (not the
    handler's rewrapped copy), and its version moves, as a backend kernel's writes do. The
    result of a view op is a view of its subclass input, as a backend's view kernel makes
    it (same base, same version counter), so that autograd sees an in-place change
    through it (PyTorch's ADInplaceOrView key does this above its Python key)."""
    if func.is_view and args[0]._impl.key_set() & PYTHON_BIT:
        src = args[0]._impl
        for t in out if isinstance(out, (list, tuple)) else (out,):
            impl = getattr(t, "_impl", None)
            if impl is not None and impl is not src:
                impl.version = src.version
                impl.base = src.base if src.base is not None else src
    for i in func.schema.mutable_positions:
        a = args[i]
        if a is not None and a._impl.key_set() & PYTHON_BIT and not a._impl.inference:
            a._impl.version.value += 1
    if func.aliased_return:
        return args[func.schema.mutable_positions[0]]
    return out


def _python_kernel(handle):
    func = overload_of(handle)

    def python_key(ks, *args):
        return dispatch_to_python(func, args)

    python_key.fallback_name = "Python fallback (__tensorplay_dispatch__ of a mode or subclass)"
    python_key.func = func
    return python_key


dispatcher.register_fallback(DispatchKey.Python, _python_kernel)
