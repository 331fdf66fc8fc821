"""`Node`: one step of the backward graph, and `AccumulateGrad`, the node of a leaf.

The forward pass builds the graph as it runs: every differentiable op makes a node
(`MulBackward0`, generated from derivatives.yaml) whose `next_functions` point at the
nodes that produced its inputs. `next_functions[i]` is an *edge* `(node, input_nr)`:
the gradient for input i is added to input `input_nr` of `node` (`input_nr` is the
output index of that node in the forward pass). A leaf that requires grad ends in an
`AccumulateGrad` node that adds the gradient into `leaf.grad`.

    x (leaf) --\\
                MulBackward0 --> SumBackward0 --> (loss)
    w (leaf) --/
    next_functions of MulBackward0: ((AccumulateGrad(x), 0), (AccumulateGrad(w), 0))

A node also keeps, per forward output, `(sizes, dtype, device)`: the engine uses it
to make zeros for an output that got no gradient and to check the gradients that
flow into it.
"""
from __future__ import annotations

import itertools
import sys
import threading
import weakref

import numpy as np

from tensorplay import _memory_format as mf
from tensorplay import _tensor_factory as factory
from tensorplay._device import CPU
from tensorplay._impl import TensorImpl, contiguous_strides
from tensorplay._layout import strided
from tensorplay._memory_format import is_channels_last
from tensorplay.autograd.anomaly_mode import anomaly_state, forward_stack
from tensorplay.autograd.grad_mode import grad_state

__all__ = ["Node", "AccumulateGrad", "RemovableHandle", "NO_EDGE", "grad_accumulator",
           "impl_edge", "input_edge", "gradient_edge", "collect_next_edges"]

# Nodes created later run earlier when both are ready (as in PyTorch): a
# deterministic order, and one that frees the most recent activations first.
_sequence = itertools.count()

# Backward passes on several threads may reach one leaf at once (a model shared by
# threads): reading .grad and writing the sum back is one critical section, as PyTorch's
# AccumulateGrad locks it. Without it two threads both read the old .grad and one of the
# two gradients is lost.
_accumulate_lock = threading.Lock()


class _ExecState(threading.local):
    """Set by the engine while it runs a pass restricted to some inputs
    (`grad(y, [x])`): the nodes worth computing a gradient for. None = all."""

    def __init__(self):
        self.needed = None


exec_state = _ExecState()

# How many restricted passes are running now, on all threads. While none is, every
# thread's `exec_state.needed` is None, and `needs_input_grad` (called for each input of
# each node) answers without reading the thread-local, which costs several times a
# global's read. The engine counts a pass in before it sets `needed` and out after it
# restores it, under a lock: two threads may start or end one at the same time.
restricted_passes = 0
_restricted_lock = threading.Lock()


def count_restricted_pass(delta):
    global restricted_passes
    with _restricted_lock:
        restricted_passes += delta


class RemovableHandle:
    """What `register_hook` returns: `handle.remove()` unregisters the hook."""

    __slots__ = ("hooks", "id")
    _ids = itertools.count()

    def __init__(self, hooks):
        self.hooks = hooks
        self.id = next(RemovableHandle._ids)

    def remove(self):
        self.hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def add_hook(hooks, fn):
    handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    return handle


