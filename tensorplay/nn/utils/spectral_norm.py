"""`tp.nn.utils.spectral_norm` (torch.nn.utils.spectral_norm): the older, hook-based
spectral normalisation, W / sigma(W). The parameter `weight` becomes `weight_orig`, the
power iteration's vectors are the buffers `weight_u` and `weight_v`, and a forward
pre-hook sets the plain attribute `weight` before every forward (one power-iteration
step first, in training mode). tp.nn.utils.parametrizations.spectral_norm is the newer
form.

Not built: PyTorch's conversion, at load time, of state dicts saved before its version 1
of this hook (2018); TensorPlay's state dicts carry no version metadata.
"""
from __future__ import annotations

import tensorplay as tp
import tensorplay.nn.functional as F
from tensorplay.nn.parameter import Parameter
from tensorplay.nn.utils.parametrizations import reshape_weight_to_matrix

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]


class SpectralNorm:
    """The forward pre-hook: sets module.<name> to <name>_orig / sigma."""

    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        return reshape_weight_to_matrix(weight, self.dim)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            # In place into the buffers (the estimate carries over to the next call),
            # v first, as PyTorch's hook (the parametrization updates u first).
            with tp.no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(tp.mv(weight_mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(tp.mv(weight_mat, v), dim=0, eps=self.eps))
                # Copies: this graph keeps the u, v it used; the next step overwrites.
                u, v = u.clone(), v.clone()
        sigma = tp.dot(u, tp.mv(weight_mat, v))
        return weight / sigma

    def remove(self, module):
        with tp.no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name,
                self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with tp.no_grad():
            weight_mat = fn.reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        # A plain attribute until the first forward recomputes it (not in state_dict).
        setattr(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide module.<name> by its largest singular value, estimated by power iteration
    before each forward. dim: the output dimension (1 for ConvTranspose, else 0)."""
    if dim is None:
        transposed = (tp.nn.ConvTranspose1d, tp.nn.ConvTranspose2d, tp.nn.ConvTranspose3d)
        dim = 1 if isinstance(module, transposed) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Make module.<name> a plain parameter again, holding its current normalised value."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
