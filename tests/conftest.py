"""Test configuration shared by every test file."""
import os

# The Triton kernels run in the interpreter on machines without a GPU; the flag must be
# set before triton_kernels is imported, so it is set here, before any test module.
os.environ.setdefault("TRITON_INTERPRET", "1")