class Node:
    """Base class of every backward node.

    Subclasses define `apply(grads)`: one gradient per forward output in (None where
    an output got none and has no metadata), one gradient per edge out (None where
    that input needs none). Generated subclasses also name the attributes holding
    SavedVariables in `SAVED` and the forward op in `OP`.
    """

    __slots__ = (
        "_edges",              # next_functions as stored: a leaf may be in it (see there)
        "_output_meta",        # per forward output: (sizes, dtype, device) or None
        "_seq",                # creation order; the engine runs newer nodes first
        "_hooks",              # NodeHooks, or None (most nodes: nothing hooked)
        "_anomaly_trace",      # forward stack, recorded only in anomaly mode
        "__weakref__",
    )
    SAVED = ()
    OP = None
    # Engine policies a subclass may change (custom Functions do, like PyTorch's):
    materialize_grads = True         # zeros for outputs that got no gradient
    materialize_outputs = None       # ...for these outputs only (positions; None: all)
    reduce_broadcast_grads = False   # sum a broadcast gradient down instead of raising

    # Whether `release_saved` has anything to free: most nodes save no tensor (add, sum,
    # views, the leaves' AccumulateGrad), and the engine skips the call for them. Set per
    # class below, from SAVED and from an overridden release_saved (custom Functions).
    releases_saved = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.releases_saved = bool(cls.SAVED) or cls.release_saved is not Node.release_saved
        _add_saved_accessors(cls)

    def __init__(self, *inputs):
        """`inputs`: the forward op's differentiable inputs, in order; each gives the edge
        its gradient travels, `input_edge(impl)` (a Tensor[] input one per element, an
        optional input not given an empty one). Its two common cases are written out,
        with no call: an input made by an op, and a plain leaf with no AccumulateGrad
        alive (a model's parameter, the first time a graph reads it)."""
        edges = []
        for t in inputs:
            try:
                impl = t._impl
            except AttributeError:      # an optional input not given (None), or a Tensor[]
                if t is None:
                    edges.append(NO_EDGE)
                else:
                    edges.extend(NO_EDGE if e is None else input_edge(e._impl) for e in t)
                continue
            if not impl.requires_grad:
                edges.append(NO_EDGE)           # no gradient wanted: no edge
                continue
            fn = impl.grad_fn
            if fn is not None:
                edges.append((fn, impl.output_nr))
            elif (type(impl) is TensorImpl and impl.base is None
                    and impl.grad_accumulator is None):
                edges.append((impl, 0))
            else:
                edges.append(input_edge(impl))
        self._edges = tuple(edges)
        self._output_meta = ()
        self._seq = next(_sequence)
        self._hooks = None
        self._anomaly_trace = forward_stack() if anomaly_state.enabled else None

    # ---- graph structure ----------------------------------------------------------
    @property
    def next_functions(self):
        """The edges `(node or None, input_nr)`, one per input.

        A recorded op whose input is a plain leaf (a TensorImpl: no node is one) with no
        AccumulateGrad alive stores the leaf's impl in its edge instead
        (`input_edge`): most such graphs are dropped without a backward pass (a
        model with requires-grad parameters run for its outputs), and a new
        AccumulateGrad for each was a sixth of a recorded add.
        The AccumulateGrad is made when the edge is first read, here or by the engine
        (`materialize_edges`), by the rule that made it at record time before: the
        leaf's live one, else a new one."""
        edges = self._edges
        for fn, _ in edges:
            if type(fn) is TensorImpl:
                return materialize_edges(self)
        return edges

    @next_functions.setter
    def next_functions(self, edges):
        self._edges = tuple(edges)

    def set_next_edges(self, edges):
        self._edges = tuple(edges)

    def needs_input_grad(self, i):
        """Whether the gradient for input edge `i` is wanted by this backward pass."""
        fn = self._edges[i][0]
        if fn is None:
            return False
        if not restricted_passes:
            return True
        needed = exec_state.needed
        return needed is None or fn in needed

    def needs_any_input_grad(self, start, count):
        for i in range(start, start + count):
            if self.needs_input_grad(i):
                return True
        return False

    def name(self):
        return type(self).__name__

    def apply(self, grads):
        raise NotImplementedError(f"{self.name()} does not define apply()")

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    def __call__(self, *grads):
        """`grad_fn(g)` runs this one node by hand, as in PyTorch."""
        return self.apply(grads)

    # ---- saved tensors ------------------------------------------------------------
    def release_saved(self):
        """Free the saved tensors: the memory goes back at once, and a second backward
        through this node raises instead of silently reusing stale values."""
        for attr in self.SAVED:
            saved = getattr(self, attr, None)
            if saved is not None:
                saved.release()

    # ---- hooks --------------------------------------------------------------------
    def _made_hooks(self):
        """This node's NodeHooks, made on first use."""
        hooks = self._hooks
        if hooks is None:
            hooks = self._hooks = NodeHooks()
        return hooks

    def register_prehook(self, fn):
        """`fn(grad_outputs) -> new grad_outputs or None`, before this node runs."""
        return add_hook(self._made_hooks().pre, fn)

    def register_hook(self, fn):
        """`fn(grad_inputs, grad_outputs) -> new grad_inputs or None`, after it runs."""
        return add_hook(self._made_hooks().post, fn)

    def add_tensor_hook(self, output_nr, fn):
        """A hook of the non-leaf tensor that is output `output_nr` of this node. It lives
        here, not on the tensor, so it fires even if the tensor itself is gone."""
        return add_hook(self._made_hooks().tensor_pre.setdefault(output_nr, {}), fn)

    def tensor_hooks(self, output_nr):
        hooks = self._hooks
        return None if hooks is None else hooks.tensor_pre.get(output_nr)


