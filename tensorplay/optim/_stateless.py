"""`tp.optim.swap_in_optimizer_params_and_state` (PyTorch 2.13): a context manager that
runs an optimizer, for the duration of a `with` block, on other parameters and other
state given as a state_dict, then puts its own back.

One optimizer object can so step many models' worth of (parameters, state) pairs, e.g.
parameters held outside any module, or copies being evaluated, without building an
optimizer for each:

    with swap_in_optimizer_params_and_state(opt, {"w": w2, "b": b2}, saved_state_dict):
        opt.step()                  # updates w2, b2 with saved_state_dict's buffers

`swapin_parameters` lists the parameters in the order of the optimizer's groups;
`swapin_optim_state` is an optimizer.state_dict()-style dict (state keyed by the packed
ids of param_groups[*]["params"]). Its per-parameter state dicts are shallow-copied, so
the tensors in them are the ones updated in place."""
from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import NamedTuple

import tensorplay as tp

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


class _GroupSwapinInfo(NamedTuple):
    live_group: dict
    swapin_group: dict
    swapin_params: list


def _validate_state_field(state):
    if not isinstance(state, dict):
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping packed "
            f"parameter ids to per-param state dicts, got {type(state).__name__}.")
    if any(isinstance(k, tp.Tensor) for k in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by "
                           "packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be "
                           "dictionaries.")
    return state


def _validate_param_groups_field(optimizer, param_groups):
    if not isinstance(param_groups, list):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['param_groups'] to be a list "
                           f"of param-group dicts, got {type(param_groups).__name__}.")
    if len(optimizer.param_groups) != len(param_groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than "
                           "the live optimizer.")
    return param_groups


def _validate_group_against_live(idx, group, swapin_group):
    if not isinstance(swapin_group, dict):
        raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
    swapin_param_ids = swapin_group.get("params")
    if not isinstance(swapin_param_ids, list) or not all(
            isinstance(pid, int) for pid in swapin_param_ids):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style "
                           "param_groups[*]['params'] entries keyed by packed parameter ids.")
    if len(group["params"]) != len(swapin_param_ids):
        raise RuntimeError(f"swapin_optim_state param group {idx} has a different number of "
                           "params than the live optimizer param group.")
    swapin_only = [k for k in swapin_group if k not in group]
    live_only = [k for k in group if k not in swapin_group]
    if swapin_only or live_only:
        raise RuntimeError(
            f"{_NAME} requires optimizer.state_dict()-style param group keys to exactly match "
            f"the live optimizer group keys for group {idx}. "
            f"Keys only in swap-in: {swapin_only}. Keys only in live: {live_only}.")
    return swapin_param_ids


def _prepare_swap_in(optimizer, swapin_parameters, swapin_optim_state):
    """Check everything before touching the optimizer; pair each live group with its
    swap-in group and the slice of swapin_parameters that belongs to it."""
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    swapin_state = _validate_state_field(swapin_optim_state.get("state"))
    swapin_param_groups = _validate_param_groups_field(optimizer,
                                                       swapin_optim_state.get("param_groups"))
    flat_parameters = list(swapin_parameters.values())
    offset = 0
    seen_param_ids = set()
    infos = []
    for idx, (group, swapin_group) in enumerate(
            zip(optimizer.param_groups, swapin_param_groups, strict=True)):
        swapin_param_ids = _validate_group_against_live(idx, group, swapin_group)
        seen_param_ids.update(swapin_param_ids)
        next_offset = offset + len(swapin_param_ids)
        if next_offset > len(flat_parameters):
            raise RuntimeError(f"{_NAME} requires the explicit parameter state to match "
                               "optimizer.param_groups ordering.")
        infos.append(_GroupSwapinInfo(live_group=group, swapin_group=swapin_group,
                                      swapin_params=flat_parameters[offset:next_offset]))
        offset = next_offset
    extra_keys = [k for k in swapin_state if k not in seen_param_ids]
    if extra_keys:
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['state'] to be keyed only by packed "
            f"parameter ids from param_groups[*]['params']; got extra keys {extra_keys!r}.")
    return swapin_state, infos


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    state, infos = _prepare_swap_in(optimizer, swapin_parameters, swapin_optim_state)
    original_state = optimizer.state
    original_group_snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapin_state = defaultdict(dict)
        for info in infos:
            info.live_group["params"] = info.swapin_params
            for key, value in info.swapin_group.items():
                if key != "params":
                    info.live_group[key] = value       # the swap-in group's lr, betas, ...
            for swapin_param, param_id in zip(info.swapin_params, info.swapin_group["params"],
                                              strict=True):
                swapin_state[swapin_param] = dict(state.get(param_id, {}))
        optimizer.state = swapin_state
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, original_group_snapshots, strict=True):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state
