"""benchmarks/gpu/bench_gpu.py cannot measure anything without a GPU, but it must import
and run its cases end to end: --smoke runs every case once at tiny sizes (under the
interpreter), so that the script cannot rot between the rare runs on a GPU. The default
test runs one case of each group, and the larger ones of the backward group; the whole
smoke is marked slow (about 15 s of CPU)."""
import importlib.util
import pathlib
import sys

import pytest

from triton_util import CUDA  # noqa: F401 - skips without Triton

BENCH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "bench_gpu.py"


def load():
    spec = importlib.util.spec_from_file_location("bench_gpu", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_gpu"] = module        # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _check_ran(results):
    for r in results:
        # a missing op may skip, but a case that raises fails the test
        assert "skipped" not in r or "does not exist in this build" in r["skipped"], r


def test_bench_smoke_runs_a_case_of_each_group_and_writes_the_results(tmp_path):
    bench = load()
    cases = list({case.group: case for case in reversed(bench.CASES)}.values())
    cases += [c for c in bench.CASES if c.group == "backward" and "attention" in c.name]
    assert {"attention", "conv", "sort", "reduction", "small", "backward"} <= \
        {c.group for c in cases}
    results = bench.run_cases(cases, True, bench.time_cpu, budget=600)
    _check_ran(results)
    path = tmp_path / "RESULTS.md"
    path.write_text(bench.RESULTS_HEADER + "\n## an earlier run\n\n| a table |\n")
    bench.write_results(path, results, smoke=True)
    text = path.read_text()
    assert text.startswith(bench.RESULTS_HEADER.splitlines()[0])
    newest, earlier = text.index("--smoke"), text.index("## an earlier run")
    assert newest < earlier         # the new run's table comes first, the old one is kept
    assert "| backward | attention backward" in text


@pytest.mark.slow
def test_bench_smoke_runs_every_case(capsys, tmp_path):
    bench = load()
    assert bench.main(["--smoke", "--markdown", "--results", str(tmp_path / "R.md")]) == 0
    out = capsys.readouterr().out
    for case in bench.CASES:
        line = next(line for line in out.splitlines() if line.startswith(case.name))
        assert "skipped" not in line or "does not exist in this build" in line, line


def test_bench_stops_starting_cases_when_its_budget_is_spent():
    bench = load()
    results = bench.run_cases(bench.CASES[:2], True, lambda fn, budget: 1.0, budget=-1)
    assert all("time budget" in r["skipped"] for r in results)
