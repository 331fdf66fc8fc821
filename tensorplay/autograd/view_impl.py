"""The TensorImpl of a view: its autograd history follows its base's (PyTorch's
DifferentiableViewMeta).

A view shares memory with its base, so an in-place op on the base changes the view too:

    base = tp.zeros(3); view = base[1:]
    base.add_(w)                       # view's values now depend on w
    (view * 10).sum().backward()       # w.grad must see the 10

No code runs on `view` when `base` changes, so the view finds out lazily: it remembers
the version of the shared counter its history was made at (`view_version`); reading
`grad_fn` when the counter has moved since rebuilds the history as "a strided window
onto the base's current history" (`regenerate_view_history`, a ViewOfBaseBackward node).

`requires_grad` of a view is its own flag, or a history, or its base's flag (as in
PyTorch: a view of a tensor that requires grad requires grad, even one made in no_grad
mode). Views made in no_grad mode, or as one of several outputs (split, unbind, chunk),
cannot take part in an in-place rebase: their history would be ambiguous, so PyTorch
refuses, and so do we (`ViewImpl.check_rebase`).
"""
from __future__ import annotations

from tensorplay._impl import PLAIN_KEYS, TensorImpl, is_contiguous_layout
from tensorplay.dispatch.keys import REQUIRES_GRAD
from tensorplay.autograd.grad_mode import grad_state
from tensorplay.autograd.inplace_views import regenerate_view_history
from tensorplay.errors import TensorPlayError

__all__ = ["ViewImpl", "mark_multi_output_views"]

# How a view was made (PyTorch's CreationMeta): only DEFAULT views may be rebased.
DEFAULT = "default"
NO_GRAD_MODE = "no_grad_mode"
MULTI_OUTPUT = "multi_output"


class ViewImpl(TensorImpl):
    # `replay`: None, or the op (base impl -> Tensor) that made this view of its base itself
    # where PyTorch rebuilds the history by replaying it on the base (its view_func: a
    # dtype-changing view, view_as_real) rather than as a strided window onto the base
    __slots__ = ("view_version", "creation", "_grad_fn", "_requires_grad", "_keys", "replay")

    def __init__(self, base, storage, sizes, strides, offset, dtype, device, version,
                 inference=False, contiguous=None):
        # (TensorImpl.__init__'s `requires_grad`, `grad_fn` and `keys` go through this
        # class's setters below)
        TensorImpl.__init__(self, storage, sizes, strides, offset, dtype, device, version,
                            inference, None, contiguous, PLAIN_KEYS[inference][device.key])
        self.base = base
        self.creation = DEFAULT if grad_state.enabled else NO_GRAD_MODE
        self.replay = None

    @property
    def grad_fn(self):
        fn = self._grad_fn
        base = self.base
        if base is None or self.view_version == self.version.value:
            return fn
        if fn is None and not base.requires_grad:
            return None
        # The base (or another view of it) changed in place since this history was made.
        self.check_rebase(indirect=True)
        # Current from now on: the rebuild below reads the old history, not a new rebuild.
        self.view_version = self.version.value
        return regenerate_view_history(self)

    @grad_fn.setter
    def grad_fn(self, fn):
        # A history given now is current as of now.
        self._grad_fn = fn
        self.view_version = self.version.value

    @property
    def requires_grad(self):
        if self._requires_grad or self._grad_fn is not None:
            return True
        base = self.base
        return base is not None and base.requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        self._requires_grad = flag

    # The key set's REQUIRES_GRAD flag follows `requires_grad`, which a view also takes
    # from its base: the base may come to require grad after the view was made (an
    # in-place op with a tensor that requires grad, `requires_grad_()`), so the flag is
    # read at each call rather than kept.
    @property
    def keys(self):
        if self.requires_grad:
            return self._keys | REQUIRES_GRAD
        return self._keys

    @keys.setter
    def keys(self, keys):
        self._keys = keys & ~REQUIRES_GRAD

    def check_rebase(self, op_name=None, indirect=False):
        """Refuse to rebase the history of a view made in no_grad mode or by a multi-output
        view op: `indirect` when its base (or another view) was modified, not the view."""
        creation = self.creation
        if creation == DEFAULT:
            return
        where = f"{op_name}: " if op_name else ""
        modified = "its base or another view of its base has been modified inplace" if indirect \
            else "is being modified inplace"
        if creation == NO_GRAD_MODE:
            raise TensorPlayError(
                f"{where}A view was created in no_grad mode and {modified} with grad mode "
                f"enabled. Given that this use case is ambiguous and error-prone, it is forbidden. "
                f"You can clarify your code by moving both the view and the inplace either both "
                f"inside the no_grad block (if you don't want the inplace to be tracked) or both "
                f"outside (if you want the inplace to be tracked).", op=op_name)
        raise TensorPlayError(
            f"{where}This tensor is a view and {modified}. This view is the output of a function "
            f"that returns multiple views (split, unbind, chunk...). Such functions do not allow "
            f"the output views to be modified inplace. You should replace the inplace operation "
            f"by an out-of-place one.", op=op_name)


def mark_multi_output_views(views):
    """split/unbind/chunk: their outputs share one backward node, which a rebase of one
    output would have to rewrite for all (PyTorch forbids it)."""
    for v in views:
        impl = v._impl
        if isinstance(impl, ViewImpl) and impl.creation == DEFAULT:
            impl.creation = MULTI_OUTPUT
    return views
