"""The public `tp.*` namespace, assembled once: dtypes, creation, the generated
functional API, autograd, and the backends registered with the dispatcher."""
from tensorplay._dtype import (  # noqa: F401
    dtype, bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
    complex64, complex128, promote_types, get_default_dtype, set_default_dtype, can_cast,
)
from tensorplay._dtype import float16 as half, float32 as float, float64 as double  # noqa
from tensorplay._dtype import int64 as long, int32 as int, int16 as short  # noqa
from tensorplay._dtype import complex64 as cfloat, complex128 as cdouble  # noqa
from tensorplay._device import device, set_default_device, get_default_device  # noqa: F401
from tensorplay._promotion import result_type  # noqa: F401
from tensorplay._tensor import Tensor, Size  # noqa: F401
from tensorplay._legacy_types import CPU_TYPES as _CPU_TYPES
from tensorplay import autograd  # noqa: F401
from tensorplay.autograd.grad_mode import (  # noqa: F401
    no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,
    is_inference_mode_enabled,
)
from tensorplay._generated import functional as _functional
from tensorplay._creation import (  # noqa: F401
    tensor, as_tensor, from_numpy, from_dlpack, scalar_tensor, empty, empty_strided, zeros, ones,
    full, empty_like, zeros_like, ones_like, full_like, arange, linspace, logspace, eye, rand,
    randn, randint, randperm, rand_like, randn_like, randint_like, tril_indices, triu_indices,
    asarray, empty_permuted,
)
from tensorplay._creation import normal  # noqa: F401
from tensorplay._random import (  # noqa: F401
    Generator, manual_seed, seed, initial_seed, default_generator, get_rng_state, set_rng_state,
)
from tensorplay import dispatch, library, errors, cuda, profiler, nn  # noqa: F401
from tensorplay import optim, utils, testing, accelerator, linalg, special, distributions  # noqa: F401
from tensorplay import fft  # noqa: F401  (tp.fft, torch.fft's namespace)
from tensorplay import functional, random, version  # noqa: F401  (torch.functional, ...)
from tensorplay._formatting import set_printoptions, get_printoptions  # noqa: F401
from tensorplay._runtime import (  # noqa: F401
    set_num_threads, get_num_threads, use_deterministic_algorithms,
    are_deterministic_algorithms_enabled, is_deterministic_algorithms_warn_only_enabled,
)
from tensorplay.serialization import save, load  # noqa: F401
# sparse COO tensors (tensorplay/sparse)
from tensorplay import sparse  # noqa: F401
from tensorplay._layout import layout, strided, sparse_coo  # noqa: F401
from tensorplay.sparse.coo import sparse_coo_tensor  # noqa: F401
from tensorplay import func  # noqa: F401  (tp.func: grad, vjp, jacrev, functional_call...)
from tensorplay.func import vmap  # noqa: F401  (tp.vmap is tp.func.vmap)
from tensorplay import amp, cpu  # noqa: F401
from tensorplay import backends, onnx, serialization  # noqa: F401  (torch.backends, ...)
from tensorplay import export  # noqa: F401  (torch.export: graph capture)
from tensorplay import compiler  # noqa: F401  (torch.compiler)
from tensorplay.compiler.frontend import compile  # noqa: F401,A001  (torch.compile)
from tensorplay.amp import (  # noqa: F401
    autocast, get_autocast_dtype, is_autocast_enabled, set_autocast_dtype, set_autocast_enabled,
)
from tensorplay.dispatch.python_key import ops  # noqa: F401  (tp.ops.mm.default, as torch.ops)
from tensorplay import _backend_loading

_backend_loading.load_default()
# forward-mode AD's kernel at the ForwardAD key of every op (it reads the generated
# tangent functions, so it comes after the backends)
from tensorplay.autograd import forward_mode as _forward_mode  # noqa: E402
from tensorplay._generated.forward_formulas import FORWARD as _FORWARD  # noqa: E402
_forward_mode.register(_FORWARD)

for _name in _functional.FUNCTIONS:
    globals()[_name] = getattr(_functional, _name)
del _name

# PyTorch's other names of two sparse products (not ops: Python-level names in torch too)
saddmm = sspaddmm     # noqa: F821 (generated above)
hsmm = hspmm          # noqa: F821

from tensorplay._window_functions import (  # noqa: E402,F401
    bartlett_window, blackman_window, hamming_window, hann_window, kaiser_window,
)
from tensorplay import _removed  # noqa: E402
globals().update(_removed.FUNCTIONS)      # torch.solve, eig, symeig, lstsq, matrix_rank
from tensorplay.autograd.anomaly_mode import (  # noqa: E402,F401
    is_anomaly_check_nan_enabled, is_anomaly_enabled,
)


def set_anomaly_enabled(enabled, check_nan=True):
    autograd.set_detect_anomaly(enabled, check_nan)


def broadcast_shapes(*shapes):
    """The shape tensors of these shapes broadcast to (PyTorch's rules; an int is a 1-D
    shape), without making any tensor."""
    from tensorplay.kernel_support.checks import broadcast
    named = [(f"shape {i}", (s,) if isinstance(s, _builtins.int) else tuple(s))
             for i, s in enumerate(shapes)]
    return Size(broadcast("broadcast_shapes", named) if named else ())


