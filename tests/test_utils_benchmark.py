"""tp.utils.benchmark against torch.utils.benchmark: the same Measurement (fields,
properties, printed form) for the same statement, Compare's tables character for
character on the same times; and the timing pieces under it (tp.cuda.Event, do_bench)."""
import dataclasses
import random
import re

import pytest
import torch
import torch.utils.benchmark as torch_bench

import tensorplay as tp
import tensorplay.utils.benchmark as tp_bench
from tensorplay import _cuda_state, _device_timing


def _public(obj):
    return {a for a in dir(obj) if not a.startswith("_")}


def _shape_of_repr(m, module_name):
    """A Measurement's repr with what differs between two runs masked: the address, the
    module's name, and the numbers of the times."""
    text = re.sub(r" at 0x[0-9a-f]+>", " at ...>", repr(m)).replace(module_name, "M")
    return re.sub(r"\d+\.\d+ (ns|us|ms|s)\b", "T", text)


@pytest.mark.parametrize("stmt, kwargs", [
    ("x + 1", {}),
    ("y = x * 2\ny + 1", dict(label="twice", sub_label="float", description="n=4")),
    ("x.sum()", dict(setup="z = 0", env="A", num_threads=2)),
])
def test_timeit_measurement_matches_torch(stmt, kwargs):
    mine = tp_bench.Timer(stmt, globals={"x": tp.ones(4)}, **kwargs).timeit(20)
    theirs = torch_bench.Timer(stmt, globals={"x": torch.ones(4)}, **kwargs).timeit(20)
    assert type(mine).__name__ == type(theirs).__name__ == "Measurement"
    assert [f.name for f in dataclasses.fields(mine)] == \
        [f.name for f in dataclasses.fields(theirs)]
    assert _public(mine) == _public(theirs)
    assert dataclasses.asdict(mine.task_spec) == dataclasses.asdict(theirs.task_spec)
    for name in ("number_per_run", "metadata", "title", "env", "as_row_name", "label",
                 "sub_label", "description", "num_threads", "stmt", "setup", "has_warnings"):
        assert getattr(mine, name) == getattr(theirs, name), name
    assert len(mine.raw_times) == len(theirs.raw_times) == 1
    assert mine.times == [mine.raw_times[0] / 20]
    assert mine.median == mine.mean == mine.times[0] > 0
    assert _shape_of_repr(mine, "tensorplay.utils.benchmark.utils.common") == \
        _shape_of_repr(theirs, "torch.utils.benchmark.utils.common")


def test_blocked_and_adaptive_autorange_measure_replicates():
    timer = tp_bench.Timer("x @ x", globals={"x": tp.ones(8, 8)}, label="mm")
    blocked = timer.blocked_autorange(min_run_time=0.02)
    assert blocked.number_per_run in (1, 10, 100, 1000, 10000, 100000)
    assert sum(blocked.raw_times) >= 0.02 and len(blocked.raw_times) >= 1
    seen = []
    adaptive = timer.adaptive_autorange(min_run_time=0.01, max_run_time=0.3,
                                        callback=lambda n, t: seen.append((n, t)))
    assert len(seen) == len(adaptive.raw_times)
    assert len(adaptive.raw_times) > 3 or sum(adaptive.raw_times) > 0.3
    assert adaptive.iqr >= 0 and 1 <= adaptive.significant_figures <= 4


def test_statement_sees_torch_as_tensorplay_and_errors_match():
    assert tp_bench.Timer("torch.ones(2)")._globals["torch"] is tp
    with pytest.raises(NotImplementedError, match="blocked_autorange"):
        tp_bench.Timer().repeat()
    with pytest.raises(ValueError, match="str"):
        tp_bench.Timer(stmt=lambda: 1)
    with pytest.raises(NotImplementedError, match="C\\+\\+"):
        tp_bench.Timer(language="c++")


def test_the_timer_synchronises_the_device_before_reading_the_clock(monkeypatch):
    calls = []
    monkeypatch.setattr(_cuda_state, "synchronize", lambda device=None: calls.append(1))
    tp_bench.Timer("pass").timeit(5)
    assert len(calls) >= 4      # two clock readings around each of two blocks


