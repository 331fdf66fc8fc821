"""The public `tp.*` namespace, assembled once: dtypes, creation, the generated
functional API, autograd, and the backends registered with the dispatcher."""
from tensorplay._dtype import (  # noqa: F401
    dtype, bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
    promote_types, get_default_dtype, set_default_dtype, can_cast,
)
from tensorplay._dtype import float16 as half, float32 as float, float64 as double  # noqa
from tensorplay._dtype import int64 as long, int32 as int, int16 as short  # noqa
from tensorplay._device import device  # noqa: F401
from tensorplay._promotion import result_type  # noqa: F401
from tensorplay._tensor import Tensor, Size  # noqa: F401
from tensorplay import autograd  # noqa: F401
from tensorplay.autograd.grad_mode import (  # noqa: F401
    no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,
    is_inference_mode_enabled,
)
from tensorplay._generated import functional as _functional
from tensorplay._creation import (  # noqa: F401
    tensor, as_tensor, from_numpy, from_dlpack, scalar_tensor, empty, empty_strided, zeros, ones,
    full, empty_like, zeros_like, ones_like, full_like, arange, linspace, eye, rand, randn,
    randint, randperm, rand_like, randn_like,
)
from tensorplay._random import Generator, manual_seed, initial_seed, default_generator  # noqa
from tensorplay import dispatch, library, errors, cuda, profiler, nn  # noqa: F401
from tensorplay import optim, utils  # noqa: F401
from tensorplay.serialization import save, load  # noqa: F401
from tensorplay import _backends

_backends.load_default()

for _name in _functional.FUNCTIONS:
    globals()[_name] = getattr(_functional, _name)
del _name


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(t):
    return t.numel()


__version__ = "0.1.0"
