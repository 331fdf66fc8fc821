"""Operator database entries: reduction ops (see opinfo/__init__.py)."""
op_db = []
