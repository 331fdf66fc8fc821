"""`tp.amp.GradScaler`: loss scaling, so small float16/bfloat16 gradients do not flush to 0.

    scaler = tp.amp.GradScaler("cpu")
    for x, y in data:
        opt.zero_grad()
        with tp.autocast("cpu"):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()   # gradients come out multiplied by the scale
        scaler.step(opt)                # unscale, then step unless a gradient is inf/NaN
        scaler.update()                 # halve the scale after inf/NaN, double it after
                                        # `growth_interval` clean steps

PyTorch's semantics, method by method (torch/amp/grad_scaler.py), including the order
checks: per optimizer, `unscale_` at most once and `step` at most once between updates.
"""
from __future__ import annotations

import warnings

from tensorplay import _cuda_state
from tensorplay import _dtype as dt
from tensorplay import _tensor_factory as factory
from tensorplay.autograd.grad_mode import no_grad
from tensorplay.errors import AmpError, ArgumentError

# Where an optimizer is in the current iteration (between two update() calls).
READY, UNSCALED, STEPPED = "ready", "unscaled", "stepped"


def _new_optimizer_state():
    return {"stage": READY, "found_inf_per_device": {}}


class GradScaler:
    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True, *, stacklevel=2):
        self._device = str(device)
        if self._device not in ("cpu", "cuda"):
            raise ArgumentError(f"GradScaler(): argument 'device' must be 'cpu' or 'cuda', got "
                                f"{device!r}", op="GradScaler", arg="device")
        self._enabled = bool(enabled)
        # PyTorch's rule and words: a scaler for a cuda device that cannot make tensors
        # (no GPU, and not the Triton interpreter) turns itself off, so a script written
        # for a GPU still runs on a laptop: scale() returns the loss, step() just steps.
        if self._enabled and self._device == "cuda" and not _cuda_state.is_usable():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", stacklevel=stacklevel)
            self._enabled = False
        if self._enabled:
            if not growth_factor > 1.0:
                raise ArgumentError(f"GradScaler(): 'growth_factor' must be > 1.0, got "
                                    f"{growth_factor}", op="GradScaler", arg="growth_factor")
            if not backoff_factor < 1.0:
                raise ArgumentError(f"GradScaler(): 'backoff_factor' must be < 1.0, got "
                                    f"{backoff_factor}", op="GradScaler", arg="backoff_factor")
        self._init_scale = init_scale
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        # The scale lives in a tensor on the device (made on first use), as in PyTorch.
        self._scale = None
        self._growth_tracker = 0
        self._per_optimizer_states = {}

    # ---- scaling ----------------------------------------------------------------------
    def scale(self, outputs):
        """`outputs` times the scale: a tensor, or any nesting of lists/tuples of them."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._scale = factory.full((), float(self._init_scale), dtype=dt.float32,
                                       device=self._device)
        if hasattr(outputs, "_impl"):
            return outputs * self._scale.to(outputs.device)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(v) for v in outputs)
        if hasattr(outputs, "__iter__"):
            return map(self.scale, outputs)
        raise ArgumentError(f"GradScaler.scale(): outputs must be a Tensor or an iterable of "
                            f"Tensors, got {type(outputs).__name__}", op="GradScaler.scale",
                            arg="outputs")

    def _check_scale(self, method):
        if self._scale is None:
            raise AmpError(f"GradScaler.{method}(): attempted {method} but the scale is not "
                           f"set yet. This may indicate your script did not use "
                           f"scaler.scale(loss or outputs) earlier in the iteration.",
                           op=f"GradScaler.{method}")

    def _state_of(self, optimizer):
        return self._per_optimizer_states.setdefault(id(optimizer), _new_optimizer_state())

    def unscale_(self, optimizer):
        """Divide `optimizer`'s gradients by the scale (in place) and record whether any is
        inf or NaN. Once per optimizer per iteration; step() calls it if you did not."""
        if not self._enabled:
            return
        self._check_scale("unscale_")
        state = self._state_of(optimizer)
        if state["stage"] == UNSCALED:
            raise AmpError("GradScaler.unscale_(): unscale_() has already been called on this "
                           "optimizer since the last update().", op="GradScaler.unscale_")
        if state["stage"] == STEPPED:
            raise AmpError("GradScaler.unscale_(): unscale_() is being called after step().",
                           op="GradScaler.unscale_")
        # 1/scale computed in double then rounded, as PyTorch does.
        inv_scale = float(dt.float32.np.type(1.0 / self._scale.item()))
        found = state["found_inf_per_device"]
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    grad = param.grad
                    if grad is None:
                        continue
                    if grad.dtype is dt.float16:
                        raise AmpError("GradScaler.unscale_(): attempting to unscale FP16 "
                                       "gradients.", op="GradScaler.unscale_")
                    device = str(grad.device)
                    bad = not bool(grad.isfinite().all().item())
                    found[device] = found.get(device, False) or bad
                    grad.mul_(inv_scale)
        state["stage"] = UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless done already), then `optimizer.step()` only if no gradient was
        inf/NaN. Returns what step() returned, or None for a skipped step."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise AmpError("GradScaler.step(): closure use is not currently supported if "
                           "GradScaler is enabled.", op="GradScaler.step")
        self._check_scale("step")
        state = self._state_of(optimizer)
        if state["stage"] == STEPPED:
            raise AmpError("GradScaler.step(): step() has already been called since the last "
                           "update().", op="GradScaler.step")
        if state["stage"] == READY:
            self.unscale_(optimizer)
        if not state["found_inf_per_device"]:
            raise AmpError("GradScaler.step(): no inf checks were recorded for this optimizer "
                           "(none of its parameters has a gradient).", op="GradScaler.step")
        retval = None
        if not any(state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = STEPPED
        return retval

    def update(self, new_scale=None):
        """End the iteration: set the scale to `new_scale` if given; otherwise back it off
        after an inf/NaN, or grow it after `growth_interval` clean steps in a row."""
        if not self._enabled:
            return
        self._check_scale("update")
        if new_scale is not None:
            if hasattr(new_scale, "_impl"):
                if new_scale.numel() != 1 or new_scale.requires_grad or \
                        not new_scale.is_floating_point():
                    raise ArgumentError(
                        "GradScaler.update(): new_scale should be a float or a 1-element "
                        "float tensor with requires_grad=False.", op="GradScaler.update",
                        arg="new_scale")
                new_scale = new_scale.item()
            self._scale.fill_(float(new_scale))
        else:
            found = [f for s in self._per_optimizer_states.values()
                     for f in s["found_inf_per_device"].values()]
            if not found:
                raise AmpError("GradScaler.update(): no inf checks were recorded prior to "
                               "update().", op="GradScaler.update")
            if any(found):
                self._scale.mul_(self._backoff_factor)
                self._growth_tracker = 0
            else:
                successful = self._growth_tracker + 1
                if successful == self._growth_interval:
                    grown = self._scale.item() * self._growth_factor
                    if grown != float("inf"):
                        self._scale.fill_(float(dt.float32.np.type(grown)))
                    successful = 0
                self._growth_tracker = successful
        self._per_optimizer_states = {}

    # ---- settings and checkpoints -----------------------------------------------------
    def get_scale(self):
        if not self._enabled:
            return 1.0
        return float(self._init_scale) if self._scale is None else self._scale.item()

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise AmpError("GradScaler.load_state_dict(): the source state dict is empty, "
                           "possibly because it was saved from a disabled instance of "
                           "GradScaler.", op="GradScaler.load_state_dict")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(float(state_dict["scale"]))
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._growth_tracker = state_dict["_growth_tracker"]
