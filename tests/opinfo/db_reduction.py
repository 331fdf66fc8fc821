"""Operator database entries: the reduction family (see opinfo/__init__.py), one file per
topic: statistics, scans and sorting (db_reduction_stats.py), linear algebra
(db_reduction_linalg.py), shape ops (db_reduction_shape.py)."""
from opinfo.db_reduction_linalg import op_db as _linalg
from opinfo.db_reduction_shape import op_db as _shape
from opinfo.db_reduction_stats import op_db as _stats

op_db = [*_stats, *_linalg, *_shape]
