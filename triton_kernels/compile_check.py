"""Compile the backend's kernels as a GPU would see them, on a machine without one.

The interpreter runs a kernel's Python, but it does not type-check the way the compiler
does, and it says nothing of what the GPU gets: registers, spills to local memory, shared
memory, whether the loads became asynchronous copies and the dots tensor-core
instructions. `triton.compile` with an explicit target runs the real pipeline (Triton IR
-> PTX -> cubin with the ptxas that ships with Triton) and needs no GPU. Two steps:

    record    the launches of real calls (tests/triton_backend/launch_calls.py), run in
              the interpreter with the launches planned as on a GPU, each with the
              specialisation a real launch gets and every autotune config
              (triton_kernels/_launch_record.py)
    compile   each recorded signature for sm_90 (H100/H200) without the interpreter, and
              read ptxas's report (registers, spill bytes) and the PTX (cp.async, mma /
              wgmma) of each

    python -m triton_kernels.compile_check --all     # every call: writes COMPILE_REPORT.md
                                                     # and compile_report.json
    python -m triton_kernels.compile_check --quick   # a few GPU-shaped calls (the test's)

    --jobs 2            compile in two processes
    --records F [F...]  compile recordings made before (launch_calls.py --out F)
    --fresh             compile every signature: by default --all reuses the committed
                        report's result of a signature it already holds, when the
                        kernel sources (every @triton.jit function and the constants
                        they read), Triton and the target are unchanged, so a change
                        elsewhere (a launcher, the calls) compiles only new signatures

The whole run takes long on two busy cores: recording the calls about 30 minutes of wall
clock (7 of CPU), compiling the ~750 selected signatures another 20-30 (the matmul's big
tiles take seconds each).

Every kernel of triton_kernels/ (found by reading the sources: each module-level
`@triton.jit` function that no other one calls) must be launched by the calls, or be
listed in NOT_RECORDED with the reason; the report says which are not covered.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import io
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
CALLS = ROOT / "tests" / "triton_backend" / "launch_calls.py"
REPORT_MD = HERE / "COMPILE_REPORT.md"
REPORT_JSON = HERE / "compile_report.json"

# Modules whose @triton.jit functions are the pointwise template's helpers: the generated
# kernels (_template.py) call them, no module-level kernel does.
HELPER_MODULES = ("_math", "_special_math")

# Kernels the recorded calls do not launch, each with the reason (a test fails on any
# other kernel left uncovered).
NOT_RECORDED = {}

HALF_TYPES = ("*fp16", "*bf16")


# ---- which kernels there are -----------------------------------------------------------
def _is_jit(decorator):
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return isinstance(target, ast.Attribute) and target.attr == "jit"


def discover():
    """{kernel id: module file} for each kernel of triton_kernels/: a module-level
    @triton.jit function that no other @triton.jit function names (those it names are
    device functions), outside the template's helper modules; plus the pointwise
    template, whose kernels are generated ('generated:*')."""
    jit, named = {}, set()
    for path in sorted(HERE.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and any(map(_is_jit, node.decorator_list)):
                jit[f"triton_kernels.{path.stem}:{node.name}"] = path.name
                named.update(n.id if isinstance(n, ast.Name) else n.attr
                             for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute))
                             and (n.id if isinstance(n, ast.Name) else n.attr) != node.name)
    kernels = {k: f for k, f in jit.items()
               if k.split(":")[1] not in named and f[:-3] not in HELPER_MODULES}
    kernels["generated:*"] = "_template.py"
    return kernels


def source_hashes():
    """{file: sha256} of what decides the launches: the kernel modules and the calls."""
    files = sorted(HERE.glob("*.py")) + [CALLS]
    return {str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest()[:16]
            for p in files}


def covers(kernel, launched):
    if kernel == "generated:*":
        return any(k.startswith("generated:") for k in launched)
    return kernel in launched


# ---- step 1: record ----------------------------------------------------------------------
def record(quick, out):
    """Run the calls in a subprocess (interpreter, planned as a GPU) into `out`."""
    if not CALLS.exists():
        raise SystemExit(f"compile_check: {CALLS} is missing (a checkout of the repository "
                         "has it; an installed package does not)")
    env = dict(os.environ, TRITON_INTERPRET="1", TENSORPLAY_PLAN_AS_GPU="1")
    env.pop("TENSORPLAY_TRITON_INTERPRET", None)
    done = subprocess.run([sys.executable, str(CALLS), "--out", str(out)]
                          + (["--quick"] if quick else []), env=env, cwd=ROOT)
    if done.returncode:
        raise SystemExit(f"compile_check: recording the launches failed ({done.returncode})")
    return json.loads(pathlib.Path(out).read_text())


def merge(recordings):
    """Several recordings as one (their records in order, the calls counted together)."""
    return {"calls": sum(r["calls"] for r in recordings),
            "failed_calls": [c for r in recordings for c in r["failed_calls"]],
            "dry_run_errors": [e for r in recordings for e in r["dry_run_errors"]],
            "records": [x for r in recordings for x in r["records"]],
            "seconds": sum(r.get("seconds") or 0 for r in recordings) or None}


# ---- step 2: compile ---------------------------------------------------------------------
def _kernel_fn(record):
    import importlib

    # The kernel modules import `library` with `from tensorplay import library`; imported
    # first (no `import tensorplay` before it), that reaches tensorplay's lazy __getattr__,
    # which loads every backend, this half-imported module among them. Imported as a
    # submodule first, it is an attribute already.
    import tensorplay.library  # noqa: F401
    kind, name = record["kernel"].split(":", 1)
    if kind == "generated":
        from triton_kernels import _template
        return _template._compile(name, record["source"])
    return getattr(importlib.import_module(kind), name)


def _ptxas_log(compile_fn, ptx_of):
    """Run `compile_fn()`, returning (its result, ptxas's -v report). Triton runs ptxas
    with -v and prints the report when TRITON_DUMP_PTXAS_LOG is on (3.9); a Triton
    without that knob gets ptxas run again on the PTX, with -v."""
    from triton import knobs
    if hasattr(knobs.nvidia, "dump_ptxas_log"):
        knobs.nvidia.dump_ptxas_log = True
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            compiled = compile_fn()
        return compiled, text.getvalue()
    compiled = compile_fn()
    ptxas = pathlib.Path(knobs.nvidia.ptxas.path)
    with tempfile.TemporaryDirectory() as tmp:
        src = pathlib.Path(tmp, "k.ptx")
        src.write_text(ptx_of(compiled))
        arch = compiled.metadata.target.arch
        done = subprocess.run([str(ptxas), "-v", f"--gpu-name=sm_{arch}a", str(src), "-o",
                               str(src.with_suffix(".cubin"))], capture_output=True, text=True)
    return compiled, done.stderr


def compile_one(record, arch=90):
    """Compile one recorded signature; what the GPU gets, as a dict."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend
    from triton_kernels._launch_record import decode
    fn = _kernel_fn(record)
    target = GPUTarget("cuda", arch, 32)        # NVIDIA warps are 32 threads
    backend = make_backend(target)
    constexprs = {k: decode(v) for k, v in record["constexprs"].items()}
    attrs = {(fn.arg_names.index(name),): backend.parse_attr("D") for name in record["aligned"]}
    source = ASTSource(fn, record["signature"], constexprs, attrs)
    result = {"kernel": record["kernel"], "label": label(record),
              "half": any(t in HALF_TYPES for t in record["signature"].values()),
              **{k: record["options"].get(k) for k in ("num_warps", "num_stages")}}
    try:
        compiled, log = _ptxas_log(
            lambda: triton.compile(source, target=target, options=dict(record["options"])),
            lambda c: c.asm["ptx"])
    except Exception as e:      # noqa: BLE001 - a kernel that does not compile is reported
        first = str(e).strip().splitlines()
        return dict(result, error=f"{type(e).__name__}: {first[0] if first else ''}"[:300])
    ptx = compiled.asm["ptx"]
    regs = re.findall(r"Used (\d+) registers", log)
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    return dict(result, error=None,
                n_regs=max(map(int, regs)) if regs else None,
                n_spills=max((int(s) + int(l)) for s, l in spills) if spills else 0,
                shared=compiled.metadata.shared,
                cp_async="cp.async" in ptx,
                tensor_cores="wgmma" if "wgmma.mma_async" in ptx else
                "mma" if re.search(r"\bmma\.sync", ptx) else "")


def _shown(value):
    if isinstance(value, dict):
        return value["tl"] if "tl" in value else tuple(map(_shown, value["tuple"]))
    return value


def label(record):
    """A short description of a signature: pointer types, constexprs, specialisation."""
    sig, const = record["signature"], record["constexprs"]
    pointers = [t[1:] for t in sig.values() if t.startswith("*")]
    ones = record.get("ones", [])
    shown = [f"{k}={_shown(v)}" for k, v in const.items() if k not in ones]
    text = f"{'/'.join(pointers)} {' '.join(shown)}"
    if ones:
        text += f"; =1: {','.join(ones)}"
    ints = [k for k, t in sig.items() if t in ("i32", "i64")]
    divisible = [k for k in record["aligned"] if k in ints]
    if divisible:
        text += f"; %16: {','.join(divisible)}"
    unaligned = [k for k, t in sig.items() if t.startswith("*") and k not in record["aligned"]]
    if unaligned:
        text += f"; unaligned: {','.join(unaligned)}"
    return text


def selected(records):
    """The records to compile, one per *compile key* (the first met; the GPU-shaped calls
    come first, with their aligned, unit-stride launches):

        a kernel of a module       of the GPU-shaped calls: its pointer types,
                                   constexprs and launch options (the ints'
                                   specialisation of the first launch met); of the
                                   samples: its constexprs (the samples are there to
                                   reach every kernel and every constexpr branch)
        a generated kernel         of the GPU-shaped calls: each launch option (every
                                   config of the template); of the samples: one
                                   signature per kernel (the template's code around each
                                   expression is the same)

Every recorded signature would be about 4000 compilations (hours on two cores): the
samples' odd sizes and strides, hundreds of template expressions times dtypes, ranks and
configs.

    Returns (selected, how many recorded signatures were left out)."""
    seen, chosen = set(), []
    for r in records:
        declared = {k: v for k, v in r["constexprs"].items() if k not in r.get("ones", [])}
        if r["kernel"].startswith("generated:"):
            key = [r["kernel"]] + ([r["options"]] if r.get("phase") != "samples" else [])
        elif r.get("phase") == "samples":
            key = [r["kernel"], declared]
        else:
            key = [r["kernel"], [t for t in r["signature"].values() if t[0] == "*"],
                   declared, r["options"]]
        key = json.dumps(key, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        chosen.append(r)
    return chosen, len(records) - len(chosen)


def kernel_sources():
    """sha256 prefix of what a compiled signature depends on besides itself: the source
    of every @triton.jit function of triton_kernels/, and of each module-level assignment
    whose name one of them reads (a constant a kernel uses). A launcher's change (its
    block sizes, its config list) changes what is launched, not how a given signature
    compiles."""
    digest = hashlib.sha256()
    for path in sorted(HERE.glob("*.py")):
        text = path.read_text()
        tree = ast.parse(text)
        jit = [n for n in tree.body if isinstance(n, ast.FunctionDef)
               and any(map(_is_jit, n.decorator_list))]
        names = {n.id for f in jit for n in ast.walk(f) if isinstance(n, ast.Name)}
        constants = [n for n in tree.body if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in names for t in n.targets)]
        for node in jit + constants:
            digest.update(f"{path.name}\n{ast.get_source_segment(text, node)}\n".encode())
    return digest.hexdigest()[:16]


def _reuse_key(result):
    return (result["kernel"], result["label"], result["num_warps"], result["num_stages"])


def reusable(previous, arch):
    """{key: result} of the previous report's results, when its kernel sources, Triton and
    target are this run's (a signature's result is then the same: only new signatures
    need compiling); else {}."""
    import triton
    if previous is None or previous.get("triton") != triton.__version__ or \
            previous.get("arch") != f"sm_{arch}":
        return {}
    if previous.get("kernel_sources") != kernel_sources():
        return {}
    return {_reuse_key(r): r for r in previous["results"]}


def compile_all(records, jobs, arch=90, reuse=None):
    """Compile every record (in `jobs` processes), in a fresh Triton cache (a cached
    kernel would skip ptxas, and its report with it); a record whose result `reuse`
    holds is not compiled again. Returns (results, how many were reused)."""
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="compile_check_")
    reuse = reuse or {}
    known = [reuse.get(_reuse_key({"kernel": r["kernel"], "label": label(r),
                                   "num_warps": r["options"].get("num_warps"),
                                   "num_stages": r["options"].get("num_stages")}))
             for r in records]
    todo = [r for r, k in zip(records, known) if k is None]
    if jobs <= 1:
        done = [compile_one(r, arch) for r in todo]
    else:
        from concurrent.futures import ProcessPoolExecutor
        with ProcessPoolExecutor(jobs) as pool:
            done = list(pool.map(compile_one, todo, [arch] * len(todo), chunksize=4))
    fresh = iter(done)
    return [k if k is not None else next(fresh) for k in known], len(records) - len(todo)


