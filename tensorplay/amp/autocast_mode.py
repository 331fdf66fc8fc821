"""`tp.autocast`: run chosen ops in lower precision inside a region, as PyTorch's AMP does.

    with tp.autocast("cpu"):                # bfloat16 on the CPU, float16 on CUDA
        y = model(x)                        # mm/linear/conv in bfloat16, losses in float32

Entering sets this thread's autocast state for the device (`tensorplay/amp/state.py`)
and so adds its `Autocast<backend>` dispatch key to the thread's included keys; every op
call then meets that key first. Ops with a cast policy in ops.yaml (`autocast: lower`)
have a generated wrapper in that slot that casts their inputs and redispatches below
the key; every other op falls through to the slots below. Leaving restores the state
as it was, and leaving the outermost region empties the cache of cast weights.
"""
from __future__ import annotations

import functools
import warnings

from tensorplay import _cuda_state
from tensorplay import _dtype as dt
from tensorplay.amp import state as st
from tensorplay.errors import ArgumentError

# The dtypes each device's autocast supports (PyTorch's checks in torch.autocast).
SUPPORTED_DTYPES = {"cpu": (dt.bfloat16, dt.float16), "cuda": (dt.float16, dt.bfloat16)}


class autocast:
    """Context manager and decorator: autocast the ops of a region for one device type.

    Args:
        device_type: 'cpu' or 'cuda'.
        dtype: the lower precision to use (default: the device's current autocast dtype,
            bfloat16 on the CPU and float16 on CUDA unless set_autocast_dtype changed it).
        enabled: False makes a region where autocast is off (inside an enabled one too).
        cache_enabled: cache the cast of each float32 weight for the region.
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ArgumentError(f"autocast(): argument 'device_type' must be a str, got "
                                f"{type(device_type).__name__}", op="autocast",
                                arg="device_type")
        st.autocast_bit(device_type)
        if dtype is not None and not isinstance(dtype, dt.dtype):
            raise ArgumentError(f"autocast(): argument 'dtype' must be a tensorplay dtype, "
                                f"got {dtype!r}", op="autocast", arg="dtype")
        self.device = device_type
        self.fast_dtype = st.get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = st.is_autocast_cache_enabled() if cache_enabled is None \
            else bool(cache_enabled)
        self._enabled = bool(enabled)
        if not self._enabled:
            return
        # PyTorch warns and runs the region without autocast in these cases.
        if device_type == "cuda" and not _cuda_state.is_usable():
            warnings.warn("User provided device_type of 'cuda', but CUDA (the Triton "
                          "backend) is not available. Disabling")
            self._enabled = False
        elif self.fast_dtype not in SUPPORTED_DTYPES[device_type]:
            names = ", ".join(f"tensorplay.{d.name}" for d in SUPPORTED_DTYPES[device_type])
            warnings.warn(f"In {device_type.upper()} autocast, but the target dtype is not "
                          f"supported. Disabling autocast.\n{device_type.upper()} Autocast "
                          f"only supports dtype of {names} currently.")
            self._enabled = False

    def __enter__(self):
        self._saved = (st.is_autocast_enabled(self.device), st.get_autocast_dtype(self.device),
                       st.is_autocast_cache_enabled())
        st.set_autocast_enabled(self.device, self._enabled)
        if self._enabled:
            st.set_autocast_dtype(self.device, self.fast_dtype)
        st.set_autocast_cache_enabled(self._cache_enabled)
        st.state.nesting += 1
        return self

    def __exit__(self, *exc):
        st.state.nesting -= 1
        if st.state.nesting == 0:
            st.clear_autocast_cache()
        enabled, dtype, cache_enabled = self._saved
        st.set_autocast_enabled(self.device, enabled)
        st.set_autocast_dtype(self.device, dtype)
        st.set_autocast_cache_enabled(cache_enabled)
        return False

    def __call__(self, func):
        """As a decorator: each call of `func` runs in a fresh region with these settings
        (a fresh one, so a recursive call does not overwrite the saved state)."""
        settings = (self.device, self.fast_dtype, self._enabled, self._cache_enabled)

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            region = autocast.__new__(autocast)
            region.device, region.fast_dtype, region._enabled, region._cache_enabled = settings
            with region:
                return func(*args, **kwargs)
        return decorate_autocast

    def __repr__(self):
        return (f"autocast(device_type={self.device!r}, dtype=tensorplay.{self.fast_dtype.name},"
                f" enabled={self._enabled})")


def is_autocast_available(device_type):
    return device_type in st.DEVICE_KEYS


# ---- custom autograd Functions under autocast ------------------------------------------
def _cast(value, device_type, dtype):
    """`value` with every autocast-eligible tensor in it (floating, not float64, on
    `device_type`) cast to `dtype`, through lists, tuples and dicts (PyTorch's _cast)."""
    if getattr(value, "_impl", None) is not None:
        eligible = (value.is_floating_point() and value.device.type == device_type
                    and value.dtype is not dt.float64)
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes)) or type(value).__module__ == "numpy":
        return value
    if isinstance(value, dict):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorate the `forward(ctx, ...)` of an autograd.Function for autocast regions.

    cast_inputs=None: forward's ops run under whatever autocast state the caller has.
    cast_inputs=dtype: inside an autocast region for `device_type`, the floating tensor
    arguments are cast to `dtype` and forward runs with autocast off (a forward written
    for one precision gets it); outside a region nothing changes. Either way `ctx`
    records the state, so that `custom_bwd` runs backward under the same one."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = st.get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = st.is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if st.is_autocast_enabled(device_type):
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs),
                           **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorate the `backward(ctx, ...)` of an autograd.Function decorated with
    `custom_fwd`: backward runs with the autocast state (on/off, dtype) forward had. (No
    cast_inputs here: the gradients arrive in the dtypes of forward's outputs.)"""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast,
                      dtype=ctx._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
