"""`tp.utils`: data loading (tp.utils.data)."""
from tensorplay.utils import data  # noqa: F401