class NodeHooks:
    """What is hooked on one node: the engine tests one field (`Node._hooks is None`)
    for the nodes, nearly all, that have none."""

    __slots__ = ("pre", "post", "tensor_pre", "retains_grad")

    def __init__(self):
        self.pre = {}             # id -> fn(grad_outputs)
        self.post = {}            # id -> fn(grad_inputs, grad_outputs)
        self.tensor_pre = {}      # output_nr -> {id: fn(grad)}: hooks of non-leaf tensors
        self.retains_grad = {}    # output_nr -> weakref to the TensorImpl that retains grad


# ---- `grad_fn._saved_other` ------------------------------------------------------------
# Like PyTorch, a node shows what it saved as `_saved_<name>`: the unpacked saved tensor,
# or the saved value. A slotted node class gets one property per slot (`other_` ->
# `_saved_other`, `self_sizes` -> `_saved_self_sizes`) rather than a `__getattr__`: a
# class with a `__getattr__` makes every attribute read of its instances slower (~40 ns
# instead of ~7: Python cannot specialize the read), and the engine reads a node's fields
# dozens of times per node. Classes whose instances take any attribute (custom Functions'
# nodes, which are their `ctx`) keep the `__getattr__`.
def _saved_value(node, key):
    for attr in (key + "_", key):
        try:
            value = object.__getattribute__(node, attr)
        except AttributeError:
            continue
        return value.unpack(node) if hasattr(value, "unpack") else value
    raise AttributeError(f"'{type(node).__name__}' object has no attribute '_saved_{key}'")


def _saved_getattr(self, name):
    if name.startswith("_saved_"):
        return _saved_value(self, name[len("_saved_"):])
    raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


def _saved_property(key):
    return property(lambda node: _saved_value(node, key), doc=f"The saved `{key}`.")


def _add_saved_accessors(cls):
    if cls.__dictoffset__:      # instances with a __dict__: any attribute may be saved
        if "__getattr__" not in cls.__dict__:
            cls.__getattr__ = _saved_getattr
        return
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot != "__weakref__":
                key = slot[:-1] if slot.endswith("_") else slot
                if "_saved_" + key not in cls.__dict__:
                    setattr(cls, "_saved_" + key, _saved_property(key))


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: adds the incoming gradient into `.grad`.

    One per leaf, created on first use and cached (weakly) on the leaf's impl, so
    every graph that uses the leaf ends in the same node. The leaf's hooks run before
    `apply`, like every tensor hook (the engine calls them, see `tensor_hooks`)."""

    __slots__ = (
        "leaf",          # the leaf's TensorImpl, held strongly (PyTorch's `variable`)
        "_variable",     # the Tensor `variable` returns, made on first use
    )

    def __init__(self, impl):
        Node.__init__(self)
        self.leaf = impl
        self._variable = None
        self._output_meta = ((impl.sizes, impl.dtype, impl._device),)  # `device`'s field

    @property
    def variable(self):
        """The leaf, as a Tensor. Made when first asked for, then kept: most graphs that
        read a leaf are dropped without a backward pass (a requires-grad model run for
        its outputs), and wrapping the leaf was a third of this node's construction."""
        variable = self._variable
        if variable is None:
            variable = self._variable = factory.wrap(self.leaf)
        return variable

    def tensor_hooks(self, output_nr):
        # A leaf's hooks live on the leaf, which keeps them across graphs.
        return self.leaf.hooks

    def apply(self, grads):
        return self._accumulate(grads[0], False)

    def apply_owned(self, grads):
        """`apply` from the engine, which hands over its buffer (a list): the gradient
        taken out of it is then referenced from here only, unless something else kept
        it (a hook, a custom Function, the user), and may become `.grad` uncopied."""
        grad = grads[0]
        grads[0] = None
        return self._accumulate(grad, True)

    def _accumulate(self, grad, owned):
        """`.grad += grad` with PyTorch's semantics.

        The first gradient is cloned (it may be shared: AddBackward hands the same
        tensor to both inputs), unless it can be *stolen*: `owned` (the engine handed
        it over) and `_stealable` proves nothing else can reach it. Later ones are
        added in place, except when grad mode is on (create_graph=True): then `.grad`
        becomes a new tensor with a history of its own, so the old one, maybe part of
        a graph, is never modified. (One function, no helper call: every step of every
        parameter runs it.)"""
        impl = self.leaf
        # A leaf detached in place (detach_, requires_grad_(False)) after the graph was
        # built takes no gradient, as in PyTorch's AccumulateGrad.
        if grad is None or not impl.requires_grad:
            return ()
        with _accumulate_lock:
            old = impl.grad
            if old is None:
                layout = _layout_of(impl, grad)
                if owned and layout is not mf.channels_last and _stealable(grad):
                    impl.grad = grad
                elif layout is None:
                    impl.grad = grad.clone()
                else:
                    impl.grad = grad.clone(memory_format=layout)
            elif grad_state.enabled:
                impl.grad = old + grad
            else:
                old.add_(grad)
        if impl.post_accumulate_hooks:
            # After the sum, so a hook sees the whole .grad (DistributedDataParallel
            # starts reducing a parameter's gradient from here).
            for hook in list(impl.post_accumulate_hooks.values()):
                hook(self.variable)
        return ()


