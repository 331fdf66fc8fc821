"""`tp.autograd.forward_ad`: forward-mode AD with dual tensors, as torch.autograd.forward_ad.

    import tensorplay.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        x = fwAD.make_dual(primal, tangent)      # a view of `primal` carrying `tangent`
        y = f(x)                                 # every op pushes the tangent along
        value, jvp = fwAD.unpack_dual(y)         # J(primal) @ tangent, one pass, no graph

The mechanism (tangents on tensors, levels, the kernel at the ForwardAD dispatch key) is
in forward_mode.py. Unlike PyTorch's core forward AD (which refuses to nest), levels
nest: a tangent formula runs with its own level hidden, so `jvp` of `jvp` gives second
derivatives, as torch.func's do.
"""
from __future__ import annotations

from collections import namedtuple

from tensorplay.autograd import forward_mode
from tensorplay.autograd.forward_mode import hidden_level, set_tangent, tangent_of
from tensorplay.errors import AutogradError


# vmap's BatchedTensor module (tensorplay/func/batched.py): tensorplay.func sits above
# autograd, and its package hands the module over here as it loads (as it hands the
# engine `batched_grad`). None until then: no tensor can be batched before vmap exists.
batched = None


def batched_impl(x):
    """The BatchedImpl of `x` under vmap, or None."""
    return None if batched is None else batched.batched_impl(x)

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]


def enter_dual_level():
    """Enter a new forward level; returns its index (0 for the outermost). Prefer the
    `dual_level()` context manager."""
    return forward_mode.enter_level()


def exit_dual_level(*, level=None):
    """Exit the innermost forward level: every tangent of that level is dropped."""
    forward_mode.exit_level(level)


def _level(level, what):
    if level is None:
        if not forward_mode.levels:
            raise AutogradError(f"Trying to {what} for forward AD but no level exists, make "
                                f"sure to enter_dual_level() first.")
        return forward_mode.levels[-1]
    if level not in forward_mode.levels:
        raise AutogradError(f"{what}: level {level} is not an active dual level (active: "
                            f"{forward_mode.levels})")
    return level


def make_dual(tensor, tangent, *, level=None):
    """A view of `tensor` whose tangent at `level` (default: the innermost) is `tangent`.

    The view records in autograd as PyTorch's `_make_dual` does (the gradient flows to
    `tensor`), so forward and reverse mode can be mixed."""
    level = _level(level, "create a dual Tensor")
    for arg, value in (("tensor", tensor), ("tangent", tangent)):
        if getattr(value, "_impl", None) is None:
            raise TypeError(f"make_dual(): argument '{arg}' must be a Tensor, got "
                            f"{type(value).__name__}")
    if not tensor.dtype.is_differentiable:
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if not tangent.dtype.is_differentiable:
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise AutogradError(
            f"Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size "
            f"{list(tensor.shape)} while the given forward gradient is of size "
            f"{list(tangent.shape)}.")
    if batched_impl(tensor) is not None:
        return _make_dual_batched(tensor, tangent, level)
    if tangent_of(tensor, level) is not None:
        raise AutogradError(f"Making a dual Tensor based on a Tensor that already has a "
                            f"forward gradient at the same level {level} is not supported.")
    with hidden_level(level):
        dual = tensor.view_as(tensor)
    set_tangent(dual, level, tangent)
    return dual


def _make_dual_batched(tensor, tangent, level):
    """Under vmap a tangent lives on the physical tensor (the ForwardAD key sits below
    the Vmap keys): unwrap the primal's level, give its physical tensor the tangent
    (unwrapped at the same level, or expanded over the batch when it is not batched
    there), and wrap the dual again."""
    vmap_level = batched_impl(tensor).level
    physical, bdim = batched.unwrap_level(tensor, vmap_level)
    physical = physical.movedim(bdim, 0)
    t_physical, t_bdim = batched.unwrap_level(tangent, vmap_level)
    if t_bdim is None:
        t_physical = tangent.unsqueeze(0).expand((physical.shape[0],) + tuple(tangent.shape))
    else:
        t_physical = t_physical.movedim(t_bdim, 0)
    return batched.wrap_batched(make_dual(physical, t_physical, level=level), 0, vmap_level)


UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__doc__ = """What `unpack_dual` returns: `primal` (a view of the
tensor without the tangent of that level) and `tangent` (None when it has none)."""


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of a dual tensor at `level` (default: the innermost); outside any
    level, (tensor, None) as PyTorch's."""
    if not forward_mode.levels and level is None:
        return UnpackedDualTensor(tensor, None)
    level = _level(level, "unpack a dual Tensor")
    impl = batched_impl(tensor)
    if impl is not None:
        # the tangent is the physical tensor's: unpack that, and wrap both halves again
        primal, tangent = unpack_dual(impl.value, level=level)
        if tangent is None:
            return UnpackedDualTensor(tensor, None)
        return UnpackedDualTensor(batched.wrap_batched(primal, impl.bdim, impl.level),
                                  batched.wrap_batched(tangent, impl.bdim, impl.level))
    tangent = tangent_of(tensor, level)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    with hidden_level(level):
        primal = tensor.view_as(tensor)
    return UnpackedDualTensor(primal, tangent)


class dual_level:
    """`with dual_level():` a forward AD level; its tangents are dropped on exit.

    Returns the level's index from `__enter__`."""

    def __enter__(self):
        self.level = enter_dual_level()
        return self.level

    def __exit__(self, *exc):
        exit_dual_level(level=self.level)
