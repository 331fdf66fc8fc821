"""The user-facing `Tensor`: a thin handle on a `TensorImpl`.

Only a few methods are written by hand here (sizes, conversion to NumPy and
Python, autograd entry points). Every operator method (`add`, `sum`, `view`,
`__add__`, ...) is generated from ops.yaml into `_generated/tensor_methods.py`
and mixed in as the base class `TensorMethods`.
"""
from __future__ import annotations

import warnings

import numpy as np

from tensorplay import _capture_hooks, _removed
from tensorplay import _dtype as dt
from tensorplay import _tensor_factory as factory
from tensorplay import _subclass as subclass
from tensorplay._cuda_state import as_torch
from tensorplay._formatting import tensor_repr
from tensorplay._frontdoor import wrap_dim
from tensorplay._generated import functional as F
from tensorplay._generated.tensor_methods import TensorMethods
from tensorplay._device import CPU
from tensorplay._impl import TensorImpl, impl_from_array
from tensorplay.autograd.view_impl import ViewImpl
from tensorplay._indexing import getitem, setitem
from tensorplay._legacy_types import construct, is_size, parse_type, type_name
from tensorplay._tensor_base import TensorBase
from tensorplay.autograd import api as autograd_api
from tensorplay.autograd.engine import tensor_backward
from tensorplay.errors import DataDependentError, LayoutError, ShapeError
from tensorplay._layout import sparse_coo
from tensorplay._memory_format import contiguous_format
from tensorplay.kernel_support.layout import is_in_format
from tensorplay.sparse import coo


