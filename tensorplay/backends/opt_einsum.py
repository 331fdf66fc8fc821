"""`tp.backends.opt_einsum`: einsum's contraction-path optimiser. TensorPlay's einsum
contracts its operands from left to right, PyTorch's order when the opt-einsum package is
not installed, so the optimiser is not available: `enabled` is False and setting it (or
`strategy`) raises PyTorch's ValueError, as torch does without opt-einsum."""
import sys

from tensorplay.backends._flags import flag_setters


def is_available():
    return False


def get_opt_einsum():
    """The opt_einsum package einsum uses: None."""
    return None


class _OptEinsumModule(type(sys)):
    """The module, with `enabled` and `strategy` checked when set (PyTorch's rules)."""

    def __setattr__(self, name, value):
        if name == "enabled" and value and not is_available():
            raise ValueError(
                f"opt_einsum is not available, so setting `enabled` to {value} will not reap "
                "the benefits of calculating an optimal path for einsum. torch.einsum will "
                "fall back to contracting from left to right. To enable this optimal path "
                "calculation, please install opt-einsum.")
        if name == "strategy" and value is not None and not is_available():
            raise ValueError(
                f"opt_einsum is not available, so setting `strategy` to {value} will not be "
                "meaningful. torch.einsum will bypass path calculation and simply contract "
                "from left to right. Please install opt_einsum or unset `strategy`.")
        super().__setattr__(name, value)


enabled = False
strategy = None
sys.modules[__name__].__class__ = _OptEinsumModule
set_flags, flags = flag_setters(sys.modules[__name__], ("enabled", "strategy"))