# ---- the report --------------------------------------------------------------------------
def summarise(results, recorded, seconds, arch):
    import triton
    kernels = discover()
    launched = {r["kernel"] for r in results}
    uncovered = sorted(k for k in kernels if not covers(k, launched))
    return {
        "triton": triton.__version__, "arch": f"sm_{arch}", "seconds": round(seconds),
        "calls": recorded["calls"], "failed_calls": recorded["failed_calls"],
        "recorded": len(results) + recorded["left_out"], "reused": recorded["reused"],
        "record_seconds": recorded.get("seconds"),
        "dry_run_errors": recorded["dry_run_errors"],
        "sources": source_hashes(), "kernel_sources": kernel_sources(),
        "kernels": sorted(kernels), "not_covered": uncovered,
        "results": sorted(results, key=lambda r: (r["kernel"], r["label"],
                                                  r["num_warps"] or 0, r["num_stages"] or 0)),
    }


def problems(report):
    """What the test fails on: a signature that does not compile, register spills in a
    signature with fp16/bf16 tensors, a kernel not covered and not excused."""
    found = [f"does not compile: {r['kernel']} [{r['label']}]: {r['error']}"
             for r in report["results"] if r["error"]]
    found += [f"spills {r['n_spills']} bytes (fp16/bf16): {r['kernel']} [{r['label']}] "
              f"num_warps={r['num_warps']} num_stages={r['num_stages']}"
              for r in report["results"] if r["half"] and not r["error"] and r["n_spills"]]
    found += [f"not covered by the recorded calls: {k}" for k in report["not_covered"]
              if k not in NOT_RECORDED]
    return found