class Tensor(TensorMethods, TensorBase):
    __slots__ = ()

    # Comparison dunders are generated; identity hashing keeps tensors usable as dict keys.
    __hash__ = object.__hash__

    def __new__(cls, *args, **kwargs):
        """`tp.Tensor([1, 2])` copies data into a tensor of the default dtype, and
        `tp.Tensor(2, 3)` allocates an uninitialised 2x3 one, as torch.Tensor does."""
        if kwargs or (args and not is_size(args) and not isinstance(args[0], Tensor)):
            return factory.tensor(*args, dtype=dt.get_default_dtype(), **kwargs)
        return construct(args, dt.get_default_dtype(), None)

    # ---- subclasses (tensorplay/_subclass.py) ---------------------------------------
    @staticmethod
    def _make_subclass(cls, data, require_grad=False):
        """An instance of the subclass `cls` sharing `data`'s memory."""
        return subclass.make_subclass(cls, data, require_grad)

    @staticmethod
    def _make_wrapper_subclass(cls, size, strides=None, storage_offset=0, dtype=None,
                               device=None, requires_grad=False):
        """An instance of `cls` with this metadata and no memory (it wraps another tensor)."""
        return subclass.make_wrapper_subclass(cls, size, strides, storage_offset, dtype,
                                              device, requires_grad)

    # ---- metadata -----------------------------------------------------------------
    @property
    def shape(self):
        return Size(self._impl.sizes)

    def size(self, dim=None):
        sizes = self._impl.sizes
        if dim is None:
            return Size(sizes)
        return sizes[_wrap_dim("size", dim, len(sizes))]

    def stride(self, dim=None):
        strides = self._impl.strides
        if dim is None:
            return tuple(strides)
        return strides[_wrap_dim("stride", dim, len(strides))]

    def dim(self):
        return len(self._impl.sizes)

    ndimension = dim

    @property
    def ndim(self):
        return len(self._impl.sizes)

    def numel(self):
        return self._impl.numel()

    nelement = numel

    def element_size(self):
        return self._impl.dtype.itemsize

    def storage_offset(self):
        return self._impl.offset

    def is_contiguous(self, memory_format=None):
        """Row-major (the default), or laid out as `memory_format` asks (tp.channels_last:
        a 4-D tensor stored NHWC)."""
        if memory_format is None or memory_format is contiguous_format:
            return self._impl.is_contiguous
        impl = self._impl
        return is_in_format("is_contiguous", impl.sizes, impl.strides, memory_format)

    @property
    def dtype(self):
        return self._impl.dtype

    @property
    def device(self):
        return self._impl.device

    @property
    def is_cuda(self):
        return self._impl.device.type == "cuda"

    @property
    def is_meta(self):
        return self._impl.device.type == "meta"

    @property
    def is_cpu(self):
        return self._impl.device.type == "cpu"

    # PyTorch's predicates for the devices and layouts TensorPlay does not have (Intel
    # GPUs, Apple's MPS, oneDNN's blocked layout, Vulkan, Graphcore, XLA, MAIA, MTIA,
    # CSR): a TensorPlay tensor lives on 'cpu', 'cuda' or 'meta', so each is False, the
    # truth that scripts testing `x.is_mps` before a device-specific path expect.
    @property
    def is_xpu(self):
        return self._impl.device.type == "xpu"

    @property
    def is_mps(self):
        return self._impl.device.type == "mps"

    @property
    def is_mkldnn(self):
        return False    # no oneDNN layout: every tensor here is strided or sparse COO

    @property
    def is_vulkan(self):
        return self._impl.device.type == "vulkan"

    @property
    def is_ipu(self):
        return self._impl.device.type == "ipu"

    @property
    def is_xla(self):
        return self._impl.device.type == "xla"

    @property
    def is_maia(self):
        return self._impl.device.type == "maia"

    @property
    def is_mtia(self):
        return self._impl.device.type == "mtia"

    @property
    def is_sparse_csr(self):
        return False    # sparse tensors here are COO

    def is_distributed(self):
        return False    # PyTorch's legacy THD check, False there too

    def is_floating_point(self):
        return self._impl.dtype.is_floating_point

    def is_complex(self):
        return self._impl.dtype.is_complex

    def conj(self):
        """The complex conjugate (a copy: conj is eager here); a real tensor is its own,
        returned as it is without entering the dispatcher, as PyTorch's conj does for one
        (every product's backward formula conjugates the other factor: `grad *
        other.conj()` must cost a real gradient nothing)."""
        if not self._impl.dtype.is_complex:
            return self
        return F.conj(self)

    def is_conj(self):
        """False: conj is eager here (tensorplay/composite/complex.py says why)."""
        return False

    def is_neg(self):
        return False

    # The parts of a complex tensor, as views (x.real of a real tensor is x itself);
    # assigning to them writes into this tensor.
    @property
    def real(self):
        return F.real(self)

    @real.setter
    def real(self, value):
        F.real(self).copy_(value)

    @property
    def imag(self):
        return F.imag(self)

    @imag.setter
    def imag(self, value):
        F.imag(self).copy_(value)

    def is_inference(self):
        return self._impl.inference

    def is_signed(self):
        """Whether the dtype holds negative numbers (not bool, not uint8)."""
        return self._impl.dtype not in (dt.bool, dt.uint8)

    def is_nonzero(self):
        """The truth of a one-element tensor (PyTorch's errors for any other)."""
        n = self._impl.numel()
        if n == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        if n > 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def is_same_size(self, other):
        return self._impl.sizes == other._impl.sizes

    def get_device(self):
        """The device index of a cuda tensor, -1 for a CPU one."""
        device = self._impl.device
        if device.type == "cpu":
            return -1
        return device.index or 0

    @property
    def _version(self):
        return self._impl.version.value

    def data_ptr(self):
        impl = self._impl
        data = impl.storage.data
        if data is None:
            return 0
        if isinstance(data, np.ndarray):
            base = data.__array_interface__["data"][0]
        else:
            base = data.data_ptr()
        return base + impl.offset * impl.dtype.itemsize

    def const_data_ptr(self):
        """data_ptr, for a reader that promises not to write through it (PyTorch's
        read-only spelling; no copy-on-write storage here, so the same address)."""
        return self.data_ptr()

    def resize(self, *sizes):
        """Deprecated (PyTorch warns too): the same elements in a new shape, a view of a
        contiguous self, with reshape's gradient. resize_ changes self in place."""
        warnings.warn("non-inplace resize is deprecated", stacklevel=2)
        return self._deprecated_resize("resize", sizes)

    def resize_as(self, tensor):
        warnings.warn("non-inplace resize_as is deprecated", stacklevel=2)
        return self._deprecated_resize("resize_as", tuple(tensor.shape))

    def _deprecated_resize(self, op, sizes):
        if len(sizes) == 1 and not isinstance(sizes[0], int):
            sizes = tuple(sizes[0])
        n = 1
        for s in sizes:
            n *= s
        if n != self.numel():
            raise ShapeError(f"{op}(): requested resize to {list(sizes)} ({n} elements in "
                              f"total), but the given tensor has a size of {list(self.shape)} "
                              f"({self.numel()} elements): the deprecated {op} can only change "
                              f"the shape, keeping the number of elements", op=op, arg="sizes")
        return self.contiguous().view(sizes)

    def untyped_storage(self):
        return self._impl.storage

    def sizes(self):
        return Size(self._impl.sizes)

    def __getitem__(self, index):
        if type(index) is int and self._impl.sizes:
            # x[i]: exactly what _indexing.getitem makes of a lone int, without walking
            # the general index machinery; on a plain Tensor (no `select` of a subclass to
            # honour) straight into select.int's front door, past its overload matcher.
            if type(self) is Tensor:
                return F._run_select_int(self, 0, index)
            return self.select(0, index)
        return getitem(self, index)

    def __setitem__(self, index, value):
        setitem(self, index, value)

    def __len__(self):
        sizes = self._impl.sizes
        if not sizes:
            raise TypeError("len() of a 0-d tensor")
        return sizes[0]

    def __iter__(self):
        if not self._impl.sizes:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    # ---- transposes ---------------------------------------------------------------
    @property
    def T(self):
        """All dimensions reversed (a view); meant for matrices, as in NumPy."""
        ndim = len(self._impl.sizes)
        if ndim == 0:
            warnings.warn("Tensor.T is deprecated on 0-D tensors. This function is the "
                          "identity in these cases.", UserWarning, stacklevel=2)
        elif ndim != 2:
            warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse "
                          "their shape is deprecated and it will throw an error in a future "
                          "release. Consider `x.mT` to transpose batches of matrices or "
                          "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the "
                          "dimensions of a tensor.", UserWarning, stacklevel=2)
        return self.permute(tuple(range(ndim - 1, -1, -1)))

    @property
    def mT(self):
        """The last two dimensions swapped (a view): a batch of matrices, transposed."""
        _check_matrices("mT", self, batched=True)
        return self.transpose(-2, -1)

    @property
    def H(self):
        """The conjugate transpose of a matrix (for a real one, the transpose: a view)."""
        _check_matrices("H", self, batched=False)
        return self.transpose(-2, -1).conj()

    @property
    def mH(self):
        """The conjugate transpose of a batch of matrices; for real tensors, `mT`."""
        _check_matrices("mH", self, batched=True)
        return self.transpose(-2, -1).conj()

    # ---- new tensors with this one's dtype and device -----------------------------
    def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
        """A copy of `data` with this tensor's dtype and device (unless given); never part
        of `data`'s graph."""
        if isinstance(data, Tensor):
            warnings.warn("To copy construct from a tensor, it is recommended to use "
                          "sourceTensor.detach().clone() or sourceTensor.detach().clone()"
                          ".requires_grad_(True), rather than tensor.new_tensor(sourceTensor).",
                          UserWarning, stacklevel=2)
            data = data.detach()
        dtype, device = self._new_dtype_device(dtype, device)
        return factory.tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        dtype, device = self._new_dtype_device(dtype, device)
        return factory.empty(*size, dtype=dtype, device=device, requires_grad=requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        dtype, device = self._new_dtype_device(dtype, device)
        return factory.zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        dtype, device = self._new_dtype_device(dtype, device)
        return factory.ones(*size, dtype=dtype, device=device, requires_grad=requires_grad)

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
        dtype, device = self._new_dtype_device(dtype, device)
        return factory.full(size, fill_value, dtype=dtype, device=device,
                            requires_grad=requires_grad)

    def new_empty_strided(self, size, stride, *, dtype=None, device=None,
                          requires_grad=False):
        dtype, device = self._new_dtype_device(dtype, device)
        return factory.empty_strided(size, stride, dtype=dtype, device=device,
                                     requires_grad=requires_grad)

    def new(self, *args, device=None):
        """The legacy constructor, in this tensor's dtype: `t.new(2, 3)` (uninitialised),
        `t.new([1, 2])` (data), `t.new(other)` (other itself, as PyTorch returns it),
        `t.new()` (empty)."""
        if len(args) == 1 and isinstance(args[0], Tensor):
            return args[0]
        if len(args) == 1 and isinstance(args[0], Size):
            args = tuple(args[0])
        elif len(args) == 1 and not isinstance(args[0], int):
            return self.new_tensor(args[0], device=device)       # a list is data
        return self.new_empty(*args, device=device) if args else self.new_empty(0, device=device)

    # torch.Tensor.solve, eig, symeig, lstsq: removed from PyTorch, they raise its message
    solve = _removed.METHODS["solve"]
    eig = _removed.METHODS["eig"]
    symeig = _removed.METHODS["symeig"]
    lstsq = _removed.METHODS["lstsq"]

    @property
    def is_nested(self):
        return False     # no nested (jagged) tensors here

    @property
    def is_quantized(self):
        return False     # no quantized tensors here

    def _new_dtype_device(self, dtype, device):
        return (self._impl.dtype if dtype is None else dtype,
                self._impl.device if device is None else device)

    def type_as(self, other):
        """This tensor converted to `other`'s dtype (itself when they already match)."""
        return self.to(other.dtype)

    def reshape_as(self, other):
        return self.reshape(other.shape)

    @property
    def itemsize(self):
        return self._impl.dtype.itemsize

    @property
    def nbytes(self):
        return self._impl.numel() * self._impl.dtype.itemsize

    # ---- autograd state -----------------------------------------------------------
    @property
    def requires_grad(self):
        return self._impl.requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        autograd_api.set_requires_grad(self, requires_grad)
        return self

    @property
    def grad(self):
        return self._impl.grad

    @grad.setter
    def grad(self, value):
        _check_assigned_grad(self, value)
        self._impl.grad = value

    @property
    def grad_fn(self):
        # A view's is rebuilt on reading if its base changed in place (view_impl.py).
        return self._impl.grad_fn

    @property
    def is_leaf(self):
        return self._impl.grad_fn is None

    @property
    def retains_grad(self):
        return self._impl.retains_grad

    @property
    def data(self):
        """This tensor's memory outside the graph. Unlike `detach()`, in-place changes
        through it are not counted by this tensor's version counter (as in PyTorch: the
        old way to update weights without autograd noticing)."""
        src = self._impl
        return wrap(TensorImpl(src.storage, src.sizes, src.strides, src.offset, src.dtype,
                               src.device, inference=src.inference, array=src._array))

    @data.setter
    def data(self, value):
        autograd_api.set_data(self, value)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        tensor_backward(self, gradient, retain_graph, create_graph, inputs)

    def register_hook(self, hook):
        return autograd_api.register_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        return autograd_api.register_post_accumulate_grad_hook(self, hook)

    def retain_grad(self):
        autograd_api.retain_grad(self)

    # ---- conversion ---------------------------------------------------------------
    def numpy(self, *, force=False):
        impl = self._impl
        if _capture_hooks.observer is not None:
            _capture_hooks.values_read(self, "numpy()")
        if impl.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on a tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        if impl.device.type != "cpu":
            if not force:
                raise TypeError(f"can't convert {impl.device} tensor to numpy; use "
                                f".cpu() to copy it to host memory first")
            return self.detach().cpu().numpy()
        return impl.array()

    def __array__(self, dtype=None, copy=None):
        if _capture_hooks.observer is not None:
            _capture_hooks.values_read(self, "__array__()")
        arr = _host_array(self)
        return arr.astype(dtype) if dtype is not None else arr

    def item(self):
        impl = self._impl
        if impl.numel() != 1:
            raise RuntimeError(f"item(): a Tensor with {impl.numel()} elements cannot be "
                               f"converted to Scalar")
        _check_has_values(self, "item")
        value = _host_array(self).reshape(()).item()
        return float(value) if impl.dtype is dt.bfloat16 else value

    def tolist(self):
        _check_has_values(self, "tolist")
        arr = _host_array(self)
        if self._impl.dtype is dt.bfloat16:
            arr = arr.astype(np.float32)
        return arr.tolist()

    def __bool__(self):
        if _capture_hooks.observer is not None:
            _capture_hooks.values_read(self, "bool()")
        if self._impl.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __float__(self):
        if _capture_hooks.observer is not None:
            _capture_hooks.values_read(self, "float()")
        return float(self.item())

    def __int__(self):
        if _capture_hooks.observer is not None:
            _capture_hooks.values_read(self, "int()")
        return int(self.item())

    def __index__(self):
        if _capture_hooks.observer is not None:
            _capture_hooks.values_read(self, "__index__()")
        if self._impl.dtype.is_floating_point or self._impl.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted "
                            "to an index")
        return int(self.item())

    def __dlpack__(self, stream=None, **kwargs):
        if self._impl.device.type == "cuda":
            return as_torch(self).__dlpack__(stream=stream)
        return self._impl.array().__dlpack__(**kwargs)

    def __dlpack_device__(self):
        if self._impl.device.type == "cuda":
            return as_torch(self).__dlpack_device__()   # host memory in interpreter mode
        return (1, 0)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False):
        return self.to("cuda" if device is None else device, non_blocking=non_blocking)

    def type(self, dtype=None, non_blocking=False):
        """With no argument, the legacy type name ('tensorplay.FloatTensor'); otherwise this
        tensor converted to a dtype, a typed class (`tp.LongTensor`) or its name
        ('torch.cuda.FloatTensor' and 'tensorplay.FloatTensor' both work)."""
        impl = self._impl
        if dtype is None:
            return type_name(impl.dtype, impl.device.type)
        if isinstance(dtype, dt.dtype):
            return self.to(dtype, non_blocking=non_blocking)
        dtype, device_type = parse_type(dtype)
        device = impl.device if impl.device.type == device_type else device_type
        return self.to(device, dtype, non_blocking=non_blocking)

    # ---- layout (sparse COO tensors: tensorplay/sparse) ------------------------------
    @property
    def layout(self):
        return self._impl.layout

    @property
    def is_sparse(self):
        return self._impl.layout is sparse_coo

    def to_dense(self, dtype=None, *, masked_grad=None):
        out = coo.to_dense(self)
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        if layout not in (None, sparse_coo) or blocksize is not None or dense_dim is not None:
            raise LayoutError(f"to_sparse(): only the sparse_coo layout is supported, but got "
                              f"layout={layout}", op="to_sparse", arg="layout")
        return coo.to_sparse(self, sparse_dim)

    def to_sparse_coo(self):
        return coo.to_sparse(self)

    def sparse_mask(self, mask):
        """This dense tensor's entries at the coordinates of the sparse `mask`."""
        return coo.sparse_mask(self, mask)

    def coalesce(self):
        return coo.coalesce(self)

    def is_coalesced(self):
        return coo.require_sparse("is_coalesced", self).coalesced

    def _nnz(self):
        return coo.require_sparse("_nnz", self).nnz

    def sparse_dim(self):
        if self._impl.layout is not sparse_coo:
            return 0
        return self._impl.sparse_dim

    def dense_dim(self):
        if self._impl.layout is not sparse_coo:
            return len(self._impl.sizes)
        return len(self._impl.sizes) - self._impl.sparse_dim

    def _indices(self):
        """The coordinates, duplicates and order as stored (no gradient)."""
        return coo.require_sparse("_indices", self).indices

    def _values(self):
        """The values, duplicates and order as stored; gradients flow back to this tensor."""
        coo.require_sparse("_values", self)
        return coo.values_of(self)

    def indices(self):
        if not coo.require_sparse("indices", self).coalesced:
            raise LayoutError("indices(): Cannot get indices on an uncoalesced tensor, please "
                              "call .coalesce() first", op="indices", arg="self")
        return self._indices()

    def values(self):
        if not coo.require_sparse("values", self).coalesced:
            raise LayoutError("values(): Cannot get values on an uncoalesced tensor, please "
                              "call .coalesce() first", op="values", arg="self")
        return self._values()

    def __repr__(self):
        if self._impl.layout is sparse_coo:
            return coo.sparse_repr(self)
        return tensor_repr(self)

    def __format__(self, spec):
        """A 0-dim tensor formats as its Python number (`f"{loss:.3f}"`, and `f"{loss}"`
        too); any other tensor formats as its repr, and only with an empty spec."""
        if self._impl.sizes == ():
            return format(self.item(), spec)
        if spec:
            raise TypeError("unsupported format string passed to Tensor.__format__")
        return repr(self)

    def __reduce_ex__(self, protocol):
        return (_rebuild, (self.detach().cpu().numpy().copy(), str(self.device),
                           self._impl.requires_grad))

    def __deepcopy__(self, memo):
        out = self.detach().clone()
        if self._impl.requires_grad:
            out.requires_grad_(True)
        memo[id(self)] = out
        return out


