"""Operator database entries: pointwise ops (see opinfo/__init__.py)."""
op_db = []
