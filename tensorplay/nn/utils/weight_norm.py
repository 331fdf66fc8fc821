"""`tp.nn.utils.weight_norm` (torch.nn.utils.weight_norm): the older, hook-based weight
normalisation, w = g * v / ||v||. The parameter `weight` is replaced by `weight_g` and
`weight_v`, and a forward pre-hook recomputes the plain attribute `weight` before every
forward. PyTorch deprecates it in favour of tp.nn.utils.parametrizations.weight_norm
(the same value, as a parametrization), and so does this one's warning.
"""
from __future__ import annotations

import warnings

import tensorplay as tp
from tensorplay.nn.parameter import Parameter
from tensorplay.nn.utils.parametrizations import weight_norm_value

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


class WeightNorm:
    """The forward pre-hook: sets module.<name> from <name>_g and <name>_v."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        return weight_norm_value(getattr(module, self.name + "_g"),
                                 getattr(module, self.name + "_v"), self.dim)

    @staticmethod
    def apply(module, name, dim):
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning,
                      stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g",
                                  Parameter(tp.norm_except_dim(weight, 2, fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Split module.<name> into magnitude <name>_g and direction <name>_v (norm over
    every dim but `dim`; dim=None: over all). Returns the module."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Fold <name>_g and <name>_v back into one parameter <name>. Returns the module."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
