"""BatchedTensor: a tensor that stands for a batch of tensors inside `vmap`.

A function under `vmap` sees *logical* tensors, one example each. Each of them is a
`BatchedTensor`: a handle on a `BatchedImpl` that holds the *physical* tensor (the
whole batch), the dimension of it that is the batch (`bdim`) and the vmap `level`
that made it. Its key set is the `Vmap<backend>` key alone, so every op on it lands in
the batching wrapper at that key (`vmap.py`), which unwraps, applies the batching rule
to the physical tensors and wraps the result again.

Nested vmaps nest the wrappers: under `vmap(vmap(f))` an input is
`BatchedTensor(level 2, value=BatchedTensor(level 1, value=physical))`. A rule at
level L only unwraps the tensors of level L; the physical tensors it computes on may be
BatchedTensors of a lower level, whose ops dispatch to the Vmap key again, one level
down, until plain tensors reach autograd and the backends. So the autograd graph is
recorded on the plain physical tensors, the batch of examples side by side.

    logical (what f sees)      physical (what the kernels see)
    x: float32[3]              float32[B, 3], bdim 0   (in_dims=0)
    x: float32[3]              float32[3, B], bdim 1   (in_dims=1)
"""
from __future__ import annotations

from tensorplay._impl import TensorImpl
from tensorplay._tensor import Tensor
from tensorplay.dispatch.keys import VMAP_OFFSET
from tensorplay.errors import TensorPlayError


class VmapError(TensorPlayError, ValueError):
    """Bad use of vmap: in_dims/out_dims that do not fit, batch sizes that differ, an
    in-place write of batched values into an unbatched tensor, data-dependent code."""


class BatchedImpl(TensorImpl):
    """The impl of a BatchedTensor: logical sizes, physical value, batch dim, level.

    Metadata (sizes, dtype, device) is the logical view; the autograd state
    (`requires_grad`, `grad_fn`) is the physical tensor's, because the graph lives there."""

    __slots__ = ("value", "bdim", "level")

    def __init__(self, value, bdim, level):
        phys = value._impl
        sizes = phys.sizes[:bdim] + phys.sizes[bdim + 1:]
        strides = phys.strides[:bdim] + phys.strides[bdim + 1:]
        # TensorImpl's own fields first (whatever it grows), then the batch: while `value`
        # is None, the autograd properties below ignore TensorImpl's defaults.
        self.value = None
        super().__init__(phys.storage, sizes, strides, phys.offset, phys.dtype, phys.device,
                         version=phys.version, inference=phys.inference)
        self.level = level
        self.reseat(value, bdim)

    def reseat(self, value, bdim):
        """Point at a new physical tensor (an in-place view op such as `unsqueeze_`
        changed this tensor's shape)."""
        phys = value._impl
        self.value = value
        self.bdim = bdim
        self.sizes = phys.sizes[:bdim] + phys.sizes[bdim + 1:]
        self.strides = phys.strides[:bdim] + phys.strides[bdim + 1:]
        self.offset = phys.offset
        self.is_contiguous = phys.is_contiguous and (bdim == 0 or phys.sizes[bdim] == 1)

    # The autograd state is the physical tensor's (see the module docstring).
    @property
    def requires_grad(self):
        return self.value._impl.requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        if self.value is not None:
            self.value._impl.set_requires_grad(flag)

    @property
    def grad_fn(self):
        return self.value._impl.grad_fn

    @grad_fn.setter
    def grad_fn(self, node):
        if self.value is None:
            return
        raise VmapError("vmap: the history of a batched tensor is its physical tensor's; "
                        "it cannot be set on the BatchedTensor")

    @property
    def batch_size(self):
        return self.value._impl.sizes[self.bdim]

    def key_set(self):
        return 1 << (self.device.key + VMAP_OFFSET)

    def array(self):
        raise VmapError("vmap: a function under vmap read the values of a batched tensor "
                        "(.item(), .tolist(), .numpy(), printing, or data-dependent Python "
                        "control flow); vmap runs the function once for the whole batch, so "
                        "it cannot see one example's values")


class BatchedTensor(Tensor):
    """A Tensor whose impl is a BatchedImpl (made only by `wrap_batched`)."""

    __slots__ = ()

    def __repr__(self):
        impl = self._impl
        return (f"BatchedTensor(lvl={impl.level}, bdim={impl.bdim}, "
                f"value={impl.value!r})")

    # Tensor.data builds a plain tensor from the impl's storage and strides, which a
    # BatchedImpl does not have: it would be a wrong tensor. torch.func refuses it too.
    @property
    def data(self):
        raise VmapError("accessing `data` under vmap transform is not allowed; use "
                        "detach() instead", op="data", arg="self")

    @data.setter
    def data(self, value):
        raise VmapError("mutating directly with `.data` under vmap transform is not "
                        "allowed; use an in-place op (copy_) instead", op="data",
                        arg="self")

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        raise VmapError("vmap: backward() of a batched tensor inside vmap is not supported; "
                        "call tp.autograd.grad(output, inputs) inside the function, or "
                        "backward() on the result outside vmap")


def wrap_batched(value, bdim, level):
    """`value` (physical) seen as a batch along `bdim` at vmap `level`."""
    t = object.__new__(BatchedTensor)
    t._impl = BatchedImpl(value, bdim, level)
    return t


def batched_impl(x):
    """The BatchedImpl of `x`, or None when `x` is not a BatchedTensor."""
    impl = getattr(x, "_impl", None)
    return impl if isinstance(impl, BatchedImpl) else None


def level_of(x):
    impl = batched_impl(x)
    return impl.level if impl is not None else 0


def unwrap_level(x, level):
    """(physical, bdim) of `x` at `level`; (x, None) when `x` is not batched at it."""
    impl = batched_impl(x)
    if impl is not None and impl.level == level:
        return impl.value, impl.bdim
    return x, None


def physical_impls(x):
    """The impl of `x` and, for a BatchedTensor, those of the tensors under it."""
    impls = [x._impl]
    impl = batched_impl(x)
    while impl is not None:
        impls.append(impl.value._impl)
        impl = batched_impl(impl.value)
    return impls


def unwrap_all(x):
    """The plain tensor under every level of `x`, and the (level, bdim) chain, outer first."""
    chain = []
    impl = batched_impl(x)
    while impl is not None:
        chain.append((impl.level, impl.bdim))
        x = impl.value
        impl = batched_impl(x)
    return x, chain


def rewrap_all(x, chain):
    """Undo `unwrap_all`: wrap the plain `x` in the levels of `chain`, innermost first."""
    for level, bdim in reversed(chain):
        x = wrap_batched(x, bdim, level)
    return x
