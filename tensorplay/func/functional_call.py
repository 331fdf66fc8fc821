"""`functional_call`: run a module with other parameters and buffers, as a pure function.

The transforms differentiate functions of tensors; a module keeps its weights inside.
`functional_call(model, params, x)` puts the tensors of `params` (keyed by the names of
`model.named_parameters()` / `named_buffers()`) in place of the module's own for the
duration of one call, and puts the originals back afterwards, even when the call raises:

    params = {k: v.detach() for k, v in model.named_parameters()}
    grads = tp.func.grad(lambda p: loss_fn(functional_call(model, p, (x,)), y))(params)
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay.errors import ArgumentError
from tensorplay.func.grad_levels import is_tensor

__all__ = ["functional_call"]

_NAME = "functional_call()"
_MISSING = object()     # an attribute that did not exist before the swap


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """`module(*args, **kwargs)` with its parameters and buffers replaced by the tensors of
    `parameter_and_buffer_dicts` (one dict, or a tuple/list of dicts with distinct keys).

    tie_weights: a tensor registered under several names (tied weights) is replaced under
    all of them when one of its names is given. strict: every parameter and buffer must be
    given, and nothing else. `args` that is not a tuple is the single positional argument.
    """
    named = _merge(parameter_and_buffer_dicts)
    if tie_weights:
        named = _untie(module, named)
    if strict:
        _check_keys(module, named)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    originals = {}
    try:
        for name, tensor in named.items():
            originals[name] = _swap(module, name, tensor)
        return module(*args, **(kwargs or {}))
    finally:
        for name, tensor in reversed(list(originals.items())):
            _swap(module, name, tensor)


def _merge(dicts):
    if isinstance(dicts, dict):
        return dict(dicts)
    if not isinstance(dicts, (tuple, list)) or not all(isinstance(d, dict) for d in dicts):
        raise ArgumentError(f"{_NAME}: argument 'parameter_and_buffer_dicts' must be a dict "
                            f"or a tuple/list of dicts, got {type(dicts).__name__}",
                            op="functional_call", arg="parameter_and_buffer_dicts")
    seen, repeated = set(), []
    for d in dicts:
        for key in d:
            if key in seen and key not in repeated:
                repeated.append(key)
            seen.add(key)
    if repeated:
        raise ArgumentError(f"{_NAME}: keys {repeated} appear in several dictionaries of "
                            f"'parameter_and_buffer_dicts'; which value to use is ambiguous",
                            op="functional_call", arg="parameter_and_buffer_dicts")
    return {k: v for d in dicts for k, v in d.items()}


def _module_tensors(module):
    """Every (name, tensor) of the module's parameters and buffers, tied names included."""
    yield from module.named_parameters(remove_duplicate=False)
    yield from module.named_buffers(remove_duplicate=False)


def _untie(module, named):
    """`named` plus, for each given name of a tied tensor, its other names (same value)."""
    names_of = {}
    for name, tensor in _module_tensors(module):
        names_of.setdefault(id(tensor), []).append(name)
    untied = dict(named)
    for names in names_of.values():
        given = [n for n in names if n in named]
        if len(names) < 2 or not given:
            continue
        if len({id(named[n]) for n in given}) > 1:
            raise ArgumentError(f"{_NAME}: got different values for the keys "
                                f"{sorted(names)}, which name one tied tensor; pass "
                                f"tie_weights=False to set them apart",
                                op="functional_call", arg="parameter_and_buffer_dicts")
        for n in names:
            untied[n] = named[given[0]]
    return untied


def _check_keys(module, named):
    valid = {name for name, _ in _module_tensors(module)}
    unexpected = sorted(set(named) - valid)
    missing = sorted(valid - set(named))
    problems = []
    if unexpected:
        problems.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        problems.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if problems:
        raise ArgumentError(f"{_NAME} with strict=True: error(s) in reparametrizing for "
                            f"{module._get_name()}:\n\t" + "\n\t".join(problems),
                            op="functional_call", arg="parameter_and_buffer_dicts")


def _swap(module, name, tensor):
    """Put `tensor` under the dotted `name` of `module` and return what was there
    (`_MISSING` if nothing; putting `_MISSING` back removes the attribute again)."""
    if tensor is not _MISSING and tensor is not None and not is_tensor(tensor):
        raise ArgumentError(f"{_NAME}: the value for key {name!r} must be a Tensor, got "
                            f"{type(tensor).__name__}", op="functional_call",
                            arg="parameter_and_buffer_dicts")
    path, _, attr = name.rpartition(".")
    try:
        owner = module.get_submodule(path)
    except AttributeError as e:
        raise ArgumentError(f"{_NAME}: key {name!r} names no submodule of "
                            f"{module._get_name()} ({e})", op="functional_call",
                            arg="parameter_and_buffer_dicts") from None
    # Parameters and buffers are swapped inside their registries, so the module keeps its
    # registration order and a plain tensor can stand in for a Parameter.
    for registry in (owner._parameters, owner._buffers):
        if attr in registry:
            old = registry[attr]
            if tensor is _MISSING:
                del registry[attr]
            else:
                registry[attr] = tensor
            return old
    old = getattr(owner, attr, _MISSING)
    if tensor is not _MISSING:
        setattr(owner, attr, tensor)
    elif hasattr(owner, attr):
        delattr(owner, attr)
    return old


def stack_module_state(models):
    """(params, buffers): the parameters and buffers of `models` (modules of one class,
    all in training or all in eval mode) stacked along a new dim 0, keyed by name, as
    torch.func.stack_module_state. With `functional_call` and `vmap`, one call runs the
    whole ensemble:

        params, buffers = stack_module_state(models)
        vmap(lambda p, b, x: functional_call(models[0], (p, b), (x,)),
             in_dims=(0, 0, None))(params, buffers, x)

    The stacked parameters are new leaves (they require grad when the originals do), not
    connected to the models' own: an optimizer can train them directly."""
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named, name):
        tensors = [dict(getattr(m, named)())[name] for m in models]
        wants = [t.requires_grad for t in tensors]
        if any(wants) and not all(wants):
            raise RuntimeError(f"Expected {name} from each model to have the same "
                               f".requires_grad")
        result = tp.stack(tensors)
        return result.detach().requires_grad_() if all(wants) else result

    params = {k: stacked("named_parameters", k) for k, _ in models[0].named_parameters()}
    buffers = {k: stacked("named_buffers", k) for k, _ in models[0].named_buffers()}
    return params, buffers