_DENSE_IMPLS = (TensorImpl, ViewImpl)   # not a subclass's, a batched or a sparse impl


def _host_array(tensor):
    """The values item(), tolist() and __array__ read, as a NumPy array: a dense CPU
    tensor's own (`detach().cpu()` would dispatch two ops to make an alias of it: 10 us,
    most of an optimizer's per-parameter step counter read), else `detach().cpu()`'s (a
    tensor on another device, of a subclass or under vmap)."""
    impl = tensor._impl
    if type(impl) in _DENSE_IMPLS and impl.device.type == "cpu":
        return impl.array()
    return tensor.detach().cpu()._impl.array()


def _check_has_values(tensor, op):
    """item() and tolist() read values; a meta tensor has only sizes and a dtype. A
    running graph capture hears of the read (tensorplay/_capture_hooks.py)."""
    if _capture_hooks.observer is not None:
        _capture_hooks.values_read(tensor, f"{op}()")
    if tensor._impl.device.type == "meta":
        raise DataDependentError(f"{op}(): argument 'self' is a meta tensor, which has no "
                                 f"values to read", op=op, arg="self")


def _check_assigned_grad(tensor, grad):
    """`x.grad = g` accepts None or a tensor of x's size, dtype and device (PyTorch's
    checks and messages)."""
    if grad is None:
        return
    if not isinstance(grad, Tensor):
        raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                        f"{type(grad).__name__}")
    if grad is tensor:
        raise RuntimeError("can't assign Variable as its own grad")
    impl, g = tensor._impl, grad._impl
    if g.sizes != impl.sizes:
        raise RuntimeError(f"attempting to assign a gradient of size '{list(g.sizes)}' to a "
                           f"tensor of size '{list(impl.sizes)}'. Please ensure that the "
                           f"gradient and the tensor are the same size")
    if g.dtype is not impl.dtype:
        raise RuntimeError(f"attempting to assign a gradient with dtype '{g.dtype.name}' to a "
                           f"tensor with dtype '{impl.dtype.name}'. The gradient must match "
                           f"the tensor's dtype")
    if g.device.type != impl.device.type:
        raise RuntimeError(f"attempting to assign a gradient with device type "
                           f"'{g.device.type}' to a tensor with device type "
                           f"'{impl.device.type}'. Please ensure that the gradient and the "
                           f"tensor are on the same device")


