"""The teaching notebooks: executed top to bottom, their cells assert the key results
(values, node names, the kernel chosen), and the outputs committed with them must be
the outputs they produce now (a stale notebook fails).

    python tests/test_notebooks.py --refresh [names...]

executes the notebooks and writes their outputs back (after a change that alters
what they print). Cells tagged `volatile` (timings) are executed but their outputs
are not compared.
"""
import pathlib
import re
import sys

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = sorted((pathlib.Path(__file__).parents[1] / "notebooks").glob("*.ipynb"))

# What may differ between two runs of the same notebook: object addresses, temporary
# directories, elapsed times.
_VOLATILE = [(re.compile(r"0x[0-9a-fA-F]+"), "0x…"),
             (re.compile(r"/tmp/[^\s'\"]+"), "/tmp/…"),
             (re.compile(r"\d+(\.\d+)? ?(s|ms|us|µs)\b"), "… s")]


def execute(path):
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    return nb


def _text(output):
    if output.get("output_type") == "stream":
        return output.get("name", ""), output.get("text", "")
    if output.get("output_type") in ("execute_result", "display_data"):
        data = output.get("data", {})
        if "text/plain" in data and not any(k.startswith("image/") for k in data):
            return "result", data["text/plain"]
        return "image", ""          # a picture: its presence is compared, not its bytes
    return output.get("output_type"), output.get("ename", "")


def outputs(nb):
    """The comparable outputs of every code cell, volatile parts masked."""
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if "volatile" in cell.get("metadata", {}).get("tags", []):
            cells.append(None)
            continue
        parts = []
        for output in cell.get("outputs", []):
            kind, text = _text(output)
            for pattern, replacement in _VOLATILE:
                text = pattern.sub(replacement, text)
            parts.append((kind, text))
        # consecutive stream chunks of one kind are one output, however they were flushed
        merged = []
        for kind, text in parts:
            if merged and merged[-1][0] == kind and kind in ("stdout", "stderr"):
                merged[-1] = (kind, merged[-1][1] + text)
            else:
                merged.append((kind, text))
        cells.append(merged)
    return cells


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_and_is_not_stale(path):
    committed = nbformat.read(path, as_version=4)
    nb = execute(path)                  # raises CellExecutionError when an assert fails
    errors = [o for cell in nb.cells if cell.cell_type == "code"
              for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    # Saved from one run, top to bottom (as --refresh does): its code cells numbered 1, 2,
    # 3... A cell left unrun, or run again by hand, breaks the count. (A cell may have no
    # output: one that defines a function or only asserts prints nothing.)
    executed = [c.get("execution_count") for c in committed.cells
                if c.cell_type == "code" and c.source.strip()]
    assert executed == list(range(1, len(executed) + 1)), (
        f"{path.name} was not saved from one run (execution counts {executed}): run "
        f"python tests/test_notebooks.py --refresh {path.name}")
    assert any(c.get("outputs") for c in committed.cells if c.cell_type == "code"), \
        f"{path.name} is committed without outputs: run python tests/test_notebooks.py --refresh"
    for i, (old, new) in enumerate(zip(outputs(committed), outputs(nb))):
        assert old == new, (f"{path.name}: the committed output of code cell {i} is stale; "
                            f"run python tests/test_notebooks.py --refresh {path.name}\n"
                            f"committed: {old}\nnow:       {new}")


def test_readme_lists_every_notebook_in_reading_order():
    """notebooks/README.md: one numbered line per notebook, in the order of their numbers."""
    readme = (NOTEBOOKS[0].parent / "README.md").read_text()
    listed = re.findall(r"^\d+\. `(\S+\.ipynb)`: \S", readme, re.M)
    assert listed == [p.name for p in NOTEBOOKS]


def test_every_notebook_has_its_number_in_its_title():
    for path in NOTEBOOKS:
        title = nbformat.read(path, as_version=4).cells[0].source.splitlines()[0]
        assert title.startswith(f"# {int(path.name[:2])}. "), (path.name, title)


def refresh(names):
    for path in NOTEBOOKS:
        if names and path.name not in names:
            continue
        nb = execute(path)
        nbformat.write(nb, path)
        print(f"executed and saved {path.name}")


if __name__ == "__main__":
    if sys.argv[1:2] != ["--refresh"]:
        sys.exit(__doc__)
    refresh(sys.argv[2:])
