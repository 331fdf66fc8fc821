"""Database entries for the logic ops: isnan/isinf/isfinite, isclose/allclose/equal,
logical_* and bitwise_* (with their operators)."""
op_db = []
