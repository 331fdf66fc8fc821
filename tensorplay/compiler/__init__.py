"""`tp.compile` and `tp.compiler`: a function or module captured as graphs of ops,
guarded, lowered to generated code, and replayed (torch.compile's names).

    compiled = tp.compile(model)       # or @tp.compile, @tp.compile(fullgraph=True)
    y = compiled(x)                    # first call per guard set: capture, then lower
    y = compiled(x)                    # later calls: guard check, then the compiled code
    print(compiled.explain())          # graphs, guards, breaks, kernels

The path of a call (each step a module of this package):

    frontend.py   the guard key (input shapes, dtypes, requires_grad, global modes,
                  Python values) and the cache of compiled guard sets
    reachable.py  the state the function reads without being given it (parameters,
                  closures): lifted as graph inputs, guarded by identity
    tracing.py    the capture: the function runs once under the export capture mode
                  (tensorplay/export/capture.py); data-dependent Python, random ops and
                  side effects are graph breaks (the guard set then runs eagerly)
    joint.py      when something requires grad: the backward captured too (the engine
                  runs the formulas as ops), the joint graph cut into forward + backward
    backends.py   the graphs lowered (lowering.py: passes and generated code), or
                  replayed (replay.py, backend="eager"), or handed to a custom backend
    runtime.py    a guard set's entry: the lowered graph, or forward + backward inside
                  one tp.autograd.Function; outputs.py rebuilds the function's result
    explain.py    what was captured, for people
    module.py     tp.compile(module): OptimizedModule

Sizes are always specialised: `dynamic=True` is accepted and a new size is a new guard
set (the export capture's symbolic sizes, tensorplay/export/dynamic.py, would have to
run the function three times, repeating its side effects).
"""
import tensorplay.nn  # noqa: F401  (loads tp.* first, for `import tensorplay.compiler` alone)
from tensorplay.compiler.backends import list_backends
from tensorplay.compiler.explain import ExplainOutput, explain
from tensorplay.compiler.frontend import (CompiledFunction, compile, config, disable,
                                          reset)
from tensorplay.compiler.module import OptimizedModule
from tensorplay.compiler.tracing import is_compiling
from tensorplay.errors import Unsupported

__all__ = ["compile", "reset", "disable", "is_compiling", "explain", "ExplainOutput",
           "list_backends",
           "CompiledFunction", "OptimizedModule", "Unsupported", "config"]
