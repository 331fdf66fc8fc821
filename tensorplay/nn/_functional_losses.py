"""tp.nn.functional: losses (see _functional_layers.py)."""