def _measurements(module):
    """Measurements with fixed times, made by `module` (torch's or ours): two thread
    counts, two rows, three columns in one table; two envs in another."""
    rng = random.Random(0)
    out = []
    for threads in (1, 4):
        for sub in ("float", "double"):
            for desc, base in (("16", 1e-5), ("64", 3e-4), ("256", 2e-2)):
                scale = 1.5 if sub == "double" else 1.0
                times = [base * scale * 10 * (1 + rng.uniform(-0.3, 0.3)) for _ in range(7)]
                spec = module.TaskSpec("x @ x", "pass", label="matmul", sub_label=sub,
                                       description=desc, num_threads=threads)
                out.append(module.Measurement(10, times, spec))
    out.append(module.Measurement(1, [1e-6] * 5, module.TaskSpec(
        "x + 1", "pass", label="add", description="a", env="A")))
    out.append(module.Measurement(1, [2e-6, 2.1e-6, 2.5e-6, 3e-6], module.TaskSpec(
        "x + 2", "pass", label="add", description="b", env="B")))
    return out


@pytest.mark.parametrize("options", [(), ("trim_significant_figures",), ("colorize",),
                                     ("colorize_rowwise",),
                                     ("highlight_warnings", "trim_significant_figures")])
def test_compare_prints_torchs_tables(options):
    texts = []
    for module in (torch_bench, tp_bench):
        compare = module.Compare(_measurements(module))
        for option in options:
            if option == "colorize_rowwise":
                compare.colorize(rowwise=True)
            else:
                getattr(compare, option)()
        texts.append(str(compare))
    assert texts[0] == texts[1]
    assert "1 threads: " in texts[1] and "(A)" in texts[1]


def test_measurement_statistics_and_repr_match_torch():
    for mine, theirs in zip(_measurements(tp_bench), _measurements(torch_bench)):
        assert mine.median == pytest.approx(theirs.median, rel=1e-12)
        assert mine.iqr == pytest.approx(theirs.iqr, rel=1e-9)
        assert mine.significant_figures == theirs.significant_figures
        assert mine.has_warnings == theirs.has_warnings
        assert _shape_of_repr(mine, "tensorplay.") == _shape_of_repr(theirs, "torch.")
    merged = tp_bench.Measurement.merge(_measurements(tp_bench)[:2] * 2)
    assert [len(m.raw_times) for m in merged] == [14, 14]
    assert merged[0].number_per_run == 1
    with pytest.raises(ValueError, match="Measurement"):
        tp_bench.Compare([1.0])


@pytest.mark.parametrize("t", [3.2e-9, 4.5e-7, 2e-5, 0.0123, 1.5, 42.0])
def test_units_and_significant_figures_match_torch(t):
    assert tp_bench.select_unit(t) == torch_bench.select_unit(t)
    for n in (1, 2, 3):
        assert tp_bench.trim_sigfig(t, n) == pytest.approx(torch_bench.trim_sigfig(t, n))


# ---- events and do_bench ----------------------------------------------------------------
def test_event_elapsed_time_needs_timing_and_records():
    start, end = tp.cuda.Event(enable_timing=True), tp.cuda.Event(enable_timing=True)
    start.record()
    sum(range(20000))
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) > 0
    with pytest.raises(RuntimeError, match="enable_timing"):
        tp.cuda.Event().elapsed_time(end)
    with pytest.raises(RuntimeError, match="recorded"):
        tp.cuda.Event(enable_timing=True).elapsed_time(end)
    stream = tp.cuda.current_stream()
    assert stream.query() and stream.record_event().query()


def test_do_bench_counts_flushes_and_quantiles(monkeypatch):
    flushes = []
    monkeypatch.setattr(_device_timing, "flush_cache", lambda: flushes.append(1))
    runs = []
    low, mid, high = tp_bench.do_bench(lambda: runs.append(1), quantiles=[0.2, 0.5, 0.8],
                                       n_warmup=2, n_repeat=7)
    assert len(runs) == 2 + 7 and len(flushes) == 7
    assert 0 <= low <= mid <= high
    assert tp_bench.do_bench(lambda: None, warmup=0.01, rep=0.05, return_mode="min") >= 0
    with pytest.raises(ValueError, match="return_mode"):
        tp_bench.do_bench(lambda: None, return_mode="p99")
