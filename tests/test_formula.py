"""Tests for the derivative-formula compiler (tensorplay/codegen/formula.py).

Every expected text is written out in full: an error message, a caret position or an
emitted line is part of the contract a student reads, so it is asserted exactly.
"""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorplay.codegen.formula import (
    Attribute, BinOp, Call, FormulaError, ListExpr, MethodCall, Name, Number, SavePlan,
    String, Subscript, Token, TupleExpr, UnaryOp, analyze_saved, emit,
    find_common_subexpressions, names_read, output_index, parse, tokenize,
)


def kinds_and_texts(text):
    return [(t.kind, t.text) for t in tokenize(text)]


def error_text(text, **kwargs):
    with pytest.raises(FormulaError) as info:
        parse(text, **kwargs)
    return str(info.value)


# ----------------------------------------------------------------------------- tokenizer

def test_tokenize_numbers():
    assert kinds_and_texts("1 2.5 1e-3 .5 3. 2E+10") == [
        ("NUMBER", "1"), ("NUMBER", "2.5"), ("NUMBER", "1e-3"), ("NUMBER", ".5"),
        ("NUMBER", "3."), ("NUMBER", "2E+10"), ("END", ""),
    ]


def test_number_values_are_ints_or_floats():
    assert parse("12") == Number(12)
    assert isinstance(parse("12").value, int)
    assert parse("1e-3") == Number(0.001)
    assert parse(".5") == Number(0.5)


def test_tokenize_strings_both_quotes():
    assert kinds_and_texts("""f("a b", 'c"d')""") == [
        ("NAME", "f"), ("OP", "("), ("STRING", '"a b"'), ("OP", ","),
        ("STRING", "'c\"d'"), ("OP", ")"), ("END", ""),
    ]
    assert parse(r'"it\'s"') == String("it's")


def test_tokenize_two_character_operators():
    assert kinds_and_texts("a**b<=c>=d==e!=f<g>h=i") == [
        ("NAME", "a"), ("OP", "**"), ("NAME", "b"), ("OP", "<="), ("NAME", "c"),
        ("OP", ">="), ("NAME", "d"), ("OP", "=="), ("NAME", "e"), ("OP", "!="),
        ("NAME", "f"), ("OP", "<"), ("NAME", "g"), ("OP", ">"), ("NAME", "h"),
        ("OP", "="), ("NAME", "i"), ("END", ""),
    ]


def test_tokenize_columns():
    assert tokenize("grad * self.sizes()[0]") == [
        Token("NAME", "grad", 0), Token("OP", "*", 5), Token("NAME", "self", 7),
        Token("OP", ".", 11), Token("NAME", "sizes", 12), Token("OP", "(", 17),
        Token("OP", ")", 18), Token("OP", "[", 19), Token("NUMBER", "0", 20),
        Token("OP", "]", 21), Token("END", "", 22),
    ]


def test_tokenize_unknown_character():
    with pytest.raises(FormulaError) as info:
        tokenize("grad @ other")
    assert str(info.value) == (
        "<string>:1:6: unknown character '@'\n"
        "grad @ other\n"
        "     ^"
    )


# ----------------------------------------------------------------------------- parser

@pytest.mark.parametrize("text, tree", [
    ("a - b - c", BinOp("-", BinOp("-", Name("a"), Name("b")), Name("c"))),
    ("a / b * c", BinOp("*", BinOp("/", Name("a"), Name("b")), Name("c"))),
    ("a + b * c", BinOp("+", Name("a"), BinOp("*", Name("b"), Name("c")))),
    ("-a ** 2", UnaryOp("-", BinOp("**", Name("a"), Number(2)))),
    ("a ** b ** c", BinOp("**", Name("a"), BinOp("**", Name("b"), Name("c")))),
    ("a ** -b", BinOp("**", Name("a"), UnaryOp("-", Name("b")))),
    ("-a * b", BinOp("*", UnaryOp("-", Name("a")), Name("b"))),
    ("a * -b", BinOp("*", Name("a"), UnaryOp("-", Name("b")))),
    ("-x.exp()", UnaryOp("-", MethodCall(Name("x"), "exp", (), ()))),
    ("x.sizes()[0]", Subscript(MethodCall(Name("x"), "sizes", (), ()), Number(0))),
    ("grad.sum(dim, True).neg()",
     MethodCall(MethodCall(Name("grad"), "sum", (Name("dim"), Name("True")), ()),
                "neg", (), ())),
    ("self.dtype", Attribute(Name("self"), "dtype")),
    ("grads[0] + result[1]",
     BinOp("+", Subscript(Name("grads"), Number(0)), Subscript(Name("result"), Number(1)))),
    ("[a, b]", ListExpr((Name("a"), Name("b")))),
    ("(a, b)", TupleExpr((Name("a"), Name("b")))),
    ("(a,)", TupleExpr((Name("a"),))),
    ("(a)", Name("a")),
    ("+a", UnaryOp("+", Name("a"))),
])
def test_precedence_and_associativity(text, tree):
    assert parse(text) == tree


