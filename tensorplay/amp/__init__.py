"""Automatic mixed precision: `autocast` regions and the `GradScaler`.

    autocast_mode.py  the `tp.autocast` context manager / decorator, and custom_fwd /
                      custom_bwd for autograd.Functions
    state.py          per-thread autocast state and the dispatch key it switches
    casts.py          the cast policies the generated wrappers call
    grad_scaler.py    loss scaling for lower-precision gradients
    device_amp.py             `tp.cpu.amp` and `tp.cuda.amp` (the device fixed)

Which op gets which policy is declared in ops.yaml (`autocast:`), and the wrappers are
generated into `tensorplay/_generated/autocast_wrappers.py`.
"""
from tensorplay.amp.autocast_mode import (  # noqa: F401
    autocast, custom_bwd, custom_fwd, is_autocast_available,
)
from tensorplay.amp.grad_scaler import GradScaler  # noqa: F401
from tensorplay.amp.state import (  # noqa: F401
    clear_autocast_cache, get_autocast_dtype, is_autocast_cache_enabled, is_autocast_enabled,
    set_autocast_cache_enabled, set_autocast_dtype, set_autocast_enabled,
)

__all__ = ["autocast", "custom_bwd", "custom_fwd", "GradScaler", "is_autocast_available"]
