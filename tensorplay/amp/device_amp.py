"""`tp.cpu.amp` and `tp.cuda.amp`: autocast and GradScaler with the device fixed (PyTorch's
older spelling of `tp.amp.autocast("cpu")`). One builder makes both namespaces, so the
two differ only in their device and default dtype."""
import sys
import types
import warnings

from tensorplay import _dtype as dt
from tensorplay.amp import autocast_mode, grad_scaler


def _namespace(device, default_dtype):
    class autocast(autocast_mode.autocast):
        def __init__(self, enabled=True, dtype=default_dtype, cache_enabled=True):
            super().__init__(device, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    class GradScaler(grad_scaler.GradScaler):
        def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                     growth_interval=2000, enabled=True):
            # PyTorch deprecates this spelling with a FutureWarning, and so do we.
            warnings.warn(f"`torch.{device}.amp.GradScaler(args...)` is deprecated. Please "
                          f"use `torch.amp.GradScaler('{device}', args...)` instead.",
                          FutureWarning, stacklevel=2)
            super().__init__(device, init_scale, growth_factor, backoff_factor,
                             growth_interval, enabled, stacklevel=3)

    name = f"tensorplay.{device}.amp"
    for cls in (autocast, GradScaler):
        cls.__module__, cls.__qualname__ = name, cls.__name__
    extra = {}
    if device == "cuda":      # torch.cuda.amp also has the (deprecated) decorators
        def custom_fwd(fwd=None, *, cast_inputs=None):
            warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                          "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.",
                          FutureWarning, stacklevel=2)
            return autocast_mode.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)

        def custom_bwd(bwd):
            warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                          "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.",
                          FutureWarning, stacklevel=2)
            return autocast_mode.custom_bwd(bwd, device_type="cuda")
        extra = dict(custom_fwd=custom_fwd, custom_bwd=custom_bwd)
    # A real module, registered under its dotted name, so that `import tensorplay.cuda.amp`
    # and `from tensorplay.cuda.amp import GradScaler` work as torch.cuda.amp's do (tp.cuda
    # is a module, not a package, so the import system would not find it otherwise).
    module = types.ModuleType(name, f"`{name}`: autocast and GradScaler for the {device} "
                                    f"device (PyTorch's older spelling of tp.amp).")
    vars(module).update(autocast=autocast, GradScaler=GradScaler, **extra)
    module.__all__ = ["autocast", "GradScaler", *extra]
    sys.modules[name] = module
    return module


cpu_amp = _namespace("cpu", dt.bfloat16)
cuda_amp = _namespace("cuda", dt.float16)