def _layout_of(impl, grad):
    """PyTorch's gradient layout contract: `.grad` takes the leaf's layout when that is
    row-major or channels_last (a channels_last conv hands a contiguous weight an NHWC
    gradient), else the gradient's own (None: a plain clone). Sparse tensors have no
    strides to follow."""
    if grad.is_sparse or impl.layout is not strided or len(impl.sizes) != 4:
        return None
    if impl.is_contiguous:
        return mf.contiguous_format
    if is_channels_last(impl.sizes, impl.strides):
        return mf.channels_last
    return None


# References to the gradient while `_stealable` looks at it: apply_owned's `grad`,
# _accumulate's, _stealable's own, and getrefcount's argument.
_OWNED_REFS = 4
# The counts above hold where every frame keeps a strong reference to its arguments and
# locals: CPython up to 3.13. CPython 3.14 may borrow references on the stack, so a count
# could equal them while someone else holds the tensor: there (and on other Pythons) a
# first gradient is always cloned, as before stealing existed.
_COUNTS_HOLD = sys.implementation.name == "cpython" and sys.version_info < (3, 14)


def _stealable(grad):
    """Whether the first gradient of a leaf may become its `.grad` as it is (PyTorch
    steals it when it holds the only reference; accumulate_grad.h): exactly when the
    clone it replaces would be indistinguishable from it, and nobody else can reach it
    or its memory to change it later.

    - the clone's own properties: a plain CPU tensor (no subclass, view, sparse or
      batched impl), row-major from offset 0 (what `clone` makes of it, and of the
      layout contract's contiguous format), version 0, no autograd state, of the
      current inference mode;
    - no other holder: nothing references the Tensor but the calls above, its impl but
      the Tensor, its storage but the impl, its NumPy array but the storage (and the
      impl's cached `_array`, the same array), and the array owns its memory (a NumPy
      view of it would reference it: `from_numpy` memory, or `.numpy()`, is never
      stolen); no weak reference can bring any of them back.

    With grad mode on (create_graph=True) PyTorch never steals: neither does this."""
    if not _COUNTS_HOLD or grad_state.enabled or type(grad) is not factory.Tensor:
        return False
    g = grad._impl
    if (type(g) is not TensorImpl or g._device is not CPU or g.offset or g.base is not None
            or not g.is_contiguous or g.strides != contiguous_strides(g.sizes)
            or g.version.value or g._inference != grad_state.inference
            or g.requires_grad or g.grad_fn is not None or g.grad is not None
            or g.hooks is not None or g.retains_grad or g.grad_accumulator is not None
            or g.post_accumulate_hooks is not None or g.name is not None
            or g.wrapped_number):
        return False
    storage = g.storage
    data = storage.data
    # the storage `clone` would make: a writeable array of the tensor's shape and dtype
    # that owns its memory
    if (type(data) is not np.ndarray or data.base is not None or not data.flags.writeable
            or data.shape != g.sizes or data.dtype != g.dtype.np
            or storage.nbytes != data.nbytes):
        return False
    # Each count below includes getrefcount's argument and the local name here (`g`,
    # `storage`, `data`): the impl is then held by the Tensor only, the storage by the
    # impl only, the array by the storage (and the impl's `_array`) only.
    return (sys.getrefcount(grad) == _OWNED_REFS and sys.getrefcount(g) == 3
            and sys.getrefcount(storage) == 3
            and (g._array is None or g._array is data)
            and sys.getrefcount(data) == (4 if g._array is data else 3)
            and sys.getrefcount(g.version) == 2
            and not weakref.getweakrefcount(grad) and not weakref.getweakrefcount(g)
            and not weakref.getweakrefcount(storage))


