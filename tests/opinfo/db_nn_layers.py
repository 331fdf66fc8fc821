"""Operator database entries: nn_layers ops (see opinfo/__init__.py)."""
op_db = []
