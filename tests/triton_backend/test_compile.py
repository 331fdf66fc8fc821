"""The kernels compile for a real GPU (sm_90, an H100/H200) as a real launch specialises
them (triton_kernels/compile_check.py): the interpreter does not type-check the way the
compiler does, and says nothing of registers, spills or tensor cores.

    the recorder           a launch is recorded with the specialisation Triton's JIT gives
                           it (aligned pointers, ints divisible by 16, ints equal to 1) and
                           every autotune config of a choice (in-process, interpreter)
    the committed report   COMPILE_REPORT.md / compile_report.json were made from the
                           kernel sources as they are now (hashes), cover every kernel, and
                           show no compile failure and no spill in an fp16/bf16 signature
    a live compile         `compile_check --quick`: an fp16 softmax and a small fp16 matmul
                           recorded and compiled for sm_90, in subprocesses

Regenerate the report after changing triton_kernels/ or the calls:
`python -m triton_kernels.compile_check --all --jobs 2` (recording the calls takes about
half an hour on two busy cores; compiling reuses the committed results of unchanged
kernel sources).
"""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from triton_util import CUDA  # noqa: F401 - skips without Triton

import tensorplay as tp
from triton_kernels import compile_check
from triton_kernels._launch_record import recording

ROOT = pathlib.Path(__file__).resolve().parents[2]      # the repository root
REGENERATE = "run `python -m triton_kernels.compile_check --all` and commit its report"


def _records(recorder, kernel):
    return [r for r in recorder.records.values() if r["kernel"].endswith(kernel)]


def test_a_launch_is_recorded_with_its_specialisation_and_every_config():
    x = tp.empty(4, 48, device="cuda")          # tp.empty launches nothing
    with recording() as recorder:
        tp.softmax(x, -1)
        tp.softmax(x[:, 1:], -1)                # read in place, 4 bytes past an aligned row
    found = _records(recorder, "softmax:softmax_kernel")
    assert all(r["signature"]["in_ptr"] == "*fp32" for r in found)
    # x's pointer is 16-byte aligned, x[:, 1:]'s is not
    assert {"in_ptr" in r["aligned"] for r in found} == {True, False}
    # every config of an autotuned choice is recorded, not only the one that ran
    from triton_kernels import linalg
    a = tp.empty(40, 24, device="cuda")         # no block divides 40: the masked kernel
    with recording() as recorder:
        tp.mm(a, tp.empty(24, 40, device="cuda"))
    found = _records(recorder, "linalg:matmul_kernel")
    blocks = {(r["constexprs"]["BLOCK_M"], r["constexprs"]["BLOCK_N"],
               r["constexprs"]["BLOCK_K"]) for r in found}
    expected = {(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.kwargs["BLOCK_K"])
                for c in linalg.masked_configs()}
    assert blocks == expected and len(blocks) > 1


def test_an_int_equal_to_one_is_a_compile_time_constant():
    x = tp.empty(64, device="cuda")
    with recording() as recorder:
        x.add_(1.5)
    (record,) = {json.dumps(r, sort_keys=True): r for r in
                 _records(recorder, "add_kernel_rank1")}.values()
    assert record["signature"]["out_stride0"] == "constexpr"
    assert record["constexprs"]["out_stride0"] == 1
    assert record["signature"]["n_elements"] == "i32" and "n_elements" in record["aligned"]


def test_discovery_finds_launched_kernels_not_device_functions():
    kernels = compile_check.discover()
    assert "triton_kernels.softmax:softmax_kernel" in kernels
    assert "triton_kernels.linalg:matmul_kernel" in kernels
    assert "generated:*" in kernels
    assert "triton_kernels.softmax:row_max_and_sum" not in kernels    # softmax_kernel's
    assert not any(k.startswith("triton_kernels._math:") for k in kernels)


def _report():
    path = compile_check.REPORT_JSON
    if not path.exists():
        pytest.fail(f"{path.name} is missing: {REGENERATE}")
    return json.loads(path.read_text())


def test_the_committed_report_is_fresh():
    report = _report()
    changed = sorted(f for f, h in compile_check.source_hashes().items()
                     if report["sources"].get(f) != h)
    assert not changed, f"the compile report predates changes to {changed}: {REGENERATE}"
    assert report["kernels"] == sorted(compile_check.discover()), REGENERATE
    assert compile_check.REPORT_MD.read_text() == compile_check.render(report), REGENERATE


def test_the_committed_report_shows_no_spills_in_half_configs_and_no_failures():
    report = _report()
    assert report["results"], "the report compiled nothing"
    assert compile_check.problems(report) == []
    assert not set(compile_check.NOT_RECORDED) - set(report["not_covered"]), \
        "NOT_RECORDED excuses a kernel the calls now cover: remove it"


def test_problems_names_spills_failures_and_uncovered_kernels():
    half = {"kernel": "k", "label": "fp16", "half": True, "error": None, "n_spills": 64,
            "num_warps": 8, "num_stages": 3}
    report = {"results": [half, dict(half, half=False), dict(half, error="boom")],
              "not_covered": ["triton_kernels.x:new_kernel"]}
    found = compile_check.problems(report)
    assert any(p.startswith("spills 64 bytes (fp16/bf16)") for p in found)
    assert sum("spills" in p for p in found) == 1         # fp32 spills are reported only
    assert any("does not compile" in p and "boom" in p for p in found)
    assert "not covered by the recorded calls: triton_kernels.x:new_kernel" in found


def test_kernels_compile_for_sm90():
    import triton
    ptxas = pathlib.Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    if not ptxas.exists():
        pytest.skip("this Triton build ships no ptxas")
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRITON_INTERPRET", "TENSORPLAY_TRITON_INTERPRET")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    out = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"compile_check_{os.getpid()}.json"
    done = subprocess.run([sys.executable, "-m", "triton_kernels.compile_check", "--quick",
                           "--json", str(out)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())["results"]
    out.unlink()
    matmul = [r for r in results if r["kernel"].endswith("matmul_kernel")]
    softmax = [r for r in results if r["kernel"].endswith("softmax_kernel")]
    assert len(matmul) == 2 and len(softmax) == 1        # every config the choices offer
    assert all(r["n_regs"] and r["n_spills"] == 0 for r in results)
    # aligned fp16 tiles: asynchronous copies into shared memory, tensor-core dots
    assert all(r["cp_async"] and r["tensor_cores"] for r in matmul)
    assert any(r["tensor_cores"] == "wgmma" for r in matmul)


def test_results_are_reused_only_while_the_kernel_sources_are_unchanged():
    report = _report()
    assert compile_check.reusable(report, 90)
    assert compile_check.reusable(report, 80) == {}           # another target
    assert compile_check.reusable(dict(report, kernel_sources="0" * 16), 90) == {}


def test_the_kernel_sources_hash_reads_jit_functions_and_their_constants(tmp_path,
                                                                         monkeypatch):
    for name, text in (("a.py", "import triton\nK = 4\nL = 5\n@triton.jit\n"
                        "def k(x):\n    return x + K\n\ndef launcher():\n    pass\n"),):
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(compile_check, "HERE", tmp_path)
    first = compile_check.kernel_sources()
    path = tmp_path / "a.py"
    path.write_text(path.read_text().replace("pass", "return 1").replace("L = 5", "L = 6"))
    assert compile_check.kernel_sources() == first       # a launcher, an unread constant
    path.write_text(path.read_text().replace("K = 4", "K = 8"))
    assert compile_check.kernel_sources() != first       # a constant the kernel reads
