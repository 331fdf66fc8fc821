"""ARCHITECTURE.md stays true: every path it names exists, every function its diagrams
point at is defined in the file named on the same line, the files a reader opens are as
many as it says, and running its example under a tracer executes exactly the files it
names, the path's in the order its diagrams give."""
import os
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = (ROOT / "ARCHITECTURE.md").read_text()

# A path: folders and a file name with a known suffix, or a folder ending in "/".
PATH = re.compile(r"(?<![\w./])((?:[\w-]+/)*[\w-]+\.(?:py|yaml|md)|(?:[\w-]+/)+)(?![\w/])")
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
           "fourteen": 14}


def backticked_paths():
    paths = []
    for span in re.findall(r"`([^`\n]+)`", DOC):
        paths += [m.group(1) for m in PATH.finditer(span) if "/" in m.group(1)
                  or m.group(1).endswith((".yaml", ".md"))]
    return paths


def diagram_steps():
    """(path, function) for each diagram line naming a file and then `name()`."""
    blocks = re.findall(r"```[a-z]*\n(.*?)```", DOC, re.S)
    steps = []
    for block in blocks:
        for line in block.splitlines():
            m = re.search(r"((?:[\w-]+/)+[\w-]+\.py)\s+([\w.]+)\(\)", line)
            if m:
                steps.append((m.group(1), m.group(2)))
    return steps


def test_the_document_names_paths():
    assert len(backticked_paths()) >= 5
    assert len(diagram_steps()) >= 6


def test_every_backticked_path_exists():
    missing = [p for p in backticked_paths() if not (ROOT / p).exists()]
    assert not missing, f"ARCHITECTURE.md names paths that do not exist: {missing}"


def test_every_diagram_function_is_defined_in_its_file():
    wrong = []
    for path, name in diagram_steps():
        file = ROOT / path
        if not file.exists():
            wrong.append(f"{path} does not exist")
            continue
        text = file.read_text()
        for part in name.split("."):
            if not re.search(rf"^\s*(?:def|class) {re.escape(part)}\b", text, re.M):
                wrong.append(f"{path} defines no {part}")
    assert not wrong, "\n".join(wrong)


def test_the_files_to_open_are_as_many_as_it_says():
    stated = re.search(r"opens \*\*(\w+) files\*\*", DOC)
    assert stated, "ARCHITECTURE.md should say how many files a reader opens"
    assert len(set(path_in_order())) == NUMBERS[stated.group(1)], path_in_order()


# ---- the example, run under a tracer ------------------------------------------------
def path_in_order():
    """The files the Forward and Backward diagrams name, in the order they name them."""
    files = []
    for title in ("Forward", "Backward"):
        block = re.search(rf"## {title}\n\n```\n(.*?)```", DOC, re.S).group(1)
        for m in re.finditer(r"((?:tensorplay|cpu_kernels|triton_kernels)/[\w/]+\.py)", block):
            if m.group(1) not in files:
                files.append(m.group(1))
    return files


def also_run():
    """The helpers listed under "What else runs on the way"."""
    section = DOC.split("## What else runs on the way", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`((?:tensorplay|cpu_kernels|triton_kernels)/[\w/]+\.py)`",
                          section))


def traced_files(fn):
    """The repository files whose code runs during `fn()`, in order of first run."""
    root = str(ROOT) + os.sep
    seen = []

    def profile(frame, event, arg):
        if event == "call":
            name = frame.f_code.co_filename
            if name.startswith(root):
                rel = os.path.relpath(name, ROOT).replace(os.sep, "/")
                if not rel.startswith("tests/") and rel not in seen:
                    seen.append(rel)

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen


def test_the_example_runs_the_files_the_page_names_in_its_order():
    import tensorplay as tp
    a = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = tp.ones(3)
    tp.add(a, b).sum().backward()           # once untraced: routes memoized, imports done
    a.grad = None
    out = {}
    forward = traced_files(lambda: out.setdefault("c", tp.add(a, b)))
    loss = out["c"].sum()
    backward = traced_files(loss.backward)
    assert a.grad.tolist() == [1.0, 1.0, 1.0]
    ran = forward + [f for f in backward if f not in forward]
    named = path_in_order()
    assert [f for f in ran if f in named] == named, (
        f"the example runs the path's files in this order:\n  {[f for f in ran if f in named]}"
        f"\nARCHITECTURE.md names them in this one:\n  {named}")
    unnamed = [f for f in ran if f not in named and f not in also_run()]
    assert not unnamed, (f"the example runs files ARCHITECTURE.md does not name: {unnamed}; "
                         "add them to the path or to 'What else runs on the way'")
    stale = sorted(also_run() - set(ran))
    assert not stale, f"'What else runs on the way' names files the example does not run: {stale}"
