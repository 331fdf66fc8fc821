"""`tp.nn.Module`: the base class of every layer and model.

A Module keeps three ordered registries, filled by plain attribute assignment:

    self.weight = Parameter(...)   -> self._parameters["weight"]
    self.running_mean = ...        -> self._buffers (through register_buffer)
    self.fc = Linear(...)          -> self._modules["fc"]

Everything else walks those registries: `parameters()`, `state_dict()`, `to()`,
`train()`, the repr tree. Calling a module (`m(x)`) runs its forward pre-hooks,
`forward`, its forward hooks and, when full backward hooks are registered, wraps
inputs and outputs so the hooks see the gradients (see `_backward_hooks.py`).
"""
from __future__ import annotations

import functools
from collections import OrderedDict, namedtuple

from tensorplay import _dtype as dt
from tensorplay._creation import empty_like, from_numpy
from tensorplay._device import device as Device
from tensorplay._tensor import Tensor
from tensorplay.autograd.grad_mode import no_grad
from tensorplay.autograd.node import RemovableHandle
from tensorplay.nn.parameter import Buffer, Parameter

__all__ = ["Module", "IncompatibleKeys", "register_module_forward_pre_hook",
           "register_module_forward_hook", "register_module_full_backward_hook",
           "register_module_buffer_registration_hook",
           "register_module_module_registration_hook",
           "register_module_parameter_registration_hook"]

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])
IncompatibleKeys.__repr__ = (
    lambda self: "<All keys matched successfully>" if not self.missing_keys
    and not self.unexpected_keys else
    f"_IncompatibleKeys(missing_keys={self.missing_keys}, "
    f"unexpected_keys={self.unexpected_keys})")


def _is_tensor(value):
    return getattr(value, "_impl", None) is not None


def _add_hook(hooks, hook, prepend=False):
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


# ---- global hooks: run for every module (PyTorch's torch.nn.modules.module ones) -------
# Each registry maps a handle id to a hook; the hooks run before the module's own ones.
_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()
_global_forward_hooks_with_kwargs = set()
_global_forward_hooks_always_called = set()
_global_backward_hooks = OrderedDict()
_global_buffer_registration_hooks = OrderedDict()
_global_module_registration_hooks = OrderedDict()
_global_parameter_registration_hooks = OrderedDict()


def register_module_forward_pre_hook(hook):
    """hook(module, args) -> None or new args, before every module's forward (and before
    the module's own pre-hooks). Debugging and profiling only, as PyTorch says."""
    return _add_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """hook(module, args, output) -> None or a new output (with_kwargs: (module, args,
    kwargs, output)), after every module's forward; always_call: even when forward
    raised."""
    handle = _add_hook(_global_forward_hooks, hook)
    if with_kwargs:
        _global_forward_hooks_with_kwargs.add(handle.id)
    if always_call:
        _global_forward_hooks_always_called.add(handle.id)
    return handle


def register_module_full_backward_hook(hook):
    """hook(module, grad_input, grad_output) -> None or new grad_input, for every
    module's backward (before the module's own backward hooks)."""
    return _add_hook(_global_backward_hooks, hook)


def register_module_buffer_registration_hook(hook):
    """hook(module, name, buffer) -> None or a replacement, whenever a buffer is
    registered on any module."""
    return _add_hook(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook):
    """hook(module, name, submodule) -> None or a replacement, whenever a submodule is
    registered on any module."""
    return _add_hook(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook):
    """hook(module, name, param) -> None or a replacement, whenever a parameter is
    registered on any module."""
    return _add_hook(_global_parameter_registration_hooks, hook)


def _registered(hooks, module, name, value):
    for hook in list(hooks.values()):
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value