def test_comparisons_bind_loosest():
    assert parse("a + b < c * d") == BinOp(
        "<", BinOp("+", Name("a"), Name("b")), BinOp("*", Name("c"), Name("d")))
    assert parse("where(x >= 0, grad, -grad)") == Call("where", (
        BinOp(">=", Name("x"), Number(0)), Name("grad"), UnaryOp("-", Name("grad"))), ())
    for op in ("<", ">", "<=", ">=", "==", "!="):
        assert parse(f"a {op} b") == BinOp(op, Name("a"), Name("b"))


def test_call_keyword_arguments():
    assert parse('f(grad, dim=1, reason="x")') == Call(
        "f", (Name("grad"),), (("dim", Number(1)), ("reason", String("x"))))
    assert parse("grad.sum(dim, keepdim=True)") == MethodCall(
        Name("grad"), "sum", (Name("dim"),), (("keepdim", Name("True")),))


def test_columns_are_recorded():
    tree = parse("grad * self.exp()")
    assert (tree.col, tree.left.col, tree.right.col, tree.right.obj.col) == (5, 0, 12, 7)


def test_equality_ignores_columns():
    assert parse("a+b") == parse("a  +  b")
    assert hash(parse("a+b")) == hash(parse("a  +  b"))


# ----------------------------------------------------------------------------- errors

def test_error_unexpected_token_points_into_the_yaml_line():
    line = "  self: grad * (other + )"
    assert error_text("grad * (other + )", file="derivatives.yaml", line=12, col_offset=8,
                      source_line=line) == (
        "derivatives.yaml:12:25: unexpected token ')'\n"
        "  self: grad * (other + )\n"
        "                        ^"
    )


def test_error_attributes():
    with pytest.raises(FormulaError) as info:
        parse("grad * (other + )", file="d.yaml", line=3, col_offset=8)
    err = info.value
    # col is 1-based, as printed: the ')' is the 25th character of the YAML line.
    assert (err.file, err.line, err.col, err.reason) == ("d.yaml", 3, 25, "unexpected token ')'")


def test_error_without_source_line_shows_formula_at_its_offset():
    assert error_text("grad * (other + self", file="derivatives.yaml", line=3,
                      col_offset=8) == (
        "derivatives.yaml:3:16: unclosed '('\n"
        "        grad * (other + self\n"
        "               ^"
    )


@pytest.mark.parametrize("text, expected", [
    ("grad * self other",
     "<string>:1:13: unexpected 'other' after a complete expression\n"
     "grad * self other\n"
     "            ^"),
    ("",
     "<string>:1:1: empty formula\n"
     "\n"
     "^"),
    ("grad $ 2",
     "<string>:1:6: unknown character '$'\n"
     "grad $ 2\n"
     "     ^"),
    ("grad *",
     "<string>:1:7: unexpected end of formula\n"
     "grad *\n"
     "      ^"),
    ("f(a b)",
     "<string>:1:5: expected ',' or ')', got 'b'\n"
     "f(a b)\n"
     "    ^"),
    ("x.sizes()[0",
     "<string>:1:10: unclosed '['\n"
     "x.sizes()[0\n"
     "         ^"),
    ("a < b < c",
     "<string>:1:7: comparisons cannot be chained; add parentheses\n"
     "a < b < c\n"
     "      ^"),
    ("f(x=1, 2)",
     "<string>:1:8: positional argument follows keyword argument\n"
     "f(x=1, 2)\n"
     "       ^"),
    ("f(x=1, x=2)",
     "<string>:1:8: keyword argument 'x' repeated\n"
     "f(x=1, x=2)\n"
     "       ^"),
    ("not_implemented(\"oops)",
     "<string>:1:17: unterminated string\n"
     "not_implemented(\"oops)\n"
     "                ^"),
    ("grad.",
     "<string>:1:6: unexpected end of formula\n"
     "grad.\n"
     "     ^"),
    ("x.sizes()(0)",
     "<string>:1:10: only a function name or a method can be called\n"
     "x.sizes()(0)\n"
     "         ^"),
])
def test_error_messages(text, expected):
    assert error_text(text) == expected


