"""`tp.backends.mha`: PyTorch's switch for nn.MultiheadAttention's fused inference path.
TensorPlay's MultiheadAttention always runs the composed ops, so the switch is held and
changes no result (the fast path computes the same values)."""

_fastpath_enabled = True


def get_fastpath_enabled():
    return _fastpath_enabled


def set_fastpath_enabled(value):
    global _fastpath_enabled
    _fastpath_enabled = bool(value)