def render(report):
    """COMPILE_REPORT.md: a summary, then one table per kernel (the generated pointwise
    kernels summarised, one row each)."""
    results = report["results"]
    ok = [r for r in results if not r["error"]]
    spilling = [r for r in ok if r["n_spills"]]
    lines = [
        "# Compile report: the Triton kernels as an sm_90 GPU gets them",
        "",
        "Generated by `python -m triton_kernels.compile_check --all` (do not edit): every",
        "launch of the recorded calls (tests/triton_backend/launch_calls.py), with the",
        "specialisation a real launch gets and every autotune config, compiled for "
        f"{report['arch']} by Triton {report['triton']}: {len(results)} of the "
        f"{report['recorded']} signatures recorded (`selected` in compile_check.py says",
        "which: one per kernel, pointer types, constexprs and options).",
        "",
        f"This run: recording {_seconds(report.get('record_seconds'))}, compiling "
        f"{report['seconds']} s ({report.get('reused', 0)} results reused from the previous",
        "report, whose kernel sources were the same; `--fresh` compiles every one).",
        "",
        "Columns: registers per thread, spill bytes (stores + loads, local memory), shared",
        "memory bytes, cp.async (asynchronous global -> shared copies in the PTX), tensor",
        "cores (`wgmma`: Hopper's warpgroup MMA; `mma`: mma.sync). In a signature: the",
        "pointer types, the constexprs, `=1` the ints specialised as 1 (unit strides), `%16`",
        "the ints divisible by 16, `unaligned` the pointers not 16-byte aligned.",
        "",
        "## Summary",
        "",
        f"- kernels found in triton_kernels/: {len(report['kernels'])}; not covered by the "
        f"calls: {', '.join(report['not_covered']) or 'none'}",
        f"- signatures: {len(results)}; not compiling: {len(results) - len(ok)}; "
        f"spilling: {len(spilling)} "
        f"({sum(r['half'] for r in spilling)} with fp16/bf16 tensors)",
        f"- calls: {report['calls']}; failing under the interpreter: "
        f"{len(report['failed_calls'])}",
    ]
    for r in spilling:
        lines.append(f"  - spills {r['n_spills']} B: `{r['kernel']}` {r['label']} "
                     f"(num_warps={r['num_warps']}, num_stages={r['num_stages']}, "
                     f"{r['n_regs']} registers)")
    for r in results:
        if r["error"]:
            lines.append(f"  - does not compile: `{r['kernel']}` {r['label']}: {r['error']}")
    by_kernel = {}
    for r in results:
        by_kernel.setdefault(r["kernel"], []).append(r)
    generated = {k: v for k, v in by_kernel.items() if k.startswith("generated:")}
    for kernel, rows in by_kernel.items():
        if kernel in generated:
            continue
        lines += ["", f"## {kernel}", "",
                  "| signature | warps | stages | regs | spills | smem | cp.async | tensor cores |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(_row(r["label"], r))
    lines += ["", "## The pointwise template's generated kernels", "",
              "One row per kernel: its signatures' count and the most registers, spill bytes",
              "and shared memory among them.", "",
              "| kernel | signatures | regs | spills | smem | errors |", "|---|---|---|---|---|---|"]
    for kernel, rows in sorted(generated.items()):
        good = [r for r in rows if not r["error"]]
        lines.append(f"| {kernel[len('generated:'):]} | {len(rows)} | "
                     f"{max((r['n_regs'] or 0 for r in good), default='-')} | "
                     f"{max((r['n_spills'] for r in good), default='-')} | "
                     f"{max((r['shared'] for r in good), default='-')} | "
                     f"{len(rows) - len(good)} |")
    if report["failed_calls"]:
        lines += ["", "## Calls that failed under the interpreter", "",
                  "Their launches up to the failure are recorded.", ""]
        lines += [f"- {c}" for c in report["failed_calls"]]
    lines += ["", "## Sources (sha256 prefixes; the test checks the report against them)", ""]
    lines += [f"- {f}: {h}" for f, h in report["sources"].items()]
    return "\n".join(lines) + "\n"


def _seconds(value):
    return f"{value} s" if value else "(given as a file: not timed)"


def _option(value, default):
    """A launch option; a launch that leaves it out gets Triton's default."""
    return f"{default} (default)" if value is None else value


def _row(text, r):
    warps, stages = _option(r["num_warps"], 4), _option(r["num_stages"], 3)
    if r["error"]:
        return f"| {text} | {warps} | {stages} | error: {r['error']} |||||"
    return (f"| {text} | {warps} | {stages} | {r['n_regs']} | "
            f"{r['n_spills']} | {r['shared']} | {'yes' if r['cp_async'] else ''} | "
            f"{r['tensor_cores']} |")


# ---- the command -------------------------------------------------------------------------
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--all", action="store_true", help="every call; write the report")
    what.add_argument("--quick", action="store_true", help="a few GPU-shaped calls")
    parser.add_argument("--arch", type=int, default=90, help="compute capability (90: H100)")
    parser.add_argument("--jobs", type=int, default=1, help="compiling processes")
    parser.add_argument("--records", nargs="+", help="compile these recordings "
                        "(launch_calls.py's JSON, merged) instead of recording anew")
    parser.add_argument("--fresh", action="store_true", help="compile every signature "
                        "(by default --all reuses the committed report's results when the "
                        "kernel sources, Triton and target are unchanged)")
    parser.add_argument("--json", help="write the report's JSON here (--quick)")
    args = parser.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET") == "1":
        print("compile_check: unset TRITON_INTERPRET first", file=sys.stderr)
        return 2
    start = time.perf_counter()
    if args.records:
        recorded = merge([json.loads(pathlib.Path(f).read_text()) for f in args.records])
    else:
        with tempfile.TemporaryDirectory() as tmp:
            recorded = record(args.quick, pathlib.Path(tmp, "launches.json"))
    recorded_s = time.perf_counter() - start
    records, left_out = selected(recorded["records"])
    previous = json.loads(REPORT_JSON.read_text()) \
        if args.all and not args.fresh and REPORT_JSON.exists() else None
    results, reused = compile_all(records, args.jobs, args.arch, reusable(previous, args.arch))
    report = summarise(results, dict(recorded, left_out=left_out, reused=reused),
                       time.perf_counter() - start, args.arch)
    found = problems(report)
    if args.all:
        REPORT_JSON.write_text(json.dumps(report, indent=1) + "\n")
        REPORT_MD.write_text(render(report))
    elif args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=1))
    print(f"compiled {len(results)} signatures for sm_{args.arch}: recorded in "
          f"{recorded_s:.0f} s, compiled in {time.perf_counter() - start - recorded_s:.0f} s")
    for p in found:
        print(p, file=sys.stderr)
    if args.quick:       # the quick calls cover few kernels: only what they launch counts
        found = [p for p in found if not p.startswith("not covered")]
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
