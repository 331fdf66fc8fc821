"""The kernels compile for a real GPU (sm_90, an H100/H200) with Triton's own compiler
and ptxas, on this machine without one: the interpreter does not type-check the way
the compiler does, so this catches what would otherwise fail on the first GPU launch."""
import os
import pathlib
import subprocess
import sys

import pytest

from triton_util import CUDA  # noqa: F401 - skips without Triton

ROOT = pathlib.Path(__file__).resolve().parents[2]      # the repository root


def test_kernels_compile_for_sm90():
    import triton
    ptxas = pathlib.Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    if not ptxas.exists():
        pytest.skip("this Triton build ships no ptxas")
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRITON_INTERPRET", "TENSORPLAY_TRITON_INTERPRET")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    done = subprocess.run([sys.executable, "-m", "triton_kernels.compile_check", "--quick"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "compiled" in done.stdout
