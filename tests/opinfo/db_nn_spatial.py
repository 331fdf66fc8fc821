"""Operator database entries: nn_spatial ops (see opinfo/__init__.py)."""
op_db = []
