"""`tp.backends.cudnn`: PyTorch's cuDNN switches. TensorPlay's GPU kernels are Triton,
not cuDNN, so `is_available()` is False and every flag is held without effect, exactly as
PyTorch holds them on a build or machine without cuDNN (scripts set `benchmark = True` or
`deterministic = True` unconditionally). For reproducible GPU runs, TensorPlay's switch
is `tp.use_deterministic_algorithms`; PyTorch too keeps it apart from this flag."""
import sys

from tensorplay.backends._flags import flag_setters

# PyTorch's defaults.
enabled = True
benchmark = False
benchmark_limit = None      # None without cuDNN, as PyTorch reports it (10 with it)
deterministic = False
allow_tf32 = True
fp32_precision = "none"


def is_available():
    """False: TensorPlay does not link cuDNN."""
    return False


def version():
    """The cuDNN version: None, as PyTorch answers without cuDNN."""
    return None


def is_acceptable(tensor):
    """Whether cuDNN would take this tensor: never here."""
    return False


set_flags, flags = flag_setters(
    sys.modules[__name__],
    ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32"))