def _addindent(text, spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module:
    """Base class for all neural-network modules; subclasses define `forward`."""

    training: bool
    _version = 1

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments; "
                            f"Module.__init__() takes none")
        # object.__setattr__: our own __setattr__ reads these registries.
        set_ = object.__setattr__
        set_(self, "training", True)
        set_(self, "_parameters", OrderedDict())
        set_(self, "_buffers", OrderedDict())
        set_(self, "_non_persistent_buffers_set", set())
        set_(self, "_modules", OrderedDict())
        set_(self, "_forward_pre_hooks", OrderedDict())
        set_(self, "_forward_pre_hooks_with_kwargs", set())
        set_(self, "_forward_hooks", OrderedDict())
        set_(self, "_forward_hooks_with_kwargs", set())
        set_(self, "_backward_hooks", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  f'"forward" function')

    # ---- registration ---------------------------------------------------------------
    def register_parameter(self, name, param):
        self._check_name("register_parameter", name, "_parameters")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (tp.nn.Parameter or None required)")
        self._parameters[name] = _registered(_global_parameter_registration_hooks, self,
                                             name, param)

    def register_buffer(self, name, tensor, persistent=True):
        self._check_name("register_buffer", name, "_buffers")
        if tensor is not None and not _is_tensor(tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer "
                            f"'{name}' (tp.Tensor or None required)")
        self._buffers[name] = _registered(_global_buffer_registration_hooks, self, name,
                                          tensor)
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name("add_module", name, "_modules")
        self._modules[name] = _registered(_global_module_registration_hooks, self, name,
                                          module)

    register_module = add_module

    def _check_name(self, method, name, registry):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot call {method}() before Module.__init__()")
        if not isinstance(name, str):
            raise TypeError(f"{method}(): name must be a str, but got {type(name).__name__}")
        if name == "" or "." in name:
            raise KeyError(f"{method}(): name can't be empty or contain \".\", got {name!r}")
        if hasattr(self, name) and name not in getattr(self, registry):
            raise KeyError(f"{method}(): attribute '{name}' already exists")

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter "
                                f"'{name}' (tp.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name)
            self._modules[name] = value
        elif params is not None and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (tp.nn.Module or None expected)")
            self._modules[name] = None
        elif isinstance(value, Buffer):
            self._forget(name)
            self.register_buffer(name, value.data, value.persistent)
        elif params is not None and name in self._buffers:
            if value is not None and not _is_tensor(value):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                f"(tp.Tensor or None expected)")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name):
        self.__dict__.pop(name, None)
        for registry in (self._parameters, self._buffers, self._modules):
            registry.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name):
        # Only called when normal lookup fails: look in the three registries.
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in d and name in d[registry]:
                return d[registry][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for registry in (self._parameters, self._buffers, self._modules):
            if name in registry:
                del registry[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = set(super().__dir__()) | set(self._parameters) | set(self._buffers) \
            | set(self._modules)
        return sorted(k for k in keys if not k[0].isdigit())

    def get_submodule(self, target):
        module = self
        if target == "":
            return module
        for item in target.split("."):
            if item not in module._modules:
                raise AttributeError(f"{type(module).__name__} has no submodule `{item}` "
                                     f"(looking up '{target}')")
            module = module._modules[item]
        return module

    def get_parameter(self, target):
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        if name not in module._parameters:
            raise AttributeError(f"{type(module).__name__} has no parameter `{name}`")
        return module._parameters[name]

    def get_buffer(self, target):
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        if name not in module._buffers:
            raise AttributeError(f"{type(module).__name__} has no buffer `{name}`")
        return module._buffers[name]

    # ---- walking the tree ---------------------------------------------------------
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def _named_members(self, registry, prefix, recurse, remove_duplicate):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, registry).items():
                if value is None:
                    continue
                if remove_duplicate:
                    if id(value) in seen:
                        continue
                    seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def apply(self, fn):
        """Call `fn` on every submodule (children first), then on self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ---- compilation --------------------------------------------------------------
    def compile(self, *args, **kwargs):
        """Compile this module's forward in place (torch.nn.Module.compile): calls of
        the module run `tp.compile(self.forward, *args, **kwargs)`; the module, its
        state_dict keys and hooks stay as they are."""
        import tensorplay    # tp.compile is built on the modules: read at call time
        forward = type(self).forward.__get__(self)
        object.__setattr__(self, "forward", tensorplay.compile(forward, *args, **kwargs))

    # ---- modes and gradients ------------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError(f"train(): mode is expected to be a bool, but got {mode!r}")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                grad = param.grad
                if grad.grad_fn is not None:
                    grad = grad.detach()
                    param.grad = grad
                grad.zero_()

    # ---- moving between devices and dtypes ----------------------------------------
    def _apply(self, fn, recurse=True):
        """Apply `fn` to every parameter, gradient and buffer (of the submodules too, with
        `recurse`), keeping the Parameter objects (optimizers hold them) and swapping only
        what they point at."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for name, param in self._parameters.items():
            if param is None:
                continue
            with no_grad():
                new = fn(param)
            if new is not param:
                param.data = new
            if param.grad is not None:
                with no_grad():
                    new_grad = fn(param.grad)
                if new_grad is not param.grad:
                    param.grad.data = new_grad
        for name, buf in self._buffers.items():
            if buf is not None:
                self._buffers[name] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        """`to(device)`, `to(dtype)`, `to(device, dtype)`, `to(tensor)`: floating-point
        parameters and buffers take the dtype; every one moves to the device.
        `memory_format=tp.channels_last` also lays out the 4-D ones NHWC (conv weights),
        as PyTorch does."""
        memory_format = kwargs.pop("memory_format", None)
        device, dtype = _parse_to(args, kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got "
                            f"desired dtype={dtype}")

        def convert(t):
            want = dtype if dtype is not None and t.dtype.is_floating_point else t.dtype
            t = t.to(device if device is not None else t.device, want)
            if memory_format is not None and t.dim() == 4:
                t = t.contiguous(memory_format=memory_format)
            return t

        return self._apply(convert)

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def to_empty(self, *, device, recurse=True):
        """Move to `device` without copying values: each parameter and buffer becomes an
        uninitialised tensor of its shape and dtype there. This is how a module built on
        `device="meta"` (which has no values to copy, so `to()` refuses) gets real memory;
        initialise it next (`reset_parameters()`, `load_state_dict()`)."""
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def type(self, dst_type):
        return self._apply(lambda t: t.to(dst_type))

    def _cast_floats(self, dtype):
        return self._apply(lambda t: t.to(dtype) if t.dtype.is_floating_point else t)

    def float(self):
        return self._cast_floats(dt.float32)

    def double(self):
        return self._cast_floats(dt.float64)

    def half(self):
        return self._cast_floats(dt.float16)

    def bfloat16(self):
        return self._cast_floats(dt.bfloat16)

    # ---- state dict ---------------------------------------------------------------
    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """Parameters and persistent buffers by dotted name, detached unless keep_vars."""
        if args:   # PyTorch's deprecated positional form: (destination, prefix, keep_vars)
            destination, prefix, keep_vars = (list(args) + [destination, prefix,
                                                            keep_vars][len(args):])[:3]
        if destination is None:
            destination = OrderedDict()
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        return destination

    def _load_from_state_dict(self, state_dict, prefix, strict, missing_keys,
                              unexpected_keys, error_msgs, assign=False):
        """Copy this module's own entries (no children) from `state_dict`. Layers whose
        saved form differs from their attributes override this."""
        persistent = {k: v for k, v in self._buffers.items()
                      if k not in self._non_persistent_buffers_set}
        local = {**{k: v for k, v in self._parameters.items()}, **persistent}
        for name, current in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict and current is not None:
                    missing_keys.append(key)
                continue
            value = _as_tensor(state_dict[key])
            if current is None:
                continue
            if tuple(value.shape) != tuple(current.shape):
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape "
                    f"{_size(value.shape)} from checkpoint, the shape in current model is "
                    f"{_size(current.shape)}.")
                continue
            if assign:
                if name in self._parameters:
                    value = Parameter(value, current.requires_grad)
                setattr(self, name, value)
                continue
            with no_grad():
                current.copy_(value)
        if strict:
            for key in state_dict:
                if not key.startswith(prefix):
                    continue
                rest = key[len(prefix):]
                head = rest.split(".", 1)[0]
                if "." in rest:
                    if head not in self._modules:
                        unexpected_keys.append(key)
                elif head not in local:
                    unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and buffers from `state_dict` (tensors or NumPy arrays).

        strict=True: every key must match, or a RuntimeError lists the missing and
        unexpected keys and every shape mismatch. Returns (missing_keys, unexpected_keys).
        """
        if not hasattr(state_dict, "keys"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        state_dict = OrderedDict(state_dict)    # pre-hooks may rename keys: not the caller's

        def load(module, prefix):
            for hook in module.__dict__.get("_load_state_dict_pre_hooks", {}).values():
                hook(state_dict, prefix, {}, True, missing, unexpected, errors)
            module._load_from_state_dict(state_dict, prefix, True, missing, unexpected,
                                         errors, assign)
            for name, child in module._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")

        load(self, "")
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        return IncompatibleKeys(missing, unexpected)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs) (with_module: the module first), run before this module loads its
        entries: it may rewrite an older layout's keys (weight_norm's `weight_g`). The
        local_metadata is an empty dict here: TensorPlay's state dicts carry none."""
        hooks = self.__dict__.setdefault("_load_state_dict_pre_hooks", OrderedDict())
        if with_module:
            hook = functools.partial(hook, self)
        return _add_hook(hooks, hook, False)

    # ---- hooks --------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) -> None or new args (with_kwargs: (module, args, kwargs)
        -> None or (args, kwargs)), run before forward."""
        handle = _add_hook(self._forward_pre_hooks, hook, prepend)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs.add(handle.id)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """hook(module, args, output) -> None or a new output, run after forward."""
        handle = _add_hook(self._forward_hooks, hook, prepend)
        if with_kwargs:
            self._forward_hooks_with_kwargs.add(handle.id)
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) -> None or new grad_input, run once the
        gradients with respect to the module's tensor inputs are computed."""
        return _add_hook(self._backward_hooks, hook, prepend)

    def __call__(self, *args, **kwargs):
        # No hook anywhere, the common case: the forward alone, as PyTorch's _call_impl
        # (the walk below costs a microsecond a call, a model's every layer every step).
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or _global_forward_pre_hooks or _global_forward_hooks
                or _global_backward_hooks):
            return self.forward(*args, **kwargs)
        # The global hooks (register_module_*) run first, then the module's own.
        for hook in list(_global_forward_pre_hooks.values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        try:
            if self._backward_hooks or _global_backward_hooks:
                from tensorplay.nn.modules._backward_hooks import call_with_backward_hooks
                output = call_with_backward_hooks(self, args, kwargs)
            else:
                output = self.forward(*args, **kwargs)
        except Exception:
            # always_call global forward hooks still see the call (output None), as in
            # PyTorch; their errors are not allowed to hide the forward's.
            for hook_id in list(_global_forward_hooks_always_called):
                hook = _global_forward_hooks.get(hook_id)
                if hook is None:
                    continue
                try:
                    if hook_id in _global_forward_hooks_with_kwargs:
                        hook(self, args, kwargs, None)
                    else:
                        hook(self, args, None)
                except Exception:
                    pass
            raise
        hooks = [(hook_id in _global_forward_hooks_with_kwargs, hook)
                 for hook_id, hook in list(_global_forward_hooks.items())]
        hooks += [(hook_id in self._forward_hooks_with_kwargs, hook)
                  for hook_id, hook in list(self._forward_hooks.items())]
        for with_kwargs, hook in hooks:
            result = hook(self, args, kwargs, output) if with_kwargs else \
                hook(self, args, output)
            if result is not None:
                output = result
        return output

    # ---- printing -----------------------------------------------------------------
    def extra_repr(self):
        """The text inside the parentheses of this module's repr line."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        for name, module in self._modules.items():
            lines.append(f"({name}): " + _addindent(repr(module), 2))
        if not lines:
            return self._get_name() + "()"
        if len(lines) == 1 and not self._modules:
            return f"{self._get_name()}({lines[0]})"
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def __setstate__(self, state):
        self.__dict__.update(state)


def _size(shape):
    return f"tensorplay.Size([{', '.join(str(s) for s in shape)}])"


def _as_tensor(value):
    """State-dict values may be NumPy arrays (a PyTorch state dict converted through
    NumPy) or anything with __array__; tensors pass through."""
    if _is_tensor(value):
        return value
    import numpy as np
    try:
        arr = np.asarray(value)
    except Exception:
        raise TypeError(f"load_state_dict(): expected a Tensor or an array, got "
                        f"{type(value).__name__}") from None
    if arr.dtype == object:
        raise TypeError(f"load_state_dict(): expected a Tensor or an array, got "
                        f"{type(value).__name__}")
    # (np.ascontiguousarray would turn a 0-d array into a 1-d one.)
    return from_numpy(arr if arr.flags.c_contiguous else arr.copy())


def _parse_to(args, kwargs):
    """Read `to()`'s overloads: (device), (dtype), (device, dtype), (tensor), keywords."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword argument(s) {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, dt.dtype):
            dtype = arg
        elif isinstance(arg, (str, Device)):
            device = Device(arg) if isinstance(arg, str) else arg
        elif isinstance(arg, Tensor):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, bool) or arg is None:
            continue
        elif isinstance(arg, int):
            device = Device("cuda", arg)
        else:
            raise TypeError(f"to() received an invalid combination of arguments: "
                            f"{type(arg).__name__}")
    if isinstance(device, str):
        device = Device(device)
    return device, dtype

