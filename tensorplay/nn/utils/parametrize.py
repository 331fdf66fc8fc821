"""`tp.nn.utils.parametrize` (torch.nn.utils.parametrize): a module's tensor computed
from other tensors each time it is read.

    register_parametrization(linear, "weight", Symmetric())
    linear.weight          # Symmetric()(linear.parametrizations.weight.original)

The tensor leaves the module's parameters; the original goes to
`module.parametrizations.weight.original` (a ParametrizationList, which is also the chain
of parametrizations, applied in registration order), and `weight` becomes a property of
the module's class. That class is a new subclass made for this module alone
(`ParametrizedLinear`), so other Linear modules keep their plain attribute. Assigning
`linear.weight = value` runs the parametrizations' `right_inverse` to find the original
that gives `value`. A `right_inverse` may return several tensors: they become
`original0`, `original1`... and the first parametrization takes them all.

State dicts therefore name `parametrizations.weight.original`, as PyTorch's do.
"""
from __future__ import annotations

import collections.abc
import contextlib
import copy
import copyreg

import tensorplay as tp
from tensorplay.nn.modules.container import ModuleDict, ModuleList
from tensorplay.nn.parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache = {}      # (id(module), tensor name) -> value, while cached() is active


@contextlib.contextmanager
def cached():
    """Inside the block, each parametrized tensor is computed once, at its first read, and
    the value reused (a weight read at every step of an RNN loop); dropped on exit."""
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _is_tensor(x):
    return getattr(x, "_impl", None) is not None


def _register_parameter_or_buffer(module, name, value):
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set_in_place(dest, src):
    """dest takes src's values keeping its identity (an optimizer built before holds it):
    PyTorch's `set_`, here the `.data` assignment."""
    dest.data = src


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, in order, and the original tensor(s) they start
    from: `original`, or `original0`, `original1`... when the first right_inverse returns
    a sequence. Made by register_parametrization, not by hand."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = tuple(original.shape), original.dtype
        # The original that gives back `original`: the right_inverses, last one first.
        with tp.no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not _is_tensor(new) and not isinstance(new, collections.abc.Sequence):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = _is_tensor(new)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original.dtype}\n"
                    f"right_inverse(original).dtype: {new.dtype}")
            if original.device != new.device:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the device.\n"
                    f"original.device: {original.device}\n"
                    f"right_inverse(original).device: {new.device}")
            with tp.no_grad():
                _set_in_place(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, original_i in enumerate(new):
                if not _is_tensor(original_i):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of "
                                     "tensors (list, tuple...). Got element "
                                     f"{i} of the sequence with type "
                                     f"{type(original_i).__name__}.")
                if isinstance(original, Parameter):
                    original_i = Parameter(original_i, original.requires_grad)
                original_i.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", original_i)
        if not self.unsafe:
            value = self()
            if not _is_tensor(value):
                raise ValueError(
                    f"A parametrization must return a tensor. Got {type(value).__name__}.")
            if value.dtype != original_dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, "
                    "unless `unsafe` flag is enabled.\n"
                    f"unparametrized dtype: {original_dtype}\n"
                    f"parametrized dtype: {value.dtype}")
            if tuple(value.shape) != original_shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, "
                    "unless `unsafe` flag is enabled.\n"
                    f"unparametrized shape: {tp.Size(original_shape)}\n"
                    f"parametrized shape: {value.shape}")

    def right_inverse(self, value):
        """Store in the original(s) what the right_inverses, last one first, make of
        `value` (the assignment `module.weight = value`)."""
        with tp.no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not _is_tensor(value):
                    raise ValueError("`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                _set_in_place(self.original, value)
                return
            if not isinstance(value, collections.abc.Sequence):
                raise ValueError("'right_inverse' must return a sequence of tensors. Got "
                                 f"{type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError("'right_inverse' must return a sequence of tensors of "
                                 f"length {self.ntensors}. Got a sequence of length "
                                 f"{len(value)}.")
            for i, tensor in enumerate(value):
                original_i = getattr(self, f"original{i}")
                if not _is_tensor(tensor):
                    raise ValueError("'right_inverse' must return a sequence of tensors. "
                                     f"Got element {i} of type {type(tensor).__name__}.")
                if original_i.dtype != tensor.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                     f"{tensor.dtype} while `original{i}` has dtype "
                                     f"{original_i.dtype}")
                _set_in_place(original_i, tensor)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _refuse_pickling(self):
    raise RuntimeError(
        "Serialization of parametrized modules is only supported through state_dict(). See:\n"
        "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
        "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")


