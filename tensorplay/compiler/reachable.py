"""The state a compiled function reaches: the tensors it may read without being given
them (a module's parameters and buffers, a tensor in a closure or a global), and the
modules whose `training` flag changes what it computes.

The capture (tracing.py) meets such a tensor as an op argument it has not seen. If it is
in this map, it is *state*: the graph takes it as an extra input, and each call passes
the live tensor, so an optimizer step or a running-statistics update is seen by the next
call. A tensor that is in no map was made during the call (`tp.zeros(3)`, a Python
number as a 0-dim tensor): a constant of the graph.

The walk starts from the function's roots: a bound method's `self`, the cells of its
closure, the globals its code names (and those of functions it reaches, one level of
nesting deeper each time). It goes into modules (parameters, buffers, submodules,
attributes), lists, tuples, dicts and the attributes of plain objects (an optimizer's
`state`), to a bounded depth. A tensor reached only through another module's globals is
missed: a helper in another file that reads its own global tensor sees it frozen.

Each tensor comes with its *slot*, (container, key), so that a guard can check cheaply
that the slot still holds the same tensor (`model.fc.weight = nn.Parameter(...)`
recompiles). The same walk, run again after the capture, tells whether the function
stored a tensor somewhere (`self.h = h`) or changed a number it reaches
(`self.calls += 1`): side effects a replay would not repeat. The numbers, flags and
strings the walk finds in dicts and cells (a module's attributes, a global flag the
code names) are guarded by value: a change recompiles.
"""
from __future__ import annotations

import functools
import types

from tensorplay._tensor import Tensor
from tensorplay.nn.modules.module import Module

MAX_DEPTH = 6           # how deep the walk goes from a root
MAX_ITEMS = 20000       # and how much it looks at in all


class ReachableState:
    """`tensors`: id(impl) -> (tensor, container, key); `modules`: the modules found."""

    def __init__(self, roots=()):
        self.roots = roots          # [(object, container, key)] the walk starts from
        self.tensors = {}
        self.modules = []
        self.module_paths = []   # where each module was found
        self.slots = {}          # (id(container), key) -> id(the tensor's impl) there
        self.paths = {}          # id(impl) -> where the walk found it ("self.fc1.weight")
        # the Python numbers, flags and strings found in a dict or a cell (a module's
        # `self.scale`, a global flag): [(container, key, value, path)], guarded by value
        self.values = []
        self._seen = set()
        self._budget = MAX_ITEMS

    def signature(self):
        """What a side effect would change, walked afresh from the roots: which tensor
        each slot holds, and each tensor's `.grad` (a backward inside the function
        writes it)."""
        now = _walked(self.roots)
        grads = {k: id(t._impl.grad) for k, (t, _, _) in now.tensors.items()}
        values = {(id(c), k): (type(v), v) for c, k, v, _ in now.values}
        return now.slots, grads, values


def reachable_state(fn, arguments=()):
    """The state `fn` reaches, and the state reachable from its non-tensor `arguments`
    (a module passed in, `self` of a compiled method)."""
    return _walked(_roots(fn) + [(arguments, None, None, "args")])


def _walked(roots):
    state = ReachableState(roots)
    for root, container, key, path in roots:
        _walk(state, root, container, key, 0, path)
    return state


def _roots(fn):
    out = []
    seen_fns = set()

    def add_function(f, depth):
        if id(f) in seen_fns or depth > 2:
            return
        seen_fns.add(id(f))
        if isinstance(f, types.MethodType):
            out.append((f.__self__, None, None, "self"))
            f = f.__func__
        if isinstance(f, Module):
            out.append((f, None, None, "self"))
            add_function(type(f).forward, depth + 1)    # the globals forward names
            return
        if isinstance(f, functools.partial):
            out.append((f.args, None, None, "partial.args"))
            out.append((f.keywords, None, None, "partial.keywords"))
            add_function(f.func, depth + 1)
            return
        code = getattr(f, "__code__", None)
        if code is None:
            call = getattr(type(f), "__call__", None)
            if call is not None and not isinstance(f, type):
                out.append((f, None, None, "self"))
                add_function(call, depth + 1)
            return
        for name, cell in zip(code.co_freevars, f.__closure__ or ()):
            try:
                value = cell.cell_contents
            except ValueError:        # an empty cell (a name assigned later)
                continue
            out.append((value, cell, "cell_contents", name))
            if callable(value) and not isinstance(value, type):
                add_function(value, depth + 1)
        glob = getattr(f, "__globals__", {})
        for name in _names(code):
            if name in glob:
                value = glob[name]
                out.append((value, glob, name, name))
                if isinstance(value, (types.FunctionType, types.MethodType)):
                    add_function(value, depth + 1)

    add_function(fn, 0)
    return out


def _names(code):
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):   # a lambda or a nested function
            names |= _names(const)
    return names


VALUES = (int, float, bool, str)     # guarded by value where the walk finds them
_SKIPPED = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType,
            str, bytes, int, float, complex, bool, type(None))


def _walk(state, obj, container, key, depth, path):
    if state._budget <= 0 or depth > MAX_DEPTH:
        return
    state._budget -= 1
    if isinstance(obj, Tensor):
        impl = obj._impl
        if container is not None:
            state.slots[(id(container), key)] = id(impl)
        if id(impl) not in state.tensors:
            state.tensors[id(impl)] = (obj, container, key)
            state.paths[id(impl)] = path
        return
    if type(obj) in VALUES:
        if isinstance(container, dict) or type(container) is types.CellType:
            state.values.append((container, key, obj, path))
        return
    if isinstance(obj, _SKIPPED) or id(obj) in state._seen:
        return
    state._seen.add(id(obj))
    if isinstance(obj, Module):
        state.modules.append(obj)
        state.module_paths.append(path)
        for name, p in obj._parameters.items():
            if p is not None:
                _walk(state, p, obj._parameters, name, depth + 1, f"{path}.{name}")
        for name, b in obj._buffers.items():
            if b is not None:
                _walk(state, b, obj._buffers, name, depth + 1, f"{path}.{name}")
        for name, m in obj._modules.items():
            if m is not None:
                _walk(state, m, obj._modules, name, depth + 1, f"{path}.{name}")
        items = vars(obj)
        for name, value in items.items():
            if not name.startswith("_"):
                _walk(state, value, items, name, depth + 1, f"{path}.{name}")
        return
    if isinstance(obj, dict):
        for k, v in list(obj.items()):
            _walk(state, v, obj, k, depth + 1, f"{path}[{k!r}]")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _walk(state, v, obj, i, depth + 1, f"{path}[{i}]")
    elif _is_plain_object(obj):
        items = vars(obj)
        for name, value in items.items():
            _walk(state, value, items, name, depth + 1, f"{path}.{name}")


def _is_plain_object(obj):
    """An instance of a user class (an optimizer, a small config object) with attributes."""
    d = getattr(obj, "__dict__", None)
    return isinstance(d, dict) and not isinstance(obj, types.MethodType)


def slot_holds(container, key, tensor):
    """Does the slot (container, key) still hold `tensor`? (A guard, run on every call.)"""
    if type(container) is types.CellType:
        return container.cell_contents is tensor
    try:
        return container[key] is tensor
    except (KeyError, IndexError):
        return False
