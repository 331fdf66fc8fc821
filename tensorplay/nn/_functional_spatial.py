"""tp.nn.functional: the spatial half (see functional.py)."""