def _deepcopy(self, memo):
    """copy.deepcopy of a parametrized module: its __dict__ (and slots) copied into an
    object of the same (parametrized) class."""
    found = memo.get(id(self))
    if found is not None:
        return found
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    for slot in copyreg._slotnames(self.__class__):
        if hasattr(self, slot):
            setattr(replica, slot, copy.deepcopy(getattr(self, slot), memo))
    return replica


def _inject_new_class(module):
    """Give `module` a class of its own, `Parametrized<Class>`, a subclass of its class
    that the tensor properties are added to."""
    cls = module.__class__
    namespace = {"__getstate__": _refuse_pickling}
    if not hasattr(cls, "__deepcopy__"):
        namespace["__deepcopy__"] = _deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), namespace)


def _inject_property(module, tensor_name):
    """`module.<tensor_name>` as a property: read, the parametrizations' value (cached
    inside cached()); assigned, their right_inverse."""
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        value = _cache.get(key)
        if value is None:
            value = _cache[key] = parametrization()
        return value

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make `module.<tensor_name>` (a parameter, a buffer, or an already parametrized
    tensor: then `parametrization` is chained after the others) read as
    `parametrization(original)`. With unsafe=False the parametrization must keep the
    tensor's shape and dtype (checked once, here). Returns the module."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            current = getattr(module, tensor_name)
            value = parametrization(current)
            if not _is_tensor(value):
                raise ValueError(
                    f"A parametrization must return a tensor. Got {type(value).__name__}.")
            if value.dtype != current.dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, "
                    "unless the `unsafe` flag is enabled.\n"
                    f"module.{tensor_name}.dtype: {current.dtype}\n"
                    f"parametrization(module.{tensor_name}).dtype: {value.dtype}")
            if tuple(value.shape) != tuple(current.shape):
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, "
                    "unless the `unsafe` flag is enabled.\n"
                    f"module.{tensor_name}.shape: {current.shape}\n"
                    f"parametrization(module.{tensor_name}).shape: {value.shape}")
            if hasattr(parametrization, "right_inverse"):
                try:
                    back = parametrization.right_inverse(value)
                except NotImplementedError:
                    pass
                else:
                    if not _is_tensor(back):
                        raise ValueError("parametrization.right_inverse must return a "
                                         f"tensor. Got: {type(back).__name__}")
                    if back.dtype != current.dtype or tuple(back.shape) != tuple(
                            current.shape):
                        raise ValueError(
                            "The tensor returned by parametrization.right_inverse must have "
                            f"the same dtype and shape as module.{tensor_name}, unless the "
                            f"`unsafe` flag is enabled.\nmodule.{tensor_name}: "
                            f"{current.dtype} {current.shape}\nreturned: {back.dtype} "
                            f"{back.shape}")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module, tensor_name=None):
    """Has `module` a parametrization (on `tensor_name`, or on any tensor)?"""
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Make `module.<tensor_name>` a plain parameter (or buffer) again: holding its
    current parametrized value (leave_parametrized=True) or the original. The last
    removal gives the module its class back. Returns the module."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with tp.no_grad():
                value = getattr(module, tensor_name)
                _set_in_place(original, value)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a "
                             "tensor that is parametrized in terms of a sequence of tensors.")
        value = getattr(module, tensor_name)
        original = Parameter(value) if value.requires_grad else value
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class before register_parametrization gave it its own."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Register on `to_module` the parametrizations of `from_module` (of `tensor_name`,
    or of every parametrized tensor), sharing their originals; a tensor to_module lacks
    is created first. Returns to_module."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        source = from_module.parametrizations[name]
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        if hasattr(source, "original"):
            target.original = source.original
        else:
            i = 0
            while hasattr(source, f"original{i}"):
                setattr(target, f"original{i}", getattr(source, f"original{i}"))
                i += 1
    return to_module
