"""Operator database entries: indexing ops (see opinfo/__init__.py)."""
op_db = []