def _rebuild(array, device, requires_grad):
    """Unpickling: `array` is a fresh C-contiguous copy, so it becomes the tensor's memory
    (what `tp.from_numpy` makes of it). Made here, not through the creation functions:
    a process that unpickles a tensor may not have loaded them."""
    t = wrap(impl_from_array(array, dt.from_numpy_dtype(array.dtype), CPU, False))
    if device != "cpu":
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


class Size(tuple):
    """`tensor.shape`: a tuple that prints like torch.Size."""

    def __repr__(self):
        return f"tensorplay.Size([{', '.join(map(str, self))}])"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n


def _check_matrices(name, t, *, batched):
    """`t.mT`/`t.mH` need at least 2 dimensions, `t.H` exactly 2 (PyTorch's messages)."""
    ndim = len(t._impl.sizes)
    if batched and ndim < 2:
        raise RuntimeError(f"tensor.{name} is only supported on matrices or batches of "
                           f"matrices. Got {ndim}-D tensor.")
    if not batched and ndim != 2:
        raise RuntimeError(f"tensor.{name} is only supported on matrices (2-D tensors). Got "
                           f"{ndim}-D tensor." + (" For batches of matrices, consider using "
                                                  "tensor.mH" if ndim > 2 else ""))


def _wrap_dim(op, dim, ndim):
    return wrap_dim(op, "dim", dim, ndim)


_new = object.__new__


def wrap(impl):
    """Make a Tensor for an impl (the fast path every kernel result takes)."""
    t = _new(Tensor)
    t._impl = impl
    return t

