"""`tp.compile(module)`: an `OptimizedModule` (torch's name) whose forward is the compiled
call of the original module, kept as the submodule `_orig_mod`, so `state_dict()` keys
read `_orig_mod.fc.weight` as PyTorch's do, and `train()` / `eval()` / `to()` reach it.
Attributes it does not have are read from the original module."""
from __future__ import annotations

from tensorplay.nn.modules.module import Module


class OptimizedModule(Module):
    def __init__(self, mod, compiled):
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled", compiled)

    def forward(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def explain(self):
        return self._compiled.explain()

    def source(self):
        return self._compiled.source()

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            modules = self.__dict__.get("_modules")
            if modules is None or "_orig_mod" not in modules:   # a copy being made
                raise
            return getattr(modules["_orig_mod"], name)

    def _get_name(self):
        return f"OptimizedModule[{self._modules['_orig_mod']._get_name()}]"
