"""TensorPlay: an autograd-first deep-learning framework you can read.

    import tensorplay as tp
    a = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = tp.ones(3)
    with tp.dispatch.explain():      # every hop of the call, printed
        c = a + b
    c.sum().backward()

The public names live in `tensorplay/_api.py`. They are loaded on first use
(`tp.tensor`, `from tensorplay import ...`) rather than at `import tensorplay`,
so that the code generator (`python -m tensorplay.codegen`) can run while
`tensorplay/_generated/` is missing or stale. Names starting with `_` are never loaded
that way; the few public dunders (`__version__`) are defined here.
"""

__version__ = "0.1.0"


def _load():
    import importlib
    _api = importlib.import_module("tensorplay._api")
    names = {k: v for k, v in vars(_api).items() if not k.startswith("__")}
    globals().update(names)
    return names


# Subpackages built on torch (importing it takes about a second): loaded on first use,
# so that only programs that use them pay for it.
_TORCH_BACKED = ("distributed",)


def __getattr__(name):
    if name in _TORCH_BACKED:
        import importlib
        return importlib.import_module(f"tensorplay.{name}")
    if name.startswith("_"):
        raise AttributeError(f"module 'tensorplay' has no attribute '{name}'")
    # A subpackage still being imported is in sys.modules but not yet an attribute
    # here: `import tensorplay.nn.functional as F` inside tensorplay.nn's own import
    # asks for `tensorplay.nn` this way. Answering with the module, not with _api's
    # names, keeps that import from loading all of _api in the middle of another one.
    import sys
    module = sys.modules.get(f"tensorplay.{name}")
    if module is not None:
        return module
    names = _load()
    if name in names:
        return names[name]
    if name in ("complex32", "chalf"):
        raise AttributeError(f"tensorplay has no '{name}': NumPy, which holds the CPU "
                             "backend's data, has no complex half type; use complex64")
    raise AttributeError(f"module 'tensorplay' has no attribute '{name}'")


def __dir__():
    return sorted(set(globals()) | set(_load()))
