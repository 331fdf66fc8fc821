"""Operator database entries: the pointwise ops beyond arithmetic (see opinfo/__init__.py).

    db_pointwise_math.py         float functions, rounding, division, clamp, lerp, ...
    db_pointwise_logic.py        isnan/isclose/equal, logical and bitwise ops
    db_pointwise_activations.py  relu6 ... prelu
    db_pointwise_random.py       normal_, uniform_, bernoulli, multinomial, ...
"""
from opinfo.db_pointwise_math import op_db as _math
from opinfo.db_pointwise_logic import op_db as _logic
from opinfo.db_pointwise_activations import op_db as _activations
from opinfo.db_pointwise_random import op_db as _random

op_db = [*_math, *_logic, *_activations, *_random]
