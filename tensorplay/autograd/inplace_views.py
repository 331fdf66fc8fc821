"""In-place ops on views: PyTorch's CopySlices, in small pieces.

`y = x[1:]; y.exp_()` changes `x` too (they share memory). After it:

    x_new = x_old with the region of y replaced by exp(y_old)    (CopySlices)
    y_new = the region of x_new                                  (a strided window)

so the base gets a `CopySlices` node and the view a `ViewOfBaseBackward` node pointing
at it. A *region* is a view's geometry relative to its base: sizes, strides and the
storage offset minus the base's offset. Two differentiable helpers move gradients
between base shape and view shape:

    gather(g, base, view)   base-shaped g -> the elements the view sees
    scatter(g, base, view)  view-shaped g -> base-shaped zeros + g added into the region

Each is the other's adjoint, so their nodes call each other and any order of
derivative works (create_graph=True).
"""
from __future__ import annotations

import numpy as np

from tensorplay import _tensor_factory as factory
from tensorplay._generated import ops
from tensorplay.autograd.grad_mode import grad_state
from tensorplay.autograd.node import collect_next_edges, impl_edge
from tensorplay.autograd.recording import _set_grad_fn, set_history
from tensorplay.autograd.node import Node
from tensorplay.dispatch.keys import AUTOGRAD_MASK
from tensorplay.dispatch.tls import ExcludeKeys
from tensorplay.kernel_support.overlap import assert_no_internal_overlap

__all__ = ["CopySlices", "ViewOfBaseBackward", "view_of_base", "regenerate_view_history",
           "gather", "scatter"]


class Region:
    """Sizes, strides and offset of a tensor inside its base's memory.

    `parts`: the region is of a complex base's real and imaginary parts (a real view:
    view_as_real, .real, .imag), measured in the parts' units, i.e. inside
    `view_as_real(base)`: its offset counts floats, two per complex element."""

    __slots__ = ("sizes", "strides", "offset", "parts")

    def __init__(self, sizes, strides, offset, parts=False):
        self.sizes, self.strides, self.offset = tuple(sizes), tuple(strides), offset
        self.parts = parts

    @staticmethod
    def of(impl, base):
        if impl.dtype is base.dtype:
            return Region(impl.sizes, impl.strides, impl.offset - base.offset)
        if base.dtype.is_complex and impl.dtype is base.dtype.to_real():
            return Region(impl.sizes, impl.strides, impl.offset - 2 * base.offset, True)
        from tensorplay.errors import AutogradError
        raise AutogradError(f"an in-place op on a {impl.dtype.name} view of a "
                            f"{base.dtype.name} tensor that requires grad: only the real "
                            f"views of a complex tensor (view_as_real, .real, .imag) can be "
                            f"written in place under autograd; clone the view first")

    def overlaps_itself(self):
        """True when two elements may share memory (an expanded view): then a scatter
        must add, not copy. Sufficient test: with dims sorted by stride, each stride
        must step over everything the smaller dims span."""
        span = 0
        for stride, size in sorted((st, sz) for sz, st in zip(self.sizes, self.strides)
                                   if sz > 1):
            if stride <= span:
                return True
            span += (size - 1) * stride
        return False

    def __repr__(self):
        return f"Region(sizes={list(self.sizes)}, strides={list(self.strides)}, " \
               f"offset={self.offset})"


# ---- raw data movement (no graph) ----------------------------------------------------
# Buffers are laid out like the base (its strides), so a region's strides and offset,
# measured in the base's memory, address the same elements in them.
def _buffer(base, dtype, device):
    return factory.empty_strided(base.sizes, base.strides, dtype=dtype, device=device)


def _window(buf, view):
    """The view's elements in a base-shaped buffer (in its parts, for a `parts` region)."""
    if view.parts:
        buf = _parts(buf)
    return buf.as_strided(view.sizes, view.strides, view.offset)