def typename(obj):
    """`tensorplay.FloatTensor` for a tensor (its legacy type name), else the class's
    qualified name (a builtin's bare name), as torch.typename."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(type(obj), "__module__", "") or ""
    name = type(obj).__qualname__
    return name if module in ("", "builtins") else f"{module}.{name}"


def range(start=0, end=None, step=1, *, dtype=None, device=None,   # noqa: A001
          requires_grad=False):
    """Deprecated in PyTorch (use arange): start, start + step, ... up to end *included*,
    in the default float dtype."""
    import warnings
    warnings.warn("torch.range is deprecated and will be removed in a future release "
                  "because its behavior is inconsistent with Python's range builtin. "
                  "Instead, use torch.arange, which produces values in [start, end).",
                  UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    count = _math.floor((end - start) / step) + 1
    values = [start + i * step for i in _builtins.range(_builtins.max(count, 0))]
    return tensor(values, dtype=dtype or get_default_dtype(), device=device,  # noqa: F821
                  requires_grad=requires_grad)


def fill(input, value):
    """A new tensor like `input`, every element `value` (the out-of-place fill_)."""
    return input.clone().fill_(value)


def addmv_(input, mat, vec, *, beta=1, alpha=1):
    return input.addmv_(mat, vec, beta=beta, alpha=alpha)


spmm = mm     # noqa: F821 (torch.spmm: the sparse @ dense product mm serves)
GradScaler = amp.GradScaler

# nn functions that PyTorch also serves as torch.conv2d, torch.alpha_dropout, ...
from tensorplay.nn import _torch_namespace  # noqa: E402
globals().update(_torch_namespace.names())


def is_tensor(obj):
    return isinstance(obj, Tensor)


def get_device(input):
    """The device index of a cuda tensor, -1 for a CPU one (Tensor.get_device)."""
    return input.get_device()


def numel(t):
    return t.numel()


def is_nonzero(input):
    return input.is_nonzero()


def is_same_size(input, other):
    return input.is_same_size(other)


def is_signed(input):
    return input.is_signed()


# The typed classes of old PyTorch (tensorplay/_legacy_types.py): tp.FloatTensor([1, 2]).
FloatTensor = _CPU_TYPES[float32]
DoubleTensor = _CPU_TYPES[float64]
HalfTensor = _CPU_TYPES[float16]
BFloat16Tensor = _CPU_TYPES[bfloat16]
LongTensor = _CPU_TYPES[int64]
IntTensor = _CPU_TYPES[int32]
ShortTensor = _CPU_TYPES[int16]
ByteTensor = _CPU_TYPES[uint8]
CharTensor = _CPU_TYPES[int8]
BoolTensor = _CPU_TYPES[bool]


# ---- constants, dtype limits and predicates that torch programs reach for ---------------
# NOTE: `float`, `int` and `bool` in this module are tp's dtypes (torch.float is float32),
# so Python's own conversions are reached through `builtins` here.
import builtins as _builtins  # noqa: E402
import math as _math  # noqa: E402

import numpy as _np  # noqa: E402

pi = _math.pi
e = _math.e
inf = _math.inf
nan = _math.nan
newaxis = None


def is_floating_point(input):
    if not isinstance(input, Tensor):
        raise TypeError(f"is_floating_point(): argument 'input' (position 1) must be Tensor, "
                        f"not {type(input).__name__}")
    return input.is_floating_point()


def is_complex(input):
    if not isinstance(input, Tensor):
        raise TypeError(f"is_complex(): argument 'input' (position 1) must be Tensor, "
                        f"not {type(input).__name__}")
    return input.is_complex()


def is_conj(input):
    """False: conj is eager in TensorPlay (there is no conjugate bit)."""
    return input.is_conj()


def is_neg(input):
    return input.is_neg()


class finfo:
    """The numerical limits of a floating dtype (the default dtype when none is given):
    `tp.finfo(tp.float32).eps`. Read from NumPy's (ml_dtypes' for bfloat16) `finfo`."""

    def __init__(self, type=None):
        import ml_dtypes
        type = get_default_dtype() if type is None else type
        if not type.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use "
                            "torch.iinfo to handle 'torch.finfo'")
        info = ml_dtypes.finfo(type.np)
        self.bits = type.itemsize * 8
        self.eps = _builtins.float(info.eps)
        self.max = _builtins.float(info.max)
        self.min = _builtins.float(info.min)
        self.tiny = _builtins.float(info.smallest_normal)
        self.smallest_normal = self.tiny
        self.resolution = 10.0 ** -_builtins.int(info.precision)
        self.dtype = type.name

    def __eq__(self, other):
        return isinstance(other, finfo) and self.dtype == other.dtype

    __hash__ = None

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """The limits of an integer dtype: `tp.iinfo(tp.int32).max`."""

    def __init__(self, type):
        if type is bool:   # tp.bool
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if type.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo "
                            "to handle 'torch.iinfo'")
        info = _np.iinfo(type.np)
        self.bits = type.itemsize * 8
        self.max = _builtins.int(info.max)
        self.min = _builtins.int(info.min)
        self.dtype = type.name

    def __eq__(self, other):
        return isinstance(other, iinfo) and self.dtype == other.dtype

    __hash__ = None

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"

# Memory formats: the layout asked of a copy (`x.clone(memory_format=tp.contiguous_format)`).
from tensorplay._memory_format import (  # noqa: E402,F401
    memory_format, preserve_format, contiguous_format, channels_last,
)
