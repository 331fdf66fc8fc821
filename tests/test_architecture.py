"""ARCHITECTURE.md stays true: every path it names exists, every function its diagrams
point at is defined in the file named on the same line, and the files a reader opens
are as many as it says (at most eight)."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = (ROOT / "ARCHITECTURE.md").read_text()

# A path: folders and a file name with a known suffix, or a folder ending in "/".
PATH = re.compile(r"(?<![\w./])((?:[\w-]+/)*[\w-]+\.(?:py|yaml|md)|(?:[\w-]+/)+)(?![\w/])")
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8}


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
    count = NUMBERS[stated.group(1)]
    opened = {path for path, _ in diagram_steps()}
    assert len(opened) == count <= 8, sorted(opened)