def _parts(t):
    """view_as_real(t), through its dispatcher handle (the front doors are a layer up)."""
    return ops.view_as_real.call(t._impl.keys, t)


def _complex_of_parts(t):
    return ops.view_as_complex.call(t._impl.keys, t)


def _gather_raw(g, base, view):
    buf = _buffer(base, g.dtype, g.device)
    buf.copy_(g)
    return _window(buf, view)


def _scatter_raw(g, base, view):
    if view.overlaps_itself():
        return _scatter_add_on_host(g, base, view)
    # a real view's gradient goes back into a complex base's parts
    buf = _buffer(base, g.dtype.to_complex() if view.parts else g.dtype, g.device)
    buf.zero_()
    _window(buf, view).copy_(g)
    return buf


def _slots(region):
    """The memory slot of each element of `region`, an int64 array of its shape."""
    index = np.full((), region.offset, dtype=np.int64)
    for size, stride in zip(region.sizes, region.strides):
        index = index[..., None] + np.arange(size, dtype=np.int64) * stride
    return index


def _scatter_add_on_host(g, base, view):
    """Several view elements share one base element: their gradients add up. NumPy's
    unbuffered `add.at` does that, on the host whatever the device. A `parts` region's
    slots count floats, two per complex element of the base: its real gradient is added
    into the parts, then read as the base's complex elements."""
    index = _slots(view)
    span = max(1 + sum((s - 1) * st for s, st in zip(base.sizes, base.strides)), 1)
    flat = np.zeros(2 * span if view.parts else span, dtype=g.dtype.np)
    np.add.at(flat, index.reshape(-1), np.asarray(g.detach().cpu()).reshape(-1))
    t = factory.tensor(flat, dtype=g.dtype, device=g.device)
    if view.parts:
        t = _complex_of_parts(t.view([span, 2]))
    return t.as_strided(base.sizes, base.strides, 0)


def _readers_per_slot(like, base):
    """A tensor of base shape: how many base elements read each element's memory."""
    ones = factory.ones(base.sizes, dtype=like.dtype, device=like.device)
    return _scatter_add_on_host(ones, base, base)


def _region_mask(grad, base, view):
    """A bool tensor of base shape: True inside the view's region (for a `parts` region,
    of base shape + (2,): True at the parts inside it)."""
    from tensorplay import _dtype
    if view.parts:
        marks = _buffer(base, grad.dtype, grad.device)     # complex, laid out like the base
        marks.zero_()
        _window(marks, view).fill_(1)
        return _parts(marks) != 0
    mask = _buffer(base, _dtype.bool, grad.device)
    mask.fill_(False)
    mask.as_strided(view.sizes, view.strides, view.offset).fill_(True)
    return mask


# ---- differentiable versions ---------------------------------------------------------
def _record(out, node_cls, g, base, view):
    if grad_state.enabled and g._impl.requires_grad:
        node = node_cls(base, view)
        node.set_next_edges(collect_next_edges(g))
        set_history(out, node)
    return out


def gather(g, base, view):
    with ExcludeKeys(AUTOGRAD_MASK):
        out = _gather_raw(g, base, view)
    return _record(out, GatherBackward, g, base, view)


def scatter(g, base, view):
    with ExcludeKeys(AUTOGRAD_MASK):
        out = _scatter_raw(g, base, view)
    return _record(out, ScatterBackward, g, base, view)


class _RegionNode(Node):
    __slots__ = ("base", "view")

    def __init__(self, base, view):
        super().__init__()
        self.base = base
        self.view = view


class GatherBackward(_RegionNode):
    __slots__ = ()

    def apply(self, grads):
        return (scatter(grads[0], self.base, self.view),)


class ScatterBackward(_RegionNode):
    __slots__ = ()

    def apply(self, grads):
        return (gather(grads[0], self.base, self.view),)


