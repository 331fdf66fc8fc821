"""`tp.cpu.amp`: autocast and GradScaler with the device fixed to 'cpu' (PyTorch's older
spelling of `tp.amp.autocast("cpu")`)."""
from tensorplay import _dtype as dt
from tensorplay.amp import autocast_mode, grad_scaler


class autocast(autocast_mode.autocast):
    def __init__(self, enabled=True, dtype=dt.bfloat16, cache_enabled=True):
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(grad_scaler.GradScaler):
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)
