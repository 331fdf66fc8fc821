"""How `register_full_backward_hook` sees a module's gradients.

The module's tensor inputs and outputs each pass through one identity Function:

    inputs -> [_GradTap: hooks fire here] -> forward -> [_GradTap: grad_output noted] -> outputs

In backward, the tap on the outputs runs first and notes the gradients that arrived
(grad_output); the tap on the inputs runs once the gradients with respect to the inputs
are known (grad_input), calls each hook with both, and passes on what the hooks return.
"""
from __future__ import annotations

from tensorplay.autograd.function import Function
from tensorplay.autograd.grad_mode import grad_state


def _is_tensor(x):
    return getattr(x, "_impl", None) is not None


class _GradTap(Function):
    """Identity on its tensors; in backward hands their gradients to `on_grads`, which
    may replace them."""

    @staticmethod
    def forward(ctx, on_grads, *tensors):
        ctx.on_grads = on_grads
        ctx.set_materialize_grads(False)
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        return (None,) + tuple(ctx.on_grads(grads))


def _run_hooks(module, grad_input, grad_output):
    from tensorplay.nn.modules.module import _global_backward_hooks
    for hook in list(_global_backward_hooks.values()) + list(module._backward_hooks.values()):
        result = hook(module, grad_input, grad_output)
        if result is None:
            continue
        result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        if len(result) != len(grad_input):
            raise RuntimeError(f"backward hook of {type(module).__name__} returned "
                               f"{len(result)} gradients, expected {len(grad_input)}")
        grad_input = result
    return grad_input


def call_with_backward_hooks(module, args, kwargs):
    positions = [i for i, a in enumerate(args) if _is_tensor(a)]
    recording = grad_state.enabled
    inputs_need_grad = recording and any(args[i].requires_grad for i in positions)
    seen = {}

    if inputs_need_grad:
        def on_input_grads(grads):
            return _run_hooks(module, grads, seen.get("grad_output"))

        tapped = _GradTap.apply(on_input_grads, *(args[i] for i in positions))
        args = list(args)
        for i, t in zip(positions, tapped):
            args[i] = t
        args = tuple(args)

    output = module.forward(*args, **kwargs)
    if not recording:
        return output

    single = _is_tensor(output)
    outs = (output,) if single else output
    if not isinstance(outs, tuple) or not any(_is_tensor(o) and o.requires_grad for o in outs):
        return output
    out_positions = [i for i, o in enumerate(outs) if _is_tensor(o)]

    def on_output_grads(grads):
        seen["grad_output"] = grads
        if not inputs_need_grad:
            # No input gradient will be computed: PyTorch calls the hooks now, with None.
            _run_hooks(module, (None,) * len(positions), grads)
        return grads

    tapped = _GradTap.apply(on_output_grads, *(outs[i] for i in out_positions))
    outs = list(outs)
    for i, t in zip(out_positions, tapped):
        outs[i] = t
    return outs[0] if single else tuple(outs)
