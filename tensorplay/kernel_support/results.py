"""A kernel's result: new memory (or a NumPy array a kernel computed) made a TensorImpl,
wrapped as a Tensor.

The Tensor class sits above the kernels (the Tensor layer), so they make tensors
through the seam tensorplay/_tensor_factory.py, which the Tensor layer fills as it
loads. Read its names when the kernel runs (`factory.wrap`), never import them:

    factory.empty_strided(sizes, strides, dtype=dtype, device=device)   # new memory
    factory.wrap(TensorImpl(storage, sizes, strides, offset, dtype, device, ...))
    tensor_from_array(array, dtype, device)                              # an array's

A result made inside `tp.inference_mode()` is an inference tensor: the thread's grad
state says so (`grad_state.inference`), and the impl takes it at construction.
"""
from __future__ import annotations

from tensorplay import _tensor_factory as factory
from tensorplay._alloc_limit import check_alloc
from tensorplay._impl import (
    PLAIN_KEYS, Storage, TensorImpl, VersionCounter, contiguous_strides, impl_from_array,
    is_contiguous_layout, numel_of,
)
from tensorplay.dispatch.tls import grad_state

__all__ = ["factory", "tensor_from_array", "TensorImpl", "Storage", "VersionCounter",
           "PLAIN_KEYS", "contiguous_strides", "is_contiguous_layout", "numel_of",
           "check_alloc", "grad_state"]


def tensor_from_array(array, dtype, device):
    """A new row-major tensor of `dtype` on `device` holding `array` (a C-contiguous copy
    when it is not one already), an inference tensor inside tp.inference_mode()."""
    return factory.wrap(impl_from_array(array, dtype, device, grad_state.inference))
