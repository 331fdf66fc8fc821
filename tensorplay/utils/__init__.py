"""`tp.utils`: data loading (tp.utils.data), dispatch modes and the logging tensor subclass
(tp.utils.dispatch_mode, tp.utils.logging_tensor), pictures for the notebooks
(tp.utils.pictures), the safetensors file format (tp.utils.safetensors)."""
from tensorplay.utils import data  # noqa: F401
from tensorplay.utils import dispatch_mode, logging_tensor, pictures, safetensors  # noqa: F401
