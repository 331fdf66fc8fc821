"""benchmarks/gpu/bench_gpu.py cannot measure anything without a GPU, but it must import
and run its cases end to end: --smoke runs every case once at tiny sizes (under the
interpreter), so that the script cannot rot between the rare runs on a GPU."""
import importlib.util
import pathlib
import sys

from triton_util import CUDA  # noqa: F401 - skips without Triton

BENCH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "bench_gpu.py"


def load():
    spec = importlib.util.spec_from_file_location("bench_gpu", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_gpu"] = module        # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_bench_smoke_runs_every_case_and_writes_the_results(capsys, tmp_path):
    bench = load()
    results = tmp_path / "RESULTS.md"
    results.write_text(bench.RESULTS_HEADER + "\n## an earlier run\n\n| a table |\n")
    assert bench.main(["--smoke", "--markdown", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    groups = {case.group for case in bench.CASES}
    assert {"attention", "conv", "sort", "reduction", "small", "backward"} <= groups
    for case in bench.CASES:
        line = next(line for line in out.splitlines() if line.startswith(case.name))
        # every case ran: a missing op may skip, but a case that raises fails the test
        assert "skipped" not in line or "does not exist in this build" in line, line
    text = results.read_text()
    assert text.startswith(bench.RESULTS_HEADER.splitlines()[0])
    newest, earlier = text.index("--smoke"), text.index("## an earlier run")
    assert newest < earlier         # the new run's table comes first, the old one is kept
    assert text.count("| attention |") == 5 and "| backward | conv2d backward" in text


def test_bench_stops_starting_cases_when_its_budget_is_spent():
    bench = load()
    results = bench.run_cases(bench.CASES[:2], True, lambda fn, budget: 1.0, budget=-1)
    assert all("time budget" in r["skipped"] for r in results)
