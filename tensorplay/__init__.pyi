# Static view of the `tensorplay` namespace for editors and type checkers: at run time
# the names are loaded lazily from tensorplay/_api.py (see __init__.py).
from tensorplay._api import *  # noqa: F401,F403
from tensorplay._generated.functional import *  # noqa: F401,F403
from tensorplay import autograd as autograd, dispatch as dispatch, library as library
from tensorplay import errors as errors, nn as nn, profiler as profiler, cuda as cuda
from tensorplay import testing as testing, accelerator as accelerator
from tensorplay import distributed as distributed
from tensorplay import sparse as sparse
from tensorplay import func as func

__version__: str
from tensorplay import amp as amp, cpu as cpu
from tensorplay import backends as backends, onnx as onnx, serialization as serialization
from tensorplay import export as export
from tensorplay import compiler as compiler
from tensorplay.compiler import compile as compile
