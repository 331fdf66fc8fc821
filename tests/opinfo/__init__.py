"""The operator database: one `OpInfo` per op (or per overload family), in the spirit of
PyTorch's `torch.testing._internal.common_methods_invocations`.

An `OpInfo` says how to call an op, how PyTorch computes the same thing, which dtypes
it supports, how to build sample inputs and error inputs, and which generic tests apply
(in-place variant, Meta kernel, gradients). `tests/test_ops.py` walks `op_db` and runs
every generic test on every entry, so adding an op to the database is all it takes to
test it.

    core.py           OpInfo, SampleInput, ErrorInput, make_tensor, the PyTorch bridge
    samples.py        sample generators shared by families of ops (unary, binary, ...)
    db_arithmetic.py  arithmetic, comparisons, `where`, the common unary functions, the
                      basic reductions (sum, mean, max, argmax...) and mm/bmm/matmul
    db_views.py       memory ops: copies, conversions, views
    db_<topic>.py     one file per topic (pointwise, reduction, indexing, nn_spatial,
                      nn_layers, nn_rnn, optim), gathering its db_<topic>_*.py files

To add a file, write `db_<topic>.py` with an `op_db = [...]` list and append it below.
"""
from opinfo.db_arithmetic import op_db as _arithmetic
from opinfo.db_views import op_db as _views
from opinfo.db_pointwise import op_db as _pointwise
from opinfo.db_reduction import op_db as _reduction
from opinfo.db_indexing import op_db as _indexing
from opinfo.db_nn_spatial import op_db as _nn_spatial
from opinfo.db_nn_layers import op_db as _nn_layers
from opinfo.db_nn_rnn import op_db as _nn_rnn
from opinfo.db_optim import op_db as _optim
from opinfo.db_common_helpers import op_db as _common_helpers

op_db = [*_arithmetic, *_views, *_pointwise, *_reduction, *_indexing, *_nn_spatial,
         *_nn_layers, *_nn_rnn, *_optim, *_common_helpers]

__all__ = ["op_db"]
