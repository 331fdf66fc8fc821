"""tp.nn.functional: padding. `pad` is the op of ops.yaml itself (constant, reflect,
replicate and circular modes; its Composite kernel picks the padding kernel)."""
from __future__ import annotations

from tensorplay._generated.functional import pad  # noqa: F401

__all__ = ["pad"]
