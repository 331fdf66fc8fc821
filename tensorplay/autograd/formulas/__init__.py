"""Helpers that derivatives.yaml formulas call by name, one module per op family (the
families of tensorplay/codegen/families.py; core.py holds what every family uses, such as
`sum_to`).

Each is written with TensorPlay ops only, so a backward pass built from them can
itself be differentiated (`create_graph=True` gives higher-order gradients). The
code generator reads the public functions of every module here (by parsing, not
importing) and imports them by name into `_generated/autograd_nodes.py`.
"""
from tensorplay.autograd.formulas.activations import *  # noqa: F401,F403
from tensorplay.autograd.formulas.attention import *  # noqa: F401,F403
from tensorplay.autograd.formulas.complex import *  # noqa: F401,F403
from tensorplay.autograd.formulas.conv import *  # noqa: F401,F403
from tensorplay.autograd.formulas.core import *  # noqa: F401,F403
from tensorplay.autograd.formulas.distance import *  # noqa: F401,F403
from tensorplay.autograd.formulas.dropout import *  # noqa: F401,F403
from tensorplay.autograd.formulas.eigen import *  # noqa: F401,F403
from tensorplay.autograd.formulas.einsum import *  # noqa: F401,F403
from tensorplay.autograd.formulas.fft import *  # noqa: F401,F403
from tensorplay.autograd.formulas.forward import *  # noqa: F401,F403
from tensorplay.autograd.formulas.embedding import *  # noqa: F401,F403
from tensorplay.autograd.formulas.indexing import *  # noqa: F401,F403
from tensorplay.autograd.formulas.linalg import *  # noqa: F401,F403
from tensorplay.autograd.formulas.losses import *  # noqa: F401,F403
from tensorplay.autograd.formulas.normalization import *  # noqa: F401,F403
from tensorplay.autograd.formulas.padding import *  # noqa: F401,F403
from tensorplay.autograd.formulas.pointwise import *  # noqa: F401,F403
from tensorplay.autograd.formulas.pooling import *  # noqa: F401,F403
from tensorplay.autograd.formulas.qr import *  # noqa: F401,F403
from tensorplay.autograd.formulas.reduction import *  # noqa: F401,F403
from tensorplay.autograd.formulas.resample import *  # noqa: F401,F403
from tensorplay.autograd.formulas.rnn import *  # noqa: F401,F403
from tensorplay.autograd.formulas.scan import *  # noqa: F401,F403
from tensorplay.autograd.formulas.shape import *  # noqa: F401,F403
from tensorplay.autograd.formulas.softmax import *  # noqa: F401,F403
from tensorplay.autograd.formulas.sorting import *  # noqa: F401,F403
from tensorplay.autograd.formulas.special import *  # noqa: F401,F403
from tensorplay.autograd.formulas.triangular import *  # noqa: F401,F403
