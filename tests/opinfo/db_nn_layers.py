"""Operator database entries: nn_layers ops (see opinfo/__init__.py), one module by topic."""
from opinfo.db_nn_layers_losses import op_db as _losses
from opinfo.db_nn_layers_misc import op_db as _misc
from opinfo.db_nn_layers_nll import op_db as _nll
from opinfo.db_nn_layers_norm import op_db as _norm
from opinfo.db_nn_layers_softmax import op_db as _softmax

op_db = [*_softmax, *_nll, *_losses, *_norm, *_misc]
