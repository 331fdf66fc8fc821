"""`tp.utils`: data loading (tp.utils.data), activation checkpointing
(tp.utils.checkpoint), dispatch modes and the logging tensor subclass
(tp.utils.dispatch_mode, tp.utils.logging_tensor), pictures for the notebooks
(tp.utils.pictures), the safetensors file format (tp.utils.safetensors)."""
from tensorplay.utils import data  # noqa: F401
from tensorplay.utils import checkpoint, dispatch_mode, logging_tensor  # noqa: F401
from tensorplay.utils import pictures, safetensors  # noqa: F401
