"""`tp.nn`: neural-network building blocks. `tp.nn.functional` holds the functional ops."""
from tensorplay.nn import functional  # noqa: F401
