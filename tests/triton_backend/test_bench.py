"""benchmarks/gpu/bench_gpu.py cannot measure anything without a GPU, but it must import
and run its cases end to end: --smoke does that at tiny sizes (under the interpreter)."""
import importlib.util
import pathlib
import sys

from triton_util import CUDA  # noqa: F401 - skips without Triton

import tensorplay as tp

BENCH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "bench_gpu.py"


def load():
    spec = importlib.util.spec_from_file_location("bench_gpu", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_gpu"] = module        # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_bench_smoke_runs_every_case_or_says_why_not(capsys):
    bench = load()
    assert bench.main(["--smoke", "--markdown"]) == 0
    out = capsys.readouterr().out
    for case in bench.CASES:
        assert case.name in out
    assert "matmul float16 4096^3" in out and "skipped" not in out.split("matmul float16")[1][:60]
    for name in ("softmax", "layer_norm", "cross_entropy"):
        if bench._function(name) is None:
            assert f"tp.{name} does not exist in this build" in out
        else:
            assert f"{name} float32" in out and "Error" not in out
