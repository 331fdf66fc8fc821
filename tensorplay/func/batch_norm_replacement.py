"""`replace_all_batch_norm_modules_`: batch norm without running statistics, for vmap.

A BatchNorm module in training mode writes its running_mean/var in place. Under vmap
that write would put each example's (or each ensemble member's) batch statistics into
one unbatched buffer, which vmap refuses. As torch.func's, this helper makes every
BatchNorm under `root` normalise with the batch statistics alone and keep none.
"""
from __future__ import annotations

from tensorplay.nn.modules.normalization import _BatchNorm


def _without_running_stats(module):
    if isinstance(module, _BatchNorm) and module.track_running_stats:
        module.running_mean = None
        module.running_var = None
        module.num_batches_tracked = None
        module.track_running_stats = False


def replace_all_batch_norm_modules_(root):
    """In place: every BatchNorm module in `root` (root included) gets running_mean and
    running_var None and track_running_stats False. Returns `root`."""
    for module in root.modules():
        _without_running_stats(module)
    return root
