"""`pad`, which PyTorch defines by composition: it picks a padding kernel by mode."""
from __future__ import annotations

from tensorplay._generated import functional as F
from tensorplay.errors import ArgumentError
from tensorplay.meta.padding import PAD_MODES, check_pad_list, check_pad_nd


def pad(self, pad, mode, value):
    """F.pad: constant padding (any number of dims, negative pads crop) or reflect /
    replicate / circular padding of the last 1-3 dims."""
    # Checked here so that errors name pad(), the op the user called.
    if mode == "constant":
        check_pad_list("pad", pad, self.dim())
        return F.constant_pad_nd(self, pad, 0 if value is None else value)
    if mode not in PAD_MODES:
        raise ArgumentError(f"pad(): argument 'mode' must be one of constant, "
                            f"{', '.join(PAD_MODES)}, but got {mode!r}", op="pad", arg="mode")
    if value is not None and value != 0:
        raise ArgumentError(f"pad(): argument 'value' ({value}) is only used with "
                            f"mode='constant', not {mode!r}", op="pad", arg="value")
    check_pad_nd("pad", tuple(self.shape), self.dtype, pad, mode)
    return F._pad_nd(self, pad, mode)


