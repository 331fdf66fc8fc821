"""Each op family has one spelling in every tree, and an op's ops.yaml entry is the index to
its pieces: every name an entry gives (its kernels, its shape rule, its batching rule)
resolves, and sits in a module named for a family of tensorplay/codegen/families.py."""
import pathlib

import pytest

from tensorplay._backend_loading import BACKENDS, resolve
from tensorplay.codegen.families import (
    FAMILIES, NN_BUILDING_BLOCKS, NN_MODULES, NN_PATH_ALIASES, SUPPORT,
)
from tensorplay.codegen.yaml_loader import load_ops

ROOT = pathlib.Path(__file__).resolve().parent.parent
ENTRIES = load_ops(ROOT / "ops.yaml")

# The trees whose modules are named for families (ops.yaml names the first five).
TREES = ("cpu_kernels", "triton_kernels", "tensorplay/composite", "tensorplay/meta",
         "tensorplay/func/batching_rules", "tensorplay/autograd/formulas")


def _module(name):
    """'pooling' of 'pooling.max_pool2d'; None for a bare name (a shared rule)."""
    return name.rpartition(".")[0] or None


def test_every_named_piece_resolves():
    import tensorplay.func.vmap  # noqa: F401 (fills RULES from the table)
    from tensorplay.func.batching_rules import RULES
    from tensorplay.meta import rules as core_rules
    wrong = []
    for e in ENTRIES:
        op = e.schema.name.full
        for key, name in e.dispatch:
            if key == "CUDA":
                pytest.importorskip("triton")
            try:
                resolve(BACKENDS[key], name)
            except ImportError as err:
                wrong.append(f"{e.loc}: {op}: {key}: {err}")
        if e.meta is not None:
            found = resolve("tensorplay.meta", e.meta) if "." in e.meta else \
                getattr(core_rules, e.meta, None)
            if found is None:
                wrong.append(f"{e.loc}: {op}: meta: tensorplay/meta/rules.py has no {e.meta}")
        rule = e.batching_rule
        if rule is not None:
            got = RULES.get(op)
            if got is None or got.__name__ != rule.rpartition(".")[2]:
                wrong.append(f"{e.loc}: {op}: vmap: {rule} is not the registered rule {got}")
    assert not wrong, "\n".join(wrong)


def test_the_modules_an_entry_names_are_families():
    named = {}      # key -> {module: first op that names it}
    for e in ENTRIES:
        pairs = [(k, n) for k, n in e.dispatch if k != "Sparse"]
        pairs += [("meta", e.meta), ("vmap", e.batching_rule)]
        for key, name in pairs:
            module = _module(name) if name else None
            if module is not None:
                named.setdefault(key, {}).setdefault(module, e.schema.name.full)
    assert {"CPU", "CUDA", "Composite", "meta", "vmap"} <= set(named)
    strays = {f"{key}: {module} (first named by {op})"
              for key, modules in named.items() for module, op in modules.items()
              if module not in FAMILIES}
    assert not strays, f"ops.yaml names modules outside the vocabulary: {sorted(strays)}"


def _stems(tree, pattern="*.py"):
    return sorted(p.stem for p in (ROOT / tree).glob(pattern) if p.stem != "__init__")


@pytest.mark.parametrize("tree", TREES)
def test_every_module_of_a_tree_is_a_family_or_support(tree):
    support = SUPPORT.get(tree, ())
    strays = [s for s in _stems(tree)
              if s not in FAMILIES and not s.startswith("_") and s not in support]
    assert not strays, f"{tree}: modules named for no family: {strays}"


def test_functional_and_layer_modules_follow_the_families():
    functional = [s.removeprefix("_functional_") for s in _stems("tensorplay/nn",
                                                                  "_functional_*.py")]
    assert not [f for f in functional if f not in FAMILIES]
    layers = [s for s in _stems("tensorplay/nn/modules") if not s.startswith("_")]
    assert not [m for m in layers if m not in NN_MODULES and m not in NN_BUILDING_BLOCKS
                and m not in NN_PATH_ALIASES]
    assert set(NN_MODULES.values()) | set(NN_PATH_ALIASES.values()) <= set(FAMILIES)


def test_opinfo_files_follow_the_families():
    """db_<family>.py; a family too large for one file continues in db_<family>_<topic>.py."""
    dbs = [s.removeprefix("db_") for s in _stems("tests/opinfo", "db_*.py")]
    strays = [d for d in dbs if d not in FAMILIES and d.split("_")[0] not in FAMILIES]
    assert not strays, strays
    others = [s for s in _stems("tests/opinfo") if not s.startswith("db_")]
    assert set(others) <= set(SUPPORT["tests/opinfo"])
