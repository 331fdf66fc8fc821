"""The operator database: one `OpInfo` per op (or per overload family), in the spirit of
PyTorch's `torch.testing._internal.common_methods_invocations`.

An `OpInfo` says how to call an op, how PyTorch computes the same thing, which dtypes
it supports, how to build sample inputs and error inputs, and which generic tests apply
(in-place variant, Meta kernel, gradients). `tests/test_ops.py` walks `op_db` and runs
every generic test on every entry, so adding an op to the database is all it takes to
test it.

    core.py           OpInfo, SampleInput, ErrorInput, make_tensor, the PyTorch bridge
    samples.py        sample generators shared by families of ops (unary, binary, ...)
    db_<family>.py    the entries of one op family (the families of
                      tensorplay/codegen/families.py); pointwise continues in
                      db_pointwise_math.py (float functions, rounding, division, blends)
    indexing_errors.py, reduction_common.py   what some families' entries share
    fuzz_order.txt    the order of `op_db` (below)

To add a family's file, write `db_<family>.py` with an `op_db = [...]` list and add it to
FAMILIES below.
"""
import importlib
import pathlib

FAMILIES = ("pointwise", "pointwise_math", "logic", "activations", "random", "dropout",
            "reduction", "scan", "sorting", "linalg", "triangular", "qr", "eigen", "views",
            "shape", "copy", "indexing", "embedding", "conv", "pooling", "padding", "resample",
            "fold", "normalization", "softmax", "losses", "attention", "distance", "rnn",
            "optim", "bessel", "special", "complex", "fft")

_entries = [entry for family in FAMILIES
            for entry in importlib.import_module(f"opinfo.db_{family}").op_db]

# The fuzzer (tests/fuzzing/programs.py) draws ops by their index in op_db, so the order of
# the entries decides what each seed's program calls. fuzz_order.txt keeps the order the
# seeds were recorded with (entries by full name); an entry it does not list comes after.
_ORDER = {name: i for i, name in enumerate(
    (pathlib.Path(__file__).parent / "fuzz_order.txt").read_text().split())}
op_db = sorted(_entries, key=lambda e: _ORDER.get(e.full_name, len(_ORDER)))

__all__ = ["op_db"]