class ViewOfBaseBackward(_RegionNode):
    """The history of a view whose base was modified in place: view = region of base.
    (PyTorch names it AsStridedBackward0.)

    When the base overlaps itself (an expanded leaf), several base elements read one
    memory slot, and the scatter hands each of them the slot's whole gradient. Like
    `as_strided_backward` (PyTorch's NOTE [ as_strided Backward ]), the slot's gradient
    is instead shared out: divided by how many base elements read it."""

    __slots__ = ()

    def apply(self, grads):
        g = scatter(grads[0], self.base, self.view)
        if self.base.overlaps_itself():
            g = g / _readers_per_slot(g, self.base)
        return (g,)


class CopySlices(Node):
    """The new history of a base after an in-place op `fn` on one of its views.

    Forward: base_new = base_old outside the region, fn(view_old, *others) inside.
    Backward, with g the gradient of base_new:
        g_view = gather(g)                    # gradient of fn's output
        grads  = fn.apply(g_view)             # for view_old and fn's other inputs
        base_old gets g outside the region and scatter(grads[0]) inside
    Since view_old is a region of base_old, fn's first edge is rewired to base_old's
    history: CopySlices' edges are fn's edges with that one replaced."""

    __slots__ = ("base", "view", "fn")

    def __init__(self, base_impl, view_impl, fn):
        super().__init__()
        self.base = Region(base_impl.sizes, base_impl.strides, 0)
        self.view = Region.of(view_impl, base_impl)
        self.fn = fn
        fn.next_functions = (impl_edge(base_impl),) + tuple(fn.next_functions[1:])
        self.next_functions = fn.next_functions
        self._output_meta = ((base_impl.sizes, base_impl.dtype, base_impl.device),)

    def name(self):
        return f"CopySlices[{self.fn.name()}]"

    def apply(self, grads):
        # PyTorch copies the gradient into a buffer laid out like the base, and the view's
        # part of it back into the view's window of that buffer: both copies refuse a
        # geometry whose elements share memory (an expanded base or view).
        assert_no_internal_overlap(self.name(), self.base, arg="base")
        if self.needs_input_grad(0):
            assert_no_internal_overlap(self.name(), self.view, arg="view")
        grad = grads[0]
        results = list(self.fn.apply((gather(grad, self.base, self.view),)))
        if self.needs_input_grad(0):
            with ExcludeKeys(AUTOGRAD_MASK):
                mask = _region_mask(grad, self.base, self.view)
            inside = results[0]
            if inside is None:
                inside = factory.zeros_like(grad)
            else:
                inside = scatter(inside, self.base, self.view)
            if self.view.parts:     # chosen part by part: the mask has a last dim of 2
                results[0] = _complex_of_parts(_parts(inside).where(mask, _parts(grad)))
            else:
                results[0] = inside.where(mask, grad)     # tp.where(mask, inside, grad)
        else:
            results[0] = None
        return tuple(results)

    def release_saved(self):
        self.fn.release_saved()


def view_of_base(view_impl, base_edge):
    """A ViewOfBaseBackward for `view_impl` whose base's history is `base_edge`."""
    base = view_impl.base
    node = ViewOfBaseBackward(Region(base.sizes, base.strides, 0), Region.of(view_impl, base))
    node.set_next_edges((base_edge,))
    node._output_meta = ((view_impl.sizes, view_impl.dtype, view_impl.device),)
    return node


def regenerate_view_history(view_impl):
    """A view made before its base changed in place: rebuild its grad_fn from the
    base's current history (PyTorch does the same, lazily, on access)."""
    node = _replayed_history(view_impl) if view_impl.replay is not None else None
    if node is None:
        node = view_of_base(view_impl, impl_edge(view_impl.base))
    _set_grad_fn(view_impl, node)
    return node


def _replayed_history(view_impl):
    """The history of the view's op replayed on its base under grad mode (PyTorch's
    view_func), or None where the replay records none."""
    from tensorplay.autograd.grad_mode import enable_grad
    with enable_grad():
        return view_impl.replay(view_impl.base)._impl.grad_fn