def test_caret_keeps_tabs():
    assert error_text("a\t)", source_line="x:\ta\t)", col_offset=3) == (
        "<string>:1:6: unexpected ')' after a complete expression\n"
        "x:\ta\t)\n"
        "  \t \t^"
    )


# ----------------------------------------------------------------------------- analysis

def test_names_read_skips_functions_methods_attributes_and_constants():
    tree = parse("sum_to(grad.sum(dim, True).neg(), self.sizes()) * other.dtype + result[0]")
    assert names_read(tree) == {"grad", "dim", "self", "other", "result"}


def plan_for(formulas, **kwargs):
    return analyze_saved({k: parse(v) for k, v in formulas.items()}, **kwargs)


def test_mul_saves_both_tensors():
    plan = plan_for({"self": "sum_to(grad * other.conj(), self.sizes())",
                     "other": "sum_to(grad * self, other.sizes())"},
                    tensor_args=["self", "other"], other_args=[], outputs=["result"])
    # Both tensors are saved whole, so their sizes need no separate fact.
    assert plan == SavePlan(("self", "other"), (), (), ())


def test_add_saves_only_alpha_and_sizes():
    plan = plan_for({"self": "sum_to(grad, self.sizes())",
                     "other": "sum_to(maybe_multiply(grad, alpha), other.sizes())"},
                    tensor_args=["self", "other"], other_args=["alpha"], outputs=["result"])
    assert plan == SavePlan(
        saved_tensors=(), saved_outputs=(),
        saved_facts=(("self_sizes", "self", "sizes"), ("other_sizes", "other", "sizes")),
        saved_values=("alpha",))
    assert plan.fact_renames() == {("self", "sizes"): "self_sizes",
                                   ("other", "sizes"): "other_sizes"}


def test_tanh_saves_result_only():
    plan = plan_for({"self": "grad * (1 - result * result)"},
                    tensor_args=["self"], other_args=[], outputs=["result"])
    assert plan == SavePlan((), ("result",), (), ())


def test_pow_saves_self_and_exponent():
    plan = plan_for({"self": "pow_backward(grad, self, exponent)"},
                    tensor_args=["self"], other_args=["exponent"], outputs=["result"])
    assert plan == SavePlan(("self",), (), (), ("exponent",))


def test_max_dim_saves_dim_keepdim_indices_and_sizes():
    plan = plan_for(
        {"self": "value_selecting_reduction_backward(grad, dim, indices, self.sizes(), keepdim)"},
        tensor_args=["self"], other_args=["dim", "keepdim"], outputs=["values", "indices"])
    assert plan == SavePlan((), ("indices",), (("self_sizes", "self", "sizes"),),
                            ("dim", "keepdim"))


def test_where_saves_condition_and_not_implemented_saves_nothing():
    plan = plan_for({"self": "where(condition, grad, 0)", "other": "where(condition, 0, grad)"},
                    tensor_args=["condition", "self", "other"], other_args=[],
                    outputs=["result"])
    assert plan == SavePlan(("condition",), (), (), ())
    plan = plan_for({"self": 'not_implemented("some_op backward")'},
                    tensor_args=["self"], other_args=[], outputs=["result"])
    assert plan == SavePlan((), (), (), ())


def test_facts_of_every_kind():
    plan = plan_for({"self": "f(grad, self.dtype, self.dim(), self.numel(), self.device, "
                             "self.shape, self.sizes())"},
                    tensor_args=["self"], other_args=[], outputs=["result"])
    assert plan.saved_tensors == ()
    assert plan.saved_facts == (
        ("self_device", "self", "device"), ("self_dim", "self", "dim"),
        ("self_dtype", "self", "dtype"), ("self_numel", "self", "numel"),
        ("self_shape", "self", "shape"), ("self_sizes", "self", "sizes"))


