"""tp.nn.functional: the layers half (see functional.py)."""