# ---- edges ---------------------------------------------------------------------------
# An *edge* is `(node, input_nr)`: where a gradient goes. For a tensor made by an op it is
# `(its grad_fn, its output_nr)`; for a leaf that requires grad `(its AccumulateGrad, 0)`;
# for anything else `(None, 0)` (no gradient needed). A recorded op may store a plain leaf
# as `(its impl, 0)` until the edge is read (`input_edge`).
NO_EDGE = (None, 0)


# Making a leaf's AccumulateGrad is a read and a write (`ref()` then the new ref): two
# threads running graphs of one shared parameter could each make one, and a thread whose
# `autograd.grad` target is the one the other overwrote finds it in no graph (`allow_unused`
# error). PyTorch takes a mutex here too; the common case (one alive) takes no lock.
_accumulator_lock = threading.Lock()


def grad_accumulator(impl):
    """The leaf's AccumulateGrad: the live one if any graph still holds it (cached weakly
    on the impl), else a new one, which dies with the last graph that uses it."""
    ref = impl.grad_accumulator
    acc = ref() if ref is not None else None
    if acc is None:
        with _accumulator_lock:
            ref = impl.grad_accumulator         # made by another thread meanwhile?
            acc = ref() if ref is not None else None
            if acc is None:
                acc = AccumulateGrad(impl)
                impl.grad_accumulator = weakref.ref(acc)
    return acc


def impl_edge(impl):
    fn = impl.grad_fn      # a view's is rebuilt here if its base changed (view_impl.py)
    if fn is not None:
        return (fn, impl.output_nr)
    if impl.requires_grad and (impl.base is None or not impl.base.requires_grad):
        return (grad_accumulator(impl), 0)
    # A view with no history that requires grad only through its base (made in no_grad
    # mode): no gradient flows from it, as in PyTorch.
    return NO_EDGE


def input_edge(impl):
    """The edge a recorded op stores for an input that requires grad (`Node.__init__`):
    `impl_edge`'s, except for a plain leaf (its impl a TensorImpl: not a view's, a
    subclass's or vmap's) with no AccumulateGrad alive, which is pointed at by its own
    impl, `(impl, 0)`: most graphs of requires-grad leaves are dropped unread (a model
    run for its outputs), and a new AccumulateGrad for each was a sixth of a recorded add.
    The AccumulateGrad is made when the edge is first read (Node.next_functions) or when
    backward starts (engine._discover), by the rule impl_edge would have applied here:
    the one alive then, else a new one. Exact but for the identity of an AccumulateGrad
    that a since-dropped graph kept alive in between (a hook put on that one does not
    carry over), and the order it runs in among ready nodes: made later, it runs earlier
    (PyTorch runs every AccumulateGrad first)."""
    fn = impl.grad_fn
    if fn is not None:
        return (fn, impl.output_nr)
    if type(impl) is not TensorImpl:
        return impl_edge(impl)
    if impl.requires_grad and (impl.base is None or not impl.base.requires_grad):
        ref = impl.grad_accumulator
        acc = ref() if ref is not None else None
        return (impl, 0) if acc is None else (acc, 0)
    return NO_EDGE


def gradient_edge(tensor):
    return impl_edge(tensor._impl)


def collect_next_edges(*args):
    """One edge per tensor argument; a list argument (cat's `tensors`) gives one per
    element; None (an optional tensor not given) gives an empty edge."""
    edges = []
    for a in args:
        if a is None:
            edges.append(NO_EDGE)
        elif isinstance(a, (list, tuple)):
            for t in a:
                edges.append(NO_EDGE if t is None else impl_edge(t._impl))
        else:
            edges.append(impl_edge(a._impl))
    return edges


def materialize_edges(node):
    """Replace the leaves in `node`'s edges (`input_edge`) by their
    AccumulateGrad; returns the new edges. Every public read of the edges, and the
    engine before it walks a node, goes through this first."""
    edges = []
    for fn, nr in node._edges:
        if type(fn) is TensorImpl:
            fn = grad_accumulator(fn)
        edges.append((fn, nr))
    edges = node._edges = tuple(edges)
    return edges
