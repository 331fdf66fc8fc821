"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict.

They hold submodules (or parameters) under the names "0", "1", ... or the keys given,
so `state_dict()` keys read `layers.0.weight`, as in PyTorch.
"""
from __future__ import annotations

import operator
import warnings
from collections import OrderedDict

from tensorplay.nn.modules.module import Module
from tensorplay.nn.parameter import Parameter

__all__ = ["Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
           "ParameterDict"]


def _index(cls_name, idx, n):
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"{cls_name}: index {idx} is out of range for length {n}")
    return idx % n



class Container(Module):
    """Deprecated (PyTorch's first container): a Module holding the keyword arguments as
    submodules. Subclass Module instead."""

    def __init__(self, **kwargs):
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now "
                      "implemented in `nn.Module`. Subclass that instead.", FutureWarning,
                      stacklevel=2)
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)

class _NumberedModules(Module):
    """What Sequential and ModuleList share: submodules named "0".."n-1", kept numbered
    after a deletion or an insertion, as PyTorch does."""

    def _renumber(self, modules):
        self._modules.clear()
        for i, module in enumerate(modules):
            self.add_module(str(i), module)

    def __delitem__(self, idx):
        items = list(self._modules.values())
        del items[idx if isinstance(idx, slice) else _index(type(self).__name__, idx,
                                                            len(items))]
        self._renumber(items)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for module in modules:
            self.append(module)
        return self

    def insert(self, index, module):
        items = list(self._modules.values())
        items.insert(index, module)
        self._renumber(items)
        return self


class Sequential(_NumberedModules):
    """Modules called one after another: `Sequential(Linear(4, 8), ReLU())` or
    `Sequential(OrderedDict(fc=Linear(4, 8), act=ReLU()))`."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index("Sequential", idx, len(self))]

    def __setitem__(self, idx, module):
        key = list(self._modules)[_index("Sequential", idx, len(self))]
        self.add_module(key, module)

    def __add__(self, other):
        return Sequential(*self, *other)


class ModuleList(_NumberedModules):
    """A list of modules whose parameters the parent module sees."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index("ModuleList", idx, len(self)))]

    def __setitem__(self, idx, module):
        self.add_module(str(_index("ModuleList", idx, len(self))), module)

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return ModuleList(list(self) + list(other))

    def pop(self, idx=-1):
        module = self[idx]
        del self[idx]
        return module

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList is a container and has no forward(); call "
                                  "its modules")


class ModuleDict(Module):
    """A dict of modules whose parameters the parent module sees (insertion order)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def pop(self, key):
        return self._modules.pop(key)

    def clear(self):
        self._modules.clear()

    def update(self, modules):
        pairs = modules.items() if hasattr(modules, "items") else modules
        for key, module in pairs:
            self[key] = module

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict is a container and has no forward()")


class ParameterList(Module):
    """A list of Parameters (plain tensors are wrapped into Parameters)."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def _wrap(self, value):
        if getattr(value, "_impl", None) is not None and not isinstance(value, Parameter):
            return Parameter(value)
        return value

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList([self[i] for i in range(len(self))[idx]])
        return getattr(self, str(_index("ParameterList", idx, len(self))))

    def __setitem__(self, idx, value):
        setattr(self, str(_index("ParameterList", idx, len(self))), self._wrap(value))

    def __len__(self):
        return self._size

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __iadd__(self, values):
        return self.extend(values)

    def append(self, value):
        self._size += 1
        setattr(self, str(self._size - 1), self._wrap(value))
        return self

    def extend(self, values):
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        return "\n".join(f"  ({i}): Parameter containing: [{p.dtype} of size "
                         f"{'x'.join(map(str, p.shape))}]" for i, p in enumerate(self))

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ParameterList is a container and has no forward()")


class ParameterDict(Module):
    """A dict of Parameters (plain tensors are wrapped into Parameters)."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key, value):
        self._keys[key] = None
        if getattr(value, "_impl", None) is not None and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, key, value)

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __contains__(self, key):
        return key in self._keys

    def keys(self):
        return list(self._keys)

    def items(self):
        return [(k, self[k]) for k in self._keys]

    def values(self):
        return [self[k] for k in self._keys]

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def update(self, parameters):
        pairs = parameters.items() if hasattr(parameters, "items") else parameters
        for key, value in pairs:
            self[key] = value

    def extra_repr(self):
        return "\n".join(f"  ({k}): Parameter containing: [{p.dtype} of size "
                         f"{'x'.join(map(str, p.shape))}]" for k, p in self.items())

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ParameterDict is a container and has no forward()")
