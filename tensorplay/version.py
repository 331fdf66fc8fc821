"""`tp.version` (torch.version): what this build is. TensorPlay is built with no CUDA,
HIP or XPU toolkit (its GPU kernels are Triton's, compiled when they first run)."""
from tensorplay import __version__  # noqa: F401

cuda = None
hip = None
rocm = None
xpu = None
debug = False
git_version = "unknown"
