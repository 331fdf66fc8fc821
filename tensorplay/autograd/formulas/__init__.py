"""Helpers that derivatives.yaml formulas call by name, one module per family of ops.

Each is written with TensorPlay ops only, so a backward pass built from them can
itself be differentiated (`create_graph=True` gives higher-order gradients). The
code generator reads the public functions of every module here (by parsing, not
importing) and imports them by name into `_generated/autograd_nodes.py`.
"""
from tensorplay.autograd.formulas.core import *  # noqa: F401,F403
from tensorplay.autograd.formulas.pointwise import *  # noqa: F401,F403
from tensorplay.autograd.formulas.reduction import *  # noqa: F401,F403
from tensorplay.autograd.formulas.indexing import *  # noqa: F401,F403
from tensorplay.autograd.formulas.nn_spatial import *  # noqa: F401,F403
from tensorplay.autograd.formulas.nn_layers import *  # noqa: F401,F403
