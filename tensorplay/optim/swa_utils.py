"""`tp.optim.swa_utils`: weight averaging (PyTorch's torch.optim.swa_utils).

Stochastic Weight Averaging (Izmailov et al., 2018) keeps, beside the model being trained,
a running average of its weights over the last part of training; the average often
generalizes better than any single iterate. An exponential moving average (EMA) of the
weights is the same machinery with another averaging rule.

    swa_model = AveragedModel(model)                       # a copy, n_averaged = 0
    swa_scheduler = SWALR(optimizer, swa_lr=0.05)          # anneal lr to a constant
    for epoch in range(...):
        train_one_epoch(model, optimizer)
        if epoch >= swa_start:
            swa_model.update_parameters(model)             # fold the weights into the average
            swa_scheduler.step()
    update_bn(loader, swa_model)                           # averaged weights need new BN statistics

The averaging rules: swa, avg + (x - avg) / (n + 1) (the running mean of all iterates
seen), and ema with decay d, d avg + (1 - d) x. `get_*_avg_fn` act on one tensor and
return the new average; `get_*_multi_avg_fn` update a list of tensors in place."""
from __future__ import annotations

import itertools
import math
from copy import deepcopy

import tensorplay as tp
from tensorplay.nn import Module
from tensorplay.nn.modules.normalization import _BatchNorm
from tensorplay.optim.lr_scheduler import LRScheduler

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         "[0,1] range.")


def _is_float(t):
    return t.dtype.is_floating_point or t.dtype.is_complex


def get_ema_multi_avg_fn(decay=0.999):
    """In place, for lists of tensors: ema <- lerp(ema, x, 1 - decay)."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _):
        with tp.no_grad():
            if _is_float(ema_param_list[0]):
                for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                    p_ema.lerp_(p_model, 1 - decay)
            else:          # integer buffers: lerp needs floats
                for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """In place, for lists of tensors: avg <- lerp(avg, x, 1 / (n + 1))."""

    def swa_update(averaged_param_list, current_param_list, num_averaged):
        with tp.no_grad():
            if _is_float(averaged_param_list[0]):
                weight = float(1 / (num_averaged + 1))
                for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
                    p_avg.lerp_(p_model, weight)
            else:
                for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
                    diff = p_model - p_avg
                    if isinstance(num_averaged, tp.Tensor):
                        p_avg.addcdiv_(diff, num_averaged + 1)
                    else:
                        p_avg.add_(diff, alpha=1.0 / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """For one tensor: returns decay * ema + (1 - decay) * x."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with tp.no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """For one tensor: returns the running mean avg + (x - avg) / (n + 1)."""

    def swa_update(averaged_param, current_param, num_averaged):
        with tp.no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of `model` whose parameters hold an average of `model`'s over the calls to
    `update_parameters`. The first call copies; later ones apply `avg_fn` (one tensor at
    a time) or `multi_avg_fn` (lists), the running mean (SWA) by default. Buffers
    (BatchNorm's statistics) are copied from the model unless `use_buffers=True`, which
    averages them too. `n_averaged` counts the models folded in."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tp.tensor(0, dtype=tp.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        with tp.no_grad():
            self._update_parameters(model)

    def _update_parameters(self, model):
        if self.use_buffers:
            self_param = itertools.chain(self.module.parameters(), self.module.buffers())
            model_param = itertools.chain(model.parameters(), model.buffers())
        else:
            self_param, model_param = self.parameters(), model.parameters()
        self_detached, model_detached = [], []
        copy_param = bool(self.n_averaged == 0)
        for p_averaged, p_model in zip(self_param, model_param):
            p_model_ = p_model.detach().to(p_averaged.device)
            self_detached.append(p_averaged.detach())
            model_detached.append(p_model_)
            if copy_param:
                p_averaged.detach().copy_(p_model_)
        if bool(self.n_averaged > 0):
            if self.multi_avg_fn is not None or self.avg_fn is None:
                # lists of tensors that share a device and dtype, as PyTorch groups them
                groups = {}
                for p_avg, p_model in zip(self_detached, model_detached):
                    key = (str(p_avg.device), p_avg.dtype)
                    groups.setdefault(key, ([], []))
                    groups[key][0].append(p_avg)
                    groups[key][1].append(p_model)
                for (device, _), (self_params, model_params) in groups.items():
                    n_averaged = self.n_averaged.to(self_params[0].device)
                    if self.multi_avg_fn:
                        self.multi_avg_fn(self_params, model_params, n_averaged)
                    elif device.startswith("cuda"):
                        # PyTorch's foreach path (lerp) where foreach kernels exist
                        get_swa_multi_avg_fn()(self_params, model_params, n_averaged)
                    else:
                        avg_fn = get_swa_avg_fn()
                        for p_avg, p_model in zip(self_params, model_params, strict=True):
                            p_avg.copy_(avg_fn(p_avg, p_model, n_averaged))
            else:
                for p_avg, p_model in zip(self_detached, model_detached, strict=True):
                    n_averaged = self.n_averaged.to(p_avg.device)
                    p_avg.detach().copy_(self.avg_fn(p_avg.detach(), p_model, n_averaged))
        if not self.use_buffers:
            # the buffers follow the model (update_bn recomputes BatchNorm's afterwards)
            for b_swa, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged += 1


def update_bn(loader, model, device=None):
    """Recompute BatchNorm's running statistics for `model` (averaged weights change the
    activations, so the statistics of the iterates do not fit): one pass over `loader`
    in training mode with momentum None, i.e. a plain average over its batches."""
    with tp.no_grad():
        momenta = {}
        for module in model.modules():
            if isinstance(module, _BatchNorm):
                module.reset_running_stats()
                momenta[module] = module.momentum
        if not momenta:
            return
        was_training = model.training
        model.train()
        for module in momenta:
            module.momentum = None
        for input in loader:
            if isinstance(input, (list, tuple)):
                input = input[0]
            if device is not None:
                input = input.to(device)
            model(input)
        for bn_module in momenta:
            bn_module.momentum = momenta[bn_module]
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr to `swa_lr` over `anneal_epochs` steps ("cos" or "linear"),
    then hold it there: SWA averages iterates taken at a constant (high) lr."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        if isinstance(swa_lr, (list, tuple)):
            if len(swa_lr) != len(optimizer.param_groups):
                raise ValueError(
                    "swa_lr must have the same length as optimizer.param_groups. swa_lr has "
                    f"{len(swa_lr)} values, param_groups has {len(optimizer.param_groups)}.")
            swa_lrs = list(swa_lr)
        else:
            swa_lrs = [swa_lr] * len(optimizer.param_groups)
        for value, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = value
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', "
                             f"instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        # invert lr = swa_lr alpha + lr0 (1 - alpha): the lr the annealing started from
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        # Recursive, as PyTorch's: recover the starting lr from the group's current lr and
        # the previous step's alpha, then blend with this step's.
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs, strict=True)]

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self):
        return {key: value for key, value in self.__dict__.items()
                if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
