"""`tp.cpu`: the CPU device's namespace, as `torch.cpu` has it (`tp.cpu.amp.autocast`)."""
from tensorplay.amp import cpu_amp as amp  # noqa: F401


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def synchronize(device=None):
    """Nothing to wait for: CPU kernels finish before they return."""
