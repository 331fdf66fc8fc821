"""`tp.backends.opt_einsum`: einsum's contraction-path optimiser. TensorPlay's einsum
contracts its operands from left to right, PyTorch's order when the opt-einsum package is
not installed, so the optimiser is not available and `enabled` is False. As in PyTorch
without opt-einsum: assigning `enabled` keeps the value (and changes nothing: einsum
still goes left to right), while `set_flags` / `flags` refuse to enable it, with
PyTorch's ValueError."""
import contextlib


def is_available():
    return False


def get_opt_einsum():
    """The opt_einsum package einsum uses: None."""
    return None


enabled = False
strategy = None


def _set_enabled(value):
    global enabled
    if value and not is_available():
        raise ValueError(
            f"opt_einsum is not available, so setting `enabled` to {value} will not reap "
            "the benefits of calculating an optimal path for einsum. torch.einsum will "
            "fall back to contracting from left to right. To enable this optimal path "
            "calculation, please install opt-einsum.")
    enabled = value


def _set_strategy(value):
    raise ValueError(
        f"opt_einsum is not available, so setting `strategy` to {value} will not be "
        "meaningful. torch.einsum will bypass path calculation and simply contract from "
        "left to right. Please install opt_einsum or unset `strategy`.")


def set_flags(_enabled=None, _strategy=None):
    old = (enabled, None)       # PyTorch returns no strategy when opt_einsum is missing
    if _enabled is not None:
        _set_enabled(_enabled)
    if _strategy is not None:
        _set_strategy(_strategy)
    return old


@contextlib.contextmanager
def flags(enabled=None, strategy=None):
    old = set_flags(enabled, strategy)
    try:
        yield
    finally:
        set_flags(*old)
