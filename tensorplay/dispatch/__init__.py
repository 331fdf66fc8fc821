"""Routing a call to a kernel: dispatch keys (first level) and kernel registries
(second level). `tp.dispatch.explain()` prints every hop of a call."""
from tensorplay.dispatch.keys import (  # noqa: F401
    DispatchKey, DispatchKeySet, to_autograd_key, to_autocast_key, to_vmap_key, to_backend_key,
    is_backend_key, is_autograd_key, highest_priority_key,
)
from tensorplay.dispatch.tls import ExcludeKeys, IncludeKeys, tls_local_key_sets  # noqa: F401
from tensorplay.dispatch.trace import explain  # noqa: F401
from tensorplay.dispatch.kernel_selection import (  # noqa: F401
    ShapeRule, enable_device_fallback, registry_version,
)
from tensorplay.errors import KernelConstraintError, NoKernelError  # noqa: F401


def op(name):
    """The OperatorHandle of an op (`tp.dispatch.op("add.Tensor").dump()` shows its table)."""
    from tensorplay.dispatch.dispatcher import dispatcher
    return dispatcher.find(name)


def key_set(tensor):
    """The key set a tensor contributes to a call, computed from its impl."""
    return DispatchKeySet(tensor._impl.key_set())
from tensorplay.dispatch import python_key  # noqa: F401,E402  (the Python key's fallback)
from tensorplay.dispatch.stats import cache_stats, reset_stats  # noqa: F401,E402
from tensorplay.dispatch.plan_cache import plans  # noqa: F401,E402


def enable_stats(enabled=True):
    """Count kernel choices per op (see `cache_stats()`); off by default."""
    from tensorplay.dispatch.dispatcher import dispatcher
    dispatcher.enable_stats(enabled)


def tune(op, sample_inputs, repeat=5, save=True):
    """Time every eligible candidate of `op` on `sample_inputs`, pin the fastest for their
    shape signature and save it (see tensorplay/dispatch/tuning.py)."""
    from tensorplay.dispatch import tuning
    return tuning.tune(op, sample_inputs, repeat=repeat, save=save)


def enable_tuning(enabled=True):
    """Run the candidates pinned by tune() (and saved ones of this version); off by default."""
    from tensorplay.dispatch import tuning
    tuning.enable_tuning(enabled)


def enable_autotune(enabled=True):
    """Measure the Triton kernels' launch configurations per shape bucket (on by default
    with a GPU, off under the interpreter; see tensorplay/dispatch/autotune.py)."""
    from tensorplay.dispatch import autotune
    autotune.enable_autotune(enabled)
