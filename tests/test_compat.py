"""Real PyTorch programs run unchanged on TensorPlay (the programs live in tests/compat/).

Each program is a plain torch script that prints `final loss <number>` on its last line.
The test runs it twice in this process: once as written, with torch, and once with its
torch imports rewritten to TensorPlay's (`import torch` -> `import tensorplay as torch`).
Both runs must finish, and their final losses must agree.

Tolerance: rtol=1e-4. The programs compute in float32, and the two frameworks sum the
2000-point losses and gradients in different orders, so every step differs by a few
float32 ulps (a relative 1e-7 or so); the fits are contractive, so the differences stay
that small (about 3e-7 relative measured after 500 steps). 1e-4 leaves room for that
and is still far below any real bug: a wrong gradient or update rule moves the final
loss by whole percent.
"""
import contextlib
import io
import math
import pathlib
import re

import pytest

import tensorplay

COMPAT_DIR = pathlib.Path(__file__).parent / "compat"

# Every program the runner runs. A program in tests/compat/ that is missing here fails
# test_every_program_is_run, so none is left out silently.
PROGRAMS = [
    "polynomial_tensor.py",
    "polynomial_autograd.py",
    "polynomial_custom_function.py",
]

RTOL = 1e-4

# The import forms a program may use, and what each becomes under TensorPlay.
#   import torch                 -> import tensorplay as torch
#   import torch.nn as nn        -> import tensorplay.nn as nn
#   from torch.utils.data import -> from tensorplay.utils.data import
_IMPORT_RULES = [
    (re.compile(r"^import torch$"), "import tensorplay as torch"),
    (re.compile(r"^import torch\.([\w.]+) as (\w+)$"), r"import tensorplay.\1 as \2"),
    (re.compile(r"^from torch(\.[\w.]+)? import "), r"from tensorplay\1 import "),
]
_ANY_TORCH_IMPORT = re.compile(r"^\s*(import|from)\s+torch\b")


def to_tensorplay(source):
    """The program with its torch imports rewritten to TensorPlay's.

    Raises ValueError for an import form the rules do not cover (`import torch.nn`
    without `as`, an indented import), naming the line, so that no program can reach
    the real torch in its TensorPlay run.
    """
    lines = []
    for number, line in enumerate(source.splitlines(), start=1):
        for pattern, replacement in _IMPORT_RULES:
            if pattern.match(line):
                line = pattern.sub(replacement, line)
                break
        else:
            if _ANY_TORCH_IMPORT.match(line):
                raise ValueError(f"line {number}: no rule rewrites {line.strip()!r}")
        lines.append(line)
    return "\n".join(lines) + "\n"


def run_program(source, filename):
    """Execute a program as __main__; returns (its stdout, its globals)."""
    code = compile(source, filename, "exec")
    namespace = {"__name__": "__main__", "__file__": filename}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code, namespace)
    return out.getvalue(), namespace


def final_loss(output, filename):
    lines = output.strip().splitlines()
    last = lines[-1] if lines else ""
    match = re.fullmatch(r"final loss (\S+)", last)
    assert match, f"{filename}: last line should be 'final loss <number>', got {last!r}"
    return float(match.group(1))


def test_every_program_is_run():
    on_disk = sorted(p.name for p in COMPAT_DIR.glob("*.py"))
    assert on_disk == sorted(PROGRAMS)


def test_rewrite_rules():
    source = ("import math\nimport torch\nimport torch.nn as nn\n"
              "from torch.utils.data import DataLoader\nfrom torch import optim\n")
    assert to_tensorplay(source) == (
        "import math\nimport tensorplay as torch\nimport tensorplay.nn as nn\n"
        "from tensorplay.utils.data import DataLoader\nfrom tensorplay import optim\n")
    with pytest.raises(ValueError, match="line 2: no rule rewrites 'import torch.nn'"):
        to_tensorplay("import math\nimport torch.nn\n")
    with pytest.raises(ValueError, match="line 1: no rule rewrites 'import torch'"):
        to_tensorplay("    import torch\n")


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_matches_torch(name):
    torch = pytest.importorskip("torch")
    path = COMPAT_DIR / name
    source = path.read_text()

    torch_out, torch_ns = run_program(source, str(path))
    assert torch_ns["torch"] is torch
    tp_out, tp_ns = run_program(to_tensorplay(source), str(path))
    assert tp_ns["torch"] is tensorplay

    expected = final_loss(torch_out, name)
    got = final_loss(tp_out, name)
    assert math.isfinite(expected)
    assert got == pytest.approx(expected, rel=RTOL), (
        f"{name}: final loss {got} under TensorPlay, {expected} under torch\n"
        f"--- torch output ---\n{torch_out}--- TensorPlay output ---\n{tp_out}")
