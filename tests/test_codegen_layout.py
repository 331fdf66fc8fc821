"""The generated code laid out for reading: one op on one screen, handles in their own
module, keywords where positions say nothing, 100 columns, and templates that keep
the emitted shape visible in the generators."""
import ast
import os
import re
import textwrap

import pytest

import tensorplay as tp
from tensorplay.codegen import main as cg
from tensorplay.codegen.template import CodeTemplate, conjunction, fit, long_string

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GENERATED = os.path.join(ROOT, "tensorplay", "_generated")


def generated(name):
    with open(os.path.join(GENERATED, name)) as fh:
        return fh.read()


def blocks(text, prefix):
    """{function name: its source} for the top-level functions whose name starts with prefix."""
    tree = ast.parse(text)
    lines = text.split("\n")      # (ast.get_source_segment splits the text at every call)
    return {node.name: "\n".join(lines[node.lineno - 1:node.end_lineno])
            for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith(prefix)}


def test_every_generated_line_fits_in_100_columns():
    long = []
    for name in sorted(os.listdir(GENERATED)):
        if name.endswith((".py", ".pyi")):
            for number, line in enumerate(generated(name).split("\n"), 1):
                if len(line) > 100:
                    long.append(f"{name}:{number}: {len(line)} columns")
    assert not long, "\n".join(long[:20])


def test_one_op_reads_on_one_screen():
    """tp.add's front door enters the dispatcher itself: no helper 4,500 lines away."""
    text = generated("functional.py")
    # (a word that starts with `_h_`: special_hermite_polynomial_h_x_scalar is an op's name)
    assert "def _op_" not in text and not re.search(r"\b_h_", text)
    start = text.index("# ---- add (Tensor, Scalar) ")
    end = text.index("# ---- ", start + 1)
    block = text[start:end]
    assert block.count("\n") < 45
    assert "def add(input, other, *, alpha=1, out=None):" in block
    assert ("return ops.add_Tensor.call(input._impl.keys | other._impl.keys, input, other, "
            "alpha)") in block
    assert "return ops.add_Scalar.call(input._impl.keys, input, other, alpha)" in block
    # the observer test and the no-grad skip live in the dispatcher, not in 500 doors
    assert "observers" not in text and "requires_grad" not in block


def test_match_and_run_pairs_stand_above_their_front_door():
    text = generated("functional.py")
    match = text.index("def _match_mean_dim(")
    run = text.index("def _run_mean_dim(")
    door = text.index("def mean(*args, **kwargs):")
    assert match < run < door and door - match < 2000


def test_a_branch_does_not_recheck_what_its_test_decided():
    """`_match_mean` tests isinstance(input, Tensor); `_run_mean` must not test it again,
    nor may the `if isinstance(other, Tensor):` branch of a front door."""
    text = generated("functional.py")
    matches, runs = blocks(text, "_match_"), blocks(text, "_run_")
    assert runs, "no _run_ functions generated"
    for name, source in matches.items():
        run = runs[name.replace("_match_", "_run_", 1)]
        for tested in re.findall(r"isinstance\((\w+), Tensor\)", source):
            assert f"isinstance({tested}, Tensor)" not in run, (name, tested)
    branch_re = re.compile(r"\n    if isinstance\((\w+), Tensor\):  # .*\n((?:        .*\n)+)")
    for door in blocks(text, "").values():
        for branch in branch_re.finditer(door):
            assert f"isinstance({branch.group(1)}, Tensor)" not in branch.group(2), door[:80]


def test_handles_live_in_the_ops_module_not_behind_private_names():
    ops = generated("ops.py")
    assert "add_Tensor = dispatcher.find('add.Tensor')" in ops
    wrappers = generated("autograd_wrappers.py")
    assert "from tensorplay._generated import ops" in wrappers
    assert "from tensorplay._generated.functional import" not in wrappers
    assert "below_autograd(ops.add_Tensor, ks, self, other, alpha)" in wrappers
    from tensorplay._generated import ops as handles
    from tensorplay.dispatch.dispatcher import dispatcher
    assert handles.add_Tensor is dispatcher.find("add.Tensor")


def test_keywords_where_positions_say_nothing():
    declarations = generated("declarations.py")
    assert "OpSchema(\n        name='add.Tensor',\n" in declarations
    assert "        tensor_positions=(0, 1),\n" in declarations
    assert "        mutable_positions=(0,),\n" in declarations   # add_
    wrappers = generated("autograd_wrappers.py")
    assert "SavedVariable(other, is_output=False)" in wrappers or \
        "SavedVariable(other if" in wrappers
    assert re.search(r"SavedVariable\([^()]*, (False|True)\)", wrappers) is None
    from tensorplay._generated.declarations import SCHEMAS
    add_ = next(s for s in SCHEMAS if s.name == "add_.Tensor")
    assert add_.tensor_positions == (0, 1) and add_.mutable_positions == (0,)