def test_size_with_argument_is_a_tensor_use():
    plan = plan_for({"self": "grad.expand(self.size(0))"},
                    tensor_args=["self"], other_args=[], outputs=["result"])
    assert plan == SavePlan(("self",), (), (), ())


def test_gradients_and_multi_output_results():
    plan = plan_for({"self": "grads[0] * result1 + grad_values * result[0]"},
                    tensor_args=["self"], other_args=[], outputs=["values", "indices"])
    assert plan == SavePlan((), ("result", "result1"), (), ())
    assert output_index("indices", ["values", "indices"]) == 1
    assert output_index("result1", ["values", "indices"]) == 1
    assert output_index("result", ["values", "indices"]) is None
    assert output_index("result", ["out"]) == 0


def test_unknown_name_points_at_the_name():
    line = "  self: grad * othr"
    with pytest.raises(FormulaError) as info:
        plan_for({"self": "grad * othr"}, tensor_args=["self", "other"], other_args=["alpha"],
                 outputs=["result"], locations={"self": ("derivatives.yaml", 7, 8, line)})
    assert str(info.value) == (
        "derivatives.yaml:7:16: unknown name 'othr' in the formula for 'self' "
        "(did you mean 'other'?); valid names: self, other, alpha, grad, grad_input_mask, "
        "grad_result, grads, result, result0\n"
        "  self: grad * othr\n"
        "               ^"
    )


def test_unknown_name_without_location():
    with pytest.raises(FormulaError) as info:
        plan_for({"self": "grad * zzz"}, tensor_args=["self"], other_args=[],
                 outputs=["result"])
    assert str(info.value) == (
        "<string>:1:8: unknown name 'zzz' in the formula for 'self'; valid names: self, "
        "grad, grad_input_mask, grad_result, grads, result, result0")


# ----------------------------------------------------------------------------- CSE

def cse(formulas):
    temps, rewritten = find_common_subexpressions({k: parse(v) for k, v in formulas.items()})
    return [(name, str(node)) for name, node in temps], {k: str(v) for k, v in rewritten.items()}


def test_cse_shares_a_method_call_across_slots():
    assert cse({"self": "grad * 2 * self.exp()", "other": "grad * self.exp()"}) == (
        [("_tmp0", "self.exp()")],
        {"self": "grad * 2 * _tmp0", "other": "grad * _tmp0"})


def test_cse_within_one_slot():
    assert cse({"self": "grad * self.exp() + self.exp()"}) == (
        [("_tmp0", "self.exp()")], {"self": "grad * _tmp0 + _tmp0"})


def test_cse_prefers_the_largest_subtree():
    assert cse({"a": "grad * (x.exp() + 1).log()", "b": "2 * (x.exp() + 1).log()"}) == (
        [("_tmp0", "(x.exp() + 1).log()")], {"a": "grad * _tmp0", "b": "2 * _tmp0"})


def test_cse_nested_temporaries_are_defined_before_use():
    assert cse({"a": "grad * (x.exp() + 1).log()", "b": "2 * (x.exp() + 1).log()",
                "c": "grad / x.exp()"}) == (
        [("_tmp0", "x.exp()"), ("_tmp1", "(_tmp0 + 1).log()")],
        {"a": "grad * _tmp1", "b": "2 * _tmp1", "c": "grad / _tmp0"})


def test_cse_leaves_trivial_and_special_nodes_alone():
    formulas = {"a": 'sum_to(grad, self.sizes()) * -1 + x.dtype + not_implemented("r")',
                "b": 'sum_to(other, self.sizes()) * -1 + x.dtype + not_implemented("r")'}
    assert cse(formulas) == ([], formulas)


# ----------------------------------------------------------------------------- emission

def test_emit_renames_names_and_facts():
    tree = parse("sum_to(grad * other.conj(), self.sizes()) + self.dim() * self.size(0)")
    rename = {"self": "self_", "other": "other_", ("self", "sizes"): "self_sizes"}
    assert emit(tree, rename) == (
        "sum_to(grad * other_.conj(), self_sizes) + self_.dim() * self_.size(0)")


