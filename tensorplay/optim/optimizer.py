"""`tp.optim.Optimizer`: the base class every optimizer builds on.

An optimizer holds `param_groups` (a list of dicts: the tensors under "params" plus the options
for them) and `state` (per-parameter buffers such as Adam's `exp_avg`, keyed by the parameter
tensor itself). Subclasses only write `step()`; grouping, zero_grad and the state_dict layout
live here and follow PyTorch's, so a checkpoint reads the same in both frameworks:

    {"state": {0: {"step": tensor(3.), "exp_avg": ...}, ...},
     "param_groups": [{"lr": 0.001, ..., "params": [0, 1, 2]}]}

Parameters are numbered in the order the groups list them; loading maps those numbers onto the
parameters of the optimizer being loaded, which may be a fresh one over new tensors.

How a step walks the parameters (one at a time, or a whole group over flat buffers with
`foreach`) is _foreach.py's business; with foreach the state tensors are views into those
buffers, which changes nothing for the layout above.
"""
from __future__ import annotations

import copy
import functools
from collections import defaultdict
from itertools import chain

import tensorplay as tp
from tensorplay._tensor import Tensor

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Marks an option with no default (SGD's lr in old PyTorch): a group must give it."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


_WHAT = {"lr": "learning rate", "eps": "epsilon value"}


def check_nonnegative(**values):
    """PyTorch's constructor checks, in the order given: a negative value raises
    `ValueError: Invalid <name> value: <value>` ("learning rate", "epsilon value")."""
    for name, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {_WHAT.get(name, name + ' value')}: {value}")


def check_betas(betas):
    """PyTorch's beta checks for the Adam family (Adamax, NAdam, RAdam, SparseAdam):
    each in [0, 1)."""
    for i, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")


def no_grad_step(step):
    """Run an optimizer's `step` with autograd off: the updates are in-place writes to leaf
    tensors and must not be recorded (they would also fail: a leaf that requires grad cannot
    be modified in place under autograd)."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        with tp.no_grad():
            return step(self, *args, **kwargs)

    return wrapper


def eval_closure(closure):
    """Re-evaluate the loss for `step(closure)`: the closure runs backward, so grad mode is on
    even though the step itself runs under no_grad."""
    if closure is None:
        return None
    with tp.enable_grad():
        return closure()


def new_step_counter():
    """A parameter's step count as PyTorch keeps it: a 0-d float tensor (float32, or float64
    when that is the default dtype), so checkpoints carry the same `step` entry."""
    dtype = tp.float64 if tp.get_default_dtype() == tp.float64 else tp.float32
    return tp.tensor(0.0, dtype=dtype)


class Optimizer:
    """Base class for all optimizers.

    Args:
        params: an iterable of tensors, of (name, tensor) pairs, or of dicts (parameter groups
            with their own options). The order must be deterministic: it numbers the
            parameters in `state_dict()`.
        defaults: the options a group gets when it does not set them.
    """

    def __init__(self, params, defaults):
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {type(params).__module__}."
                            f"{type(params).__name__}")
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # ---- groups -------------------------------------------------------------------------
    def add_param_group(self, param_group):
        """Add a group (a dict with "params" and optional options), e.g. to train layers that
        were frozen so far. A parameter may belong to one group only."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            params = list(params)

        tensors, names = [], []
        for param in params:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. "
                                 "Some param names are missing")
            param_group["param_names"] = names

        for param in tensors:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                f"{type(param).__module__}.{type(param).__name__}")
            if not self.defaults.get("differentiable", None) and not param.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)

        if len(tensors) != len({id(p) for p in tensors}):
            import warnings
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error", stacklevel=3)

        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if any(id(p) in seen for p in tensors):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        """Reset the gradients: drop them (the default, cheaper, and a step then skips a
        parameter that got no gradient) or fill them with zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    grad = p.grad
                    if grad.grad_fn is not None:
                        grad = grad.detach()
                        p.grad = grad
                    else:
                        grad.requires_grad_(False)
                    grad.zero_()

    def step(self, closure=None):
        raise NotImplementedError

    # ---- state_dict -----------------------------------------------------------------------
    def state_dict(self):
        """The state as a dict of plain containers: parameters are replaced by their index in
        group order (state tensors are returned, not copied, as in PyTorch)."""
        index_of = {}
        start = 0
        packed_groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                index_of.setdefault(id(p), i)
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            start += len(packed["params"])
            packed_groups.append(packed)
        packed_state = {(index_of[id(k)] if isinstance(k, Tensor) else k): v
                        for k, v in self.state.items()}
        return {"state": packed_state, "param_groups": packed_groups}

    def load_state_dict(self, state_dict):
        """Load a `state_dict()`: the groups must list as many parameters as this optimizer's.

        State tensors are copied onto each parameter's device (and, but for the step counter,
        its floating dtype); unlike PyTorch, they are always copies, so the optimizer that gave
        the dict and the one that loads it never share buffers."""
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for group, saved in zip(groups, saved_groups):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't "
                                 "match the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        state = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = _cast_state(param, value)
            else:
                state[key] = value

        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            new_groups.append(saved)
        # The foreach path's flat buffers (and the fused loop's step counters) belong to
        # the old state: they are made again.
        self.__dict__.pop("_flat_buffers", None)
        self.__dict__.pop("_step_counters", None)
        self.__setstate__({"state": state, "param_groups": new_groups})


def _cast_state(param, value, key=None):
    """Copy a piece of saved state for `param`: tensors move to its device and, when it is
    floating, to its dtype; the step counter keeps its own dtype (it is a float32 count)."""
    if isinstance(value, Tensor):
        if key == "step":
            return value.detach().clone()
        if param.is_floating_point():
            return value.detach().to(dtype=param.dtype, device=param.device).clone()
        return value.detach().to(device=param.device).clone()
    if isinstance(value, dict):
        return {k: _cast_state(param, v, key=k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, v) for v in value)
    return value