def test_generators_emit_through_templates():
    """No generator builds its output as a long chain of `lines.append(...)`."""
    folder = os.path.join(ROOT, "tensorplay", "codegen")
    for name in ("gen_functional.py", "gen_declarations.py", "gen_autograd.py",
                 "gen_methods.py"):
        with open(os.path.join(folder, name)) as fh:
            source = fh.read()
        assert source.count("lines.append(") <= 2, name
        assert "CodeTemplate(" in source, name


def test_code_template_indents_lists_and_drops_empty_lines():
    template = CodeTemplate("""\
        def $name($params):
            $body
            $nothing
            return $result""")
    lines = template.substitute(name="f", params=["a", "b"], body=["x = a", "if x:\n    x = b"],
                                nothing=[], result="x")
    assert lines == ["def f(a, b):", "    x = a", "    if x:", "        x = b", "    return x"]


CALLS = [
    "        node.x = frobnicate(" + ", ".join(f"argument_{i}" for i in range(14)) + ")",
    "    raise_it(" + repr("a long message " * 9) + ")",
    "    (d_a, d_b, d_c, d_d, d_e, d_f, d_g) = not_implemented(" + repr("why " * 20) + ")",
    "from somewhere.far.away import (" + ", ".join(f"name_{i}" for i in range(30)) + ")",
]


@pytest.mark.parametrize("line", CALLS)
def test_fit_folds_a_long_line_into_the_same_code(line):
    folded = fit([line])
    assert len(folded) > 1 and all(len(ln) <= 100 for ln in folded), folded
    before = ast.parse(textwrap.dedent(line))
    after = ast.parse(textwrap.dedent("\n".join(folded)))
    assert ast.dump(before) == ast.dump(after)


def test_conjunction_and_long_string_fit():
    tests = [f"x{i}._impl.requires_grad" for i in range(8)]
    text = conjunction(tests, indent=4, op="or")
    assert all(len("    if " + ln) <= 100 for ln in text.split("\n"))
    assert ast.parse(f"if {text}:\n    pass")
    pieces = long_string("a(Tensor self, " + "int x, " * 30 + "int y) -> Tensor", indent=12)
    assert all(12 + len(p) <= 100 for p in pieces)
    assert ast.literal_eval("".join(pieces)) == "a(Tensor self, " + "int x, " * 30 + \
        "int y) -> Tensor"


def test_front_doors_from_inline_yaml(tmp_path):
    """A small ops.yaml: the function names `self` `input`, takes out= and axis/keepdims;
    the in-place op keeps `self` and takes no out=."""
    (tmp_path / "ops.yaml").write_text("""\
- func: total(Tensor self, int dim, bool keepdim=False) -> Tensor
  variants: function, method
  dispatch: {CPU: reduction.total}
- func: twice_(Tensor(a!) self) -> Tensor(a!)
  variants: method
  dispatch: {CPU: pointwise.twice_}
""")
    (tmp_path / "derivatives.yaml").write_text("[]\n")
    ctx = cg.load_context(str(tmp_path / "ops.yaml"), str(tmp_path / "derivatives.yaml"),
                          str(tmp_path / "out"))
    text = cg.render_all(ctx)["functional.py"]
    ast.parse(text)
    assert "def _match_total(input, dim, keepdim=False):" in text   # dim may come as axis=
    assert "kwargs = numpy_aliases('total', {'axis': 'dim', 'keepdims': 'keepdim'}, kwargs)" \
        in text
    assert "return into_out('total', out, total(*args, **kwargs))" in text
    assert "def twice_(self):" in text
    assert "ops.twice_.call(self._impl.keys, self)" in text


def test_an_autograd_wrapper_is_the_five_steps_in_few_lines():
    """The wrapper reads as the concept (needs-grad test, node, saves, below_autograd,
    set_history); the node's edges, the thread's key masks and the route memo live in
    the named helpers, not written out in every wrapper."""
    text = generated("autograd_wrappers.py")
    tree = ast.parse(text)
    sizes = sorted(node.end_lineno - node.lineno + 1 for node in tree.body
                   if isinstance(node, ast.FunctionDef))
    assert len(sizes) > 200
    assert sizes[len(sizes) // 2] <= 14
    mechanism = re.compile(r"local_keys|masks|routes\[|next_edges|observers|sequence_nr"
                           r"|\.redispatch\(|\.watch")
    code = [line for line in text.split("\n") if not line.lstrip().startswith("#")]
    written_out = [line for line in code if mechanism.search(line)]
    assert len(written_out) <= 0.02 * len(code), written_out[:10]


def test_folding_a_parenthesised_expression_keeps_it_an_expression():
    """A long `(a + b) / (c + d)` folded at its last parentheses must not become a tuple
    (a trailing comma after the one item would make it one)."""
    name = "a_longer_name"
    line = (f"    value = ({name} + 1) / ({name}.pow(2) + {name}.pow(3) + {name}.pow(4) + "
            f"{name}.pow(5))")
    folded = fit([line])
    assert len(folded) > 1 and all(len(x) <= 100 for x in folded)
    scope = {name: tp.tensor(2.0, dtype=tp.float64)}
    exec(textwrap.dedent("\n".join(folded)), {}, scope)
    assert scope["value"].item() == (2.0 + 1) / (4.0 + 8.0 + 16.0 + 32.0)