def test_emit_not_implemented_and_strings():
    assert emit(parse("not_implemented('some_op backward')")) == (
        'not_implemented("some_op backward")')
    assert emit(parse("""f('say "hi"')""")) == """f('say "hi"')"""


@pytest.mark.parametrize("text, expected", [
    ("(a - b) - c", "a - b - c"),
    ("a - (b - c)", "a - (b - c)"),
    ("(a * b) / (c * d)", "a * b / (c * d)"),
    ("(-a) ** 2", "(-a) ** 2"),
    ("-(a ** 2)", "-a ** 2"),
    ("(a ** b) ** c", "(a ** b) ** c"),
    ("a ** (-b)", "a ** -b"),
    ("(a + b).exp()", "(a + b).exp()"),
    ("(1).exp()", "(1).exp()"),
    ("(a < b) == (c < d)", "(a < b) == (c < d)"),
    ("f((a, b), [c], (d,), ())", "f((a, b), [c], (d,), ())"),
    ("1e-3 * .5", "0.001 * 0.5"),
    ("grad * (1 - result * result)", "grad * (1 - result * result)"),
])
def test_emit_minimal_parentheses(text, expected):
    assert emit(parse(text)) == expected
    assert str(parse(text)) == expected


FORMULAS = [
    "sum_to(grad * other.conj(), self.sizes())",
    "sum_to(maybe_multiply(grad, alpha), other.sizes())",
    "grad * (1 - result * result)",
    "pow_backward(grad, self, exponent)",
    "value_selecting_reduction_backward(grad, dim, indices, self.sizes(), keepdim)",
    'not_implemented("some_op backward")',
    "where(condition, grad, 0)",
    "-grad / (self * self)",
    "grad * exponent * self ** (exponent - 1)",
    "grad.sum(dim, True).neg() * -x.exp() ** -2",
    "grads[0] * result[1] + grad_values",
    "where(self > 0, grad, grad * 1e-2)",
    "f(a, b=[1, 2.5, (3,)], c=(d, e))",
]


@pytest.mark.parametrize("text", FORMULAS)
def test_emit_round_trips_known_formulas(text):
    tree = parse(text)
    assert parse(emit(tree)) == tree
    assert emit(parse(emit(tree))) == emit(tree)


# Random trees: whatever shape they have, printing and re-parsing gives the same tree.
identifiers = st.sampled_from(["a", "b", "grad", "self", "result", "x_1", "True"])
leaves = st.one_of(
    identifiers.map(Name),
    st.integers(min_value=0, max_value=10**20).map(Number),
    st.floats(min_value=0, allow_infinity=False, allow_nan=False)
    .filter(lambda v: math.copysign(1, v) > 0).map(Number),
    st.text(max_size=5).map(String),
)


def compound(children):
    args = st.lists(children, max_size=3).map(tuple)
    kwargs = st.lists(st.tuples(identifiers, children), max_size=2, unique_by=lambda kv: kv[0])
    return st.one_of(
        st.builds(Attribute, children, identifiers),
        st.builds(Call, identifiers, args, kwargs.map(tuple)),
        st.builds(MethodCall, children, identifiers, args, kwargs.map(tuple)),
        st.builds(UnaryOp, st.sampled_from(["-", "+"]), children),
        st.builds(BinOp, st.sampled_from(["+", "-", "*", "/", "**", "<", ">", "<=", ">=",
                                          "==", "!="]), children, children),
        st.builds(ListExpr, args),
        st.builds(TupleExpr, args),
        st.builds(Subscript, children, children),
    )


@settings(max_examples=500, deadline=None)
@given(st.recursive(leaves, compound, max_leaves=12))
def test_emit_round_trips_random_trees(tree):
    assert parse(emit(tree)) == tree


def test_grad_input_mask_is_known_at_backward_and_never_saved():
    # PyTorch's name for "which of this formula's inputs need a gradient" (convolution's
    # one convolution_backward call for input, weight and bias reads it).
    plan = plan_for({"self, other": "both_backward(grad, self, grad_input_mask)"},
                    tensor_args=["self", "other"], other_args=[], outputs=["result"])
    assert plan == SavePlan(("self",), (), (), ())
