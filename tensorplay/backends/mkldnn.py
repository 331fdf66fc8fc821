"""`tp.backends.mkldnn`: oneDNN (MKL-DNN), PyTorch's optimised CPU convolutions. The CPU
kernels here are NumPy, so it is never available; the flags are held, with PyTorch's
defaults, and change nothing."""
import sys

from tensorplay.backends._flags import flag_setters

VERBOSE_OFF = 0
VERBOSE_ON = 1
VERBOSE_ON_CREATION = 2

enabled = True
deterministic = False
allow_tf32 = False
fp32_precision = "none"


def is_available():
    return False


def is_acl_available():
    """Arm Compute Library (oneDNN on Arm): not available either."""
    return False


class verbose:
    """`with tp.backends.mkldnn.verbose(level):` oneDNN's logging; nothing to log here."""

    def __init__(self, level):
        self.level = level

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


set_flags, flags = flag_setters(sys.modules[__name__],
                                ("enabled", "deterministic", "allow_tf32"))
