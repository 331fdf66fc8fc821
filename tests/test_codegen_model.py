"""Tests for the schema model (codegen/model.py) and the YAML loaders (codegen/yaml_loader.py).

Errors are part of the interface, so most tests feed inline YAML or schema text and
assert the exact message, file and line included.
"""
from __future__ import annotations

import inspect
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorplay.codegen.model import (
    Annotation, Argument, FunctionSchema, OperatorName, Return, SchemaError, Type,
)
from tensorplay.codegen.yaml_loader import (
    CodegenError, Location, find_ambiguous_overloads, load_derivatives, load_ops,
    load_yaml_entries,
)


def yaml_text(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def codegen_error(loader, text: str) -> str:
    with pytest.raises(CodegenError) as info:
        loader(yaml_text(text))
    return str(info.value)


def schema_error(text: str) -> str:
    with pytest.raises(SchemaError) as info:
        FunctionSchema.parse(text)
    return str(info.value)


# --- round trips ---------------------------------------------------------------

SCHEMAS = [
    "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
    "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) "
    "-> Tensor",
    "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "cat(Tensor[] tensors, int dim=0) -> Tensor",
    "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
    "to.dtype(Tensor self, ScalarType dtype, bool non_blocking=False, bool copy=False) -> Tensor",
    "linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, Device? device=None) "
    "-> Tensor",
    "div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
    "dropout(Tensor input, float p=0.5, bool train=True, *, Generator? generator=None) -> Tensor",
    "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    "unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]",
    "view(Tensor(a) self, int[] size) -> Tensor(a)",
    'pad(Tensor input, int[] pad, str mode="constant", float? value=None) -> Tensor',
    "randn(int[] size, *, Generator? generator=None, ScalarType? dtype=None, Device? device=None, "
    "bool requires_grad=False) -> Tensor",
    # beyond the brief's list
    "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
    "conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0) "
    "-> Tensor",
    "_foreach_add_.List(Tensor(a!)[] self, Tensor[] other) -> ()",
    "__and__.Tensor(Tensor self, Tensor other) -> Tensor",
    "permute(Tensor(a) self, int[] dims=[]) -> Tensor(a)",
    "empty(SymInt[] size, *, Layout? layout=None, "
    "MemoryFormat memory_format=contiguous_format) -> Tensor",
    "split(Tensor(a -> *) self, int split_size, int dim=-1) -> Tensor(a)[]",
    "mean(Tensor self, float eps=1e-05, str sep=\", \") -> (Tensor out)",
    "weird(Tensor(a|b! -> a|*) self) -> Tensor(a|b!)",
]


@pytest.mark.parametrize("text", SCHEMAS)
def test_schema_round_trips_exactly(text):
    assert str(FunctionSchema.parse(text)) == text


@pytest.mark.parametrize("cls, text", [
    (OperatorName, "add_.Tensor"), (OperatorName, "relu"), (OperatorName, "__iadd__"),
    (Annotation, "(a)"), (Annotation, "(a!)"), (Annotation, "(a -> *)"),
    (Type, "int[1]?"), (Type, "Tensor?[]"), (Type, "Tensor(a!)[]"), (Type, "int[2]"),
    (Return, "Tensor values"), (Return, "Tensor(a)[]"),
])
def test_pieces_round_trip(cls, text):
    assert str(cls.parse(text)) == text


_TYPES_AND_DEFAULTS = {
    "Tensor": [None], "Tensor?": [None, "None"], "Tensor[]": [None], "Tensor?[]": [None],
    "int": [None, "0", "-1"], "int?": [None, "None", "2"], "int[]": [None, "[]", "[0,1]"],
    "int[2]": [None, "1", "[1,1]"], "int[1]?": [None, "None"], "float": [None, "0.5", "1e-05"],
    "bool": [None, "True", "False"], "str": [None, '"mean"'], "str?": [None, "None"],
    "Scalar": [None, "1"], "ScalarType?": [None, "None"], "Device?": [None, "None"],
    "Generator?": [None, "None"], "SymInt": [None, "0"],
}


@st.composite
def schemas(draw):
    """Valid schemas in canonical spelling; positional defaults never followed by none."""
    n_args = draw(st.integers(0, 6))
    n_positional = draw(st.integers(0, n_args))
    args, defaulted = [], False
    for i in range(n_args):
        type_text = draw(st.sampled_from(sorted(_TYPES_AND_DEFAULTS)))
        pool = _TYPES_AND_DEFAULTS[type_text]
        if i < n_positional and defaulted:
            pool = [d for d in pool if d is not None] or None
            if pool is None:
                type_text, pool = "int", ["0"]
        default = draw(st.sampled_from(pool))
        defaulted = defaulted or (i < n_positional and default is not None)
        args.append(f"{type_text} a{i}" + (f"={default}" if default else ""))
    if n_positional < n_args:
        args.insert(n_positional, "*")
    returns = draw(st.sampled_from(["Tensor", "()", "(Tensor a, Tensor b)", "Tensor[]", "int"]))
    name = draw(st.sampled_from(["foo", "foo.bar", "_foo.x_y"]))
    return f"{name}({', '.join(args)}) -> {returns}"


@settings(max_examples=300, deadline=None)
@given(schemas())
def test_generated_schemas_round_trip(text):
    schema = FunctionSchema.parse(text)
    assert str(schema) == text
    assert FunctionSchema.parse(str(schema)) == schema


# --- names and types -----------------------------------------------------------

def test_operator_name_fields():
    name = OperatorName.parse("add_.Tensor")
    assert (name.base, name.inplace, name.overload) == ("add", True, "Tensor")
    assert name.full == "add_.Tensor"
    assert name.unambiguous_name == "add__Tensor"
    assert OperatorName.parse("add.Tensor").unambiguous_name == "add_Tensor"
    assert OperatorName.parse("relu").unambiguous_name == "relu"
    assert OperatorName.parse("relu_").unambiguous_name == "relu_"
    assert OperatorName.parse("__iadd__").inplace is False  # dunders are never in-place names


def test_type_fields():
    assert Type.parse("int[1]?") == Type("int", optional=True, is_list=True, size=1)
    assert Type.parse("Tensor?[]") == Type("Tensor", is_list=True, elem_optional=True)
    assert Type.parse("Tensor(a!)").annotation == Annotation(("a",), True, ())
    assert Type.parse("Tensor(a -> *)").annotation == Annotation(("a",), False, ("*",))
    assert Type.parse("int[]").size is None


@pytest.mark.parametrize("text, message", [
    ("Tensr", "unknown type 'Tensr' (did you mean 'Tensor'?)"),
    ("Scalr?", "unknown type 'Scalr' (did you mean 'Scalar'?)"),
    ("Quux", "unknown type 'Quux' (expected one of: Tensor, int, float, bool, str, Scalar, "
             "ScalarType, Device, Generator, Layout, MemoryFormat, SymInt)"),
    ("int(a)", "alias annotation '(a)' is only allowed on Tensor, not 'int'"),
    ("int[0]", "list size must be at least 1, got int[0]"),
    ("int[x]", "malformed type 'int[x]'"),
    ("Tensor(A)", "malformed alias annotation '(A)' (expected '(a)', '(a!)' ...)"),
])
def test_type_errors(text, message):
    with pytest.raises(SchemaError) as info:
        Type.parse(text)
    assert str(info.value) == message


# --- arguments and defaults ----------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("Scalar alpha=1", "1"),
    ("float p=1.0", "1.0"),
    ("int dim=-1", "-1"),
    ("bool keepdim=False", "False"),
    ("bool train=True", "True"),
    ("int? dim=None", "None"),
    ('str mode="constant"', '"constant"'),
    ("int[] dims=[]", "()"),
    ("int[] dims=[0,1]", "(0, 1)"),
    ("int[1] dims=[3]", "(3,)"),
    ("int[2] stride=1", "1"),  # the runtime expands a scalar for a fixed-size list
    ("MemoryFormat memory_format=contiguous_format", "contiguous_format"),
    ("ScalarType dtype=long", "long"),
    ("Tensor self", None),
])
def test_python_default(text, expected):
    assert Argument.parse(text).python_default() == expected


@pytest.mark.parametrize("text, message", [
    ("int dim=None",
     "argument 'dim' defaults to None but its type 'int' is not optional (write 'int?')"),
    ("Tensor other=1", "argument 'other': a Tensor argument can only default to None, got '1'"),
    ("bool keepdim=0", "argument 'keepdim': a bool default must be True or False, got '0'"),
    ("str mode=constant", "argument 'mode': a str default must be quoted, got constant"),
    ("int dim=[0]", "argument 'dim': list default '[0]' for non-list type 'int'"),
    ("int[] dims=[0,1", "argument 'dims': malformed list default '[0,1'"),
    ("Tensor from", "argument name 'from' is a Python keyword"),
    ("Tensor", "argument 'Tensor' has a type but no name"),
    ("int dim=", "argument 'int dim=' has '=' but no default value"),
])
def test_argument_errors(text, message):
    with pytest.raises(SchemaError) as info:
        Argument.parse(text)
    assert str(info.value) == message


# --- schema validation -----------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("foo(Tensor self, int self) -> Tensor", "duplicate argument name 'self'"),
    ("foo(Tensor self, int dim=0, bool keepdim) -> Tensor",
     "positional argument 'keepdim' has no default but follows 'dim', which has one"),
    ("foo(Tensor self, *, int a, *, int b) -> Tensor", "'*' appears twice in the argument list"),
    ("foo(Tensor self, *) -> Tensor", "'*' must be followed by at least one keyword-only argument"),
    ("add_.Tensor(Tensor self, Tensor other) -> Tensor",
     "in-place operator 'add_.Tensor' must take a mutable 'Tensor(a!)' as its first argument, "
     "got 'Tensor self'"),
    ("relu_() -> ()",
     "in-place operator 'relu_' must take a mutable 'Tensor(a!)' as its first argument, "
     "got no arguments"),
    ("foo(Tensor self -> Tensor", "unbalanced brackets: '(' at column 4 is never closed"),
    ("foo(Tensor self)) -> Tensor", "unbalanced brackets: ')' at column 17 has no matching opener"),
    ("foo(int[2 x) -> Tensor", "unbalanced brackets: ')' at column 12 has no matching opener"),
    ("foo(Tensor self)", "missing ' -> ' and a return type after the argument list"),
    ("foo(Tensor self)->Tensor", "expected ' -> ' after the argument list, got '->Tensor'"),
    ("foo(Tensor self) -> ", "missing return type after ' -> '"),
    ("foo Tensor self -> Tensor",
     "missing '(' after the operator name in 'foo Tensor self -> Tensor'"),
    ("foo(Tensor self,, int x) -> Tensor",
     "empty argument in the argument list (two commas in a row?)"),
    ('foo(str s="abc) -> Tensor', "unterminated string: the quote at column 11 never closes"),
    ("foo-bar(Tensor self) -> Tensor", "invalid operator name 'foo-bar'"),
    ("foo.1x(Tensor self) -> Tensor", "invalid overload name '1x' in 'foo.1x'"),
    ("foo(Tensor self) -> (Tensor a, Tensr b)", "unknown type 'Tensr' (did you mean 'Tensor'?)"),
])
def test_schema_errors(text, message):
    assert schema_error(text) == message


def test_keyword_only_arguments_may_mix_defaults():
    schema = FunctionSchema.parse("foo(Tensor self, *, int a=0, int b) -> Tensor")
    assert [a.name for a in schema.kwarg_only] == ["a", "b"]


FOREACH_ADD_ = "_foreach_add_.List(Tensor(a!)[] self, Tensor[] other) -> ()"


def test_foreach_inplace_accepts_a_mutable_list():
    assert FunctionSchema.parse(FOREACH_ADD_).is_inplace


def test_schema_properties():
    def parse(i):
        return FunctionSchema.parse(SCHEMAS[i])

    add, add_, sum_dim, max_dim, cat, clamp = (parse(i) for i in range(6))
    add_out, unbind, view = parse(10), parse(11), parse(12)
    assert add_.is_inplace and not add.is_inplace
    assert add_out.is_out and not add_.is_out and not add.is_out
    assert view.is_view and unbind.is_view
    assert not add.is_view and not add_.is_view and not add_out.is_view
    assert add.tensor_args == ("self", "other")
    assert cat.tensor_args == ("tensors",)
    assert add_out.tensor_args == ("self", "other", "out")
    assert [a.name for a in sum_dim.positional] == ["self", "dim", "keepdim"]
    assert [a.name for a in sum_dim.kwarg_only] == ["dtype"]
    assert max_dim.returns_tuple and not clamp.returns_tuple
    assert [r.name for r in max_dim.returns] == ["values", "indices"]
    assert FunctionSchema.parse(FOREACH_ADD_).returns == ()


# --- YAML with lines ---------------------------------------------------------------

def test_location_and_error_text():
    loc = Location("ops.yaml", 41)
    assert str(loc) == "ops.yaml:41"
    err = CodegenError(loc, "unknown key 'dispach' (did you mean 'dispatch'?)")
    assert str(err) == "ops.yaml:41: unknown key 'dispach' (did you mean 'dispatch'?)"
    assert err.loc == loc


def test_load_yaml_entries_records_lines():
    text = yaml_text("""
        # a comment
        - func: relu(Tensor self) -> Tensor
          variants: function, method

        - func: abs(Tensor self) -> Tensor
          tags: [pointwise]
          dispatch:
            CPU: abs
    """)
    entries = load_yaml_entries(text, "ops.yaml")
    assert [(loc.line, lines) for _, loc, lines in entries] == [
        (2, {"func": 2, "variants": 3}),
        (5, {"func": 5, "tags": 6, "dispatch": 7}),
    ]
    assert entries[1][0] == {"func": "abs(Tensor self) -> Tensor", "tags": ["pointwise"],
                             "dispatch": {"CPU": "abs"}}


@pytest.mark.parametrize("text, message", [
    ("func: relu(Tensor self) -> Tensor\n",
     "ops.yaml:1: the top level must be a list of entries, each starting with '- '"),
    ("- func: relu(Tensor self) -> Tensor\n- just a string\n",
     "ops.yaml:2: each entry must be a mapping of keys such as 'func: ...'"),
    ("- func: relu(Tensor self) -> Tensor\n  tags: [a\n",
     "ops.yaml:3: invalid YAML: expected ',' or ']', but got '<stream end>'"),
    ("- func: relu(Tensor self) -> Tensor\n  doc: one\n  doc: two\n",
     "ops.yaml:3: duplicate key 'doc' (first at line 2)"),
])
def test_yaml_shape_errors(text, message):
    assert codegen_error(load_ops, text) == message


def test_load_ops_reads_every_key():
    [entry] = load_ops(yaml_text("""
        - func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
          variants: function, method
          dispatch:
            CPU: add
            CUDA, Vulkan: add_gpu
          meta: broadcast_binary
          tags: [pointwise]
          python_operators: [__add__, __radd__]
          doc: Adds other, scaled by alpha, to self.
    """))
    assert str(entry.schema) == "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    assert entry.variants == frozenset({"function", "method"})
    assert entry.dispatch == (("CPU", "add"), ("CUDA", "add_gpu"), ("Vulkan", "add_gpu"))
    assert entry.meta == "broadcast_binary"
    assert entry.tags == ("pointwise",)
    assert entry.python_operators == ("__add__", "__radd__")
    assert entry.doc == "Adds other, scaled by alpha, to self."
    assert entry.loc == Location("ops.yaml", 1)


def test_load_ops_defaults_and_path(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text("- func: relu(Tensor self) -> Tensor\n")
    for source in (path, str(path)):
        [entry] = load_ops(source)
        assert entry.variants == frozenset({"function"})
        assert (entry.dispatch, entry.tags, entry.meta, entry.doc) == ((), (), None, None)


@pytest.mark.parametrize("text, message", [
    ("""
     - func: relu(Tensor self) -> Tensor
       dispach:
         CPU: relu
     """, "ops.yaml:2: unknown key 'dispach' (did you mean 'dispatch'?)"),
    ("""
     - func: relu(Tensor self) -> Tensor
     - fucn: abs(Tensor self) -> Tensor
     """, "ops.yaml:2: unknown key 'fucn' (did you mean 'func'?)"),
    ("""
     - variants: method
     """, "ops.yaml:1: entry has no 'func' key (the operator's schema)"),
    ("""
     - func: relu(Tensor self) -> Tensor
     - func: add.Tensor(Tensor self, Tensr other) -> Tensor
     """, "ops.yaml:2: in 'add.Tensor(...)': unknown type 'Tensr' (did you mean 'Tensor'?)"),
    ("""
     - func: relu(Tensor self) -> Tensor
       variants: function, methd
     """, "ops.yaml:2: unknown variant 'methd' (did you mean 'method'?)"),
    ("""
     - func: relu(Tensor self) -> Tensor
       dispatch:
         CPUU: relu
     """, "ops.yaml:2: unknown dispatch key 'CPUU' (did you mean 'CPU'?)"),
    ("""
     - func: relu(Tensor self) -> Tensor
       dispatch:
         Autograd: relu
     """, "ops.yaml:2: unknown dispatch key 'Autograd' "
          "(expected one of: CPU, CUDA, Vulkan, Sparse, Meta, Composite)"),
    ("""
     - func: relu(Tensor self) -> Tensor
       dispatch:
         CPU: relu kernel
     """, "ops.yaml:2: the kernel for 'CPU' must be a Python name, not 'relu kernel'"),
    ("""
     - func: relu(Tensor self) -> Tensor
       dispatch: relu
     """, "ops.yaml:2: 'dispatch' must be a mapping from dispatch key to kernel name, "
          "got str 'relu'"),
    ("""
     - func: add.Tensor(Tensor self, Tensor other) -> Tensor
       python_operators: [__add__, __radd_]
     """, "ops.yaml:2: unknown python operator '__radd_' (did you mean '__radd__'?)"),
    ("""
     - func: relu(Tensor self) -> Tensor
       meta: [unary]
     """, "ops.yaml:2: 'meta' must be the name of a shape rule, got list ['unary']"),
    ("""
     - func: add.Tensor(Tensor self, Tensor other) -> Tensor
     - func: relu(Tensor self) -> Tensor
     - func: add.Tensor(Tensor self, Tensor other) -> Tensor
     """, "ops.yaml:3: duplicate operator 'add.Tensor' (first at ops.yaml:1)"),
])
def test_load_ops_errors(text, message):
    assert codegen_error(load_ops, text) == message


def test_inplace_and_functional_names_do_not_collide():
    entries = load_ops(yaml_text("""
        - func: add.Tensor(Tensor self, Tensor other) -> Tensor
        - func: add_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
    """))
    assert [e.schema.name.unambiguous_name for e in entries] == ["add_Tensor", "add__Tensor"]


# --- derivatives.yaml ---------------------------------------------------------------

DERIVATIVES = """
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad * other
  other: "grad * self"

- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  self: value_selecting_reduction_backward(grad, dim, indices, self.sizes(), keepdim)
  output_differentiability: [True, False]

- name: atan2(Tensor self, Tensor other) -> Tensor
  self, other: atan2_backward(grad, self, other)

- name: floor_divide(Tensor self, Tensor other) -> Tensor
  non_differentiable: [self, other]
"""


def test_an_output_differentiable_under_a_condition_records_only_then():
    """PyTorch's `output_differentiability: ["!dtype || isDifferentiableType(*dtype)"]` of
    _to_copy: the condition joins the wrapper's test of whether to record."""
    from tensorplay._generated import autograd_wrappers
    (entry,) = load_derivatives(yaml_text("""
- name: _to_copy(Tensor self, *, ScalarType? dtype=None) -> Tensor
  output_differentiability: ["dtype is None or dtype.is_floating_point"]
  self: grad
"""))
    assert entry.output_differentiability == ("dtype is None or dtype.is_floating_point",)
    source = inspect.getsource(autograd_wrappers._to_copy)
    assert "if not (self._impl.requires_grad" in source
    assert "and (dtype is None or dtype.is_floating_point" in source


def test_load_derivatives_positions():
    mul, max_dim, atan2, floor_divide = load_derivatives(yaml_text(DERIVATIVES))
    assert str(mul.schema.name) == "mul.Tensor"
    assert mul.loc == Location("derivatives.yaml", 1)
    self_f, other_f = mul.formulas
    assert self_f == (("self",), "grad * other", 2, 8, "  self: grad * other")
    # A quoted formula starts after the quote, so a caret lands on the formula itself.
    assert other_f == (("other",), "grad * self", 3, 10, '  other: "grad * self"')
    assert max_dim.output_differentiability == (True, False)
    assert max_dim.formulas[0].line == 6
    assert atan2.formulas[0].inputs == ("self", "other")
    assert atan2.formulas[0].col == 15
    assert floor_divide.non_differentiable == ("self", "other")
    assert floor_divide.formulas == ()
    assert mul.output_differentiability is None
    for entry in (mul, max_dim, atan2):
        for f in entry.formulas:
            assert f.source_line[f.col:].startswith(f.text)


def test_block_scalar_formula_points_at_its_first_line():
    [entry] = load_derivatives(yaml_text("""
        - name: exp(Tensor self) -> Tensor
          self: |
            grad * result
    """))
    [formula] = entry.formulas
    assert (formula.line, formula.col, formula.source_line) == (3, 4, "    grad * result")


def test_materialize_grads_is_read_and_checked():
    """`materialize_grads: false`: the node gets None for an output with no gradient (its
    class says so); the default is zeros; anything but a bool is refused."""
    [svd] = load_derivatives(yaml_text("""
        - name: _linalg_svd(Tensor A) -> (Tensor U, Tensor S, Tensor Vh)
          materialize_grads: false
          A: svd_backward(grad_U, grad_S, grad_Vh, U, S, Vh)
    """))
    [exp] = load_derivatives(yaml_text("""
        - name: exp(Tensor self) -> Tensor
          self: grad * result
    """))
    assert (svd.materialize_grads, exp.materialize_grads) == (False, True)
    with pytest.raises(CodegenError, match="'materialize_grads' must be true or false"):
        load_derivatives(yaml_text("""
            - name: exp(Tensor self) -> Tensor
              materialize_grads: sometimes
              self: grad * result
        """))
    from tensorplay._generated import autograd_nodes
    assert autograd_nodes.LinalgSvdBackward0.materialize_grads is False
    assert autograd_nodes.ExpBackward0.materialize_grads is True


@pytest.mark.parametrize("text, message", [
    ("""
     - name: mul.Tensor(Tensor self, Tensor other) -> Tensor
       slef: grad * other
     """, "derivatives.yaml:2: unknown key 'slef': not an argument of 'mul.Tensor' "
          "(did you mean 'self'?)"),
    ("""
     - name: mul.Tensor(Tensor self, Tensor other) -> Tensor
       self: grad * other
       non_diferentiable: [other]
     """, "derivatives.yaml:3: unknown key 'non_diferentiable': not an argument of 'mul.Tensor' "
          "(did you mean 'non_differentiable'?)"),
    ("""
     - name: mul.Tensor(Tensor self, Tensor other) -> Tensor
       self, othr: grad
     """, "derivatives.yaml:2: unknown key 'othr': not an argument of 'mul.Tensor' "
          "(did you mean 'other'?)"),
    ("""
     - name: max.dim(Tensor self, int dim) -> (Tensor values, Tensor indices)
       self: grad
       result: self_t
     """, "derivatives.yaml:3: 'result' names one output, but the op returns 2: key the "
          "formula by values, indices"),
    ("""
     - name: max.dim(Tensor self, int dim) -> (Tensor values, Tensor indices)
       self: grad
       values, indice: self_t
     """, "derivatives.yaml:3: unknown output 'indice': outputs are values, indices (did "
          "you mean 'indices'?)"),
    ("""
     - name: max.dim(Tensor self, int dim) -> (Tensor values, Tensor indices)
       self: grad
       values: auto_linear
     """, "derivatives.yaml:3: 'auto_linear' derives the tangent of a single output; this "
          "op returns 2"),
    ("""
     - name: sum.dim(Tensor self, int dim) -> Tensor
       dim: grad
     """, "derivatives.yaml:2: 'dim' has type int, which cannot take a gradient formula "
          "(only Tensor arguments are differentiable)"),
    ("""
     - name: mul.Tensor(Tensor self, Tensor other) -> Tensor
       self: grad * other
       self, other: grad
     """, "derivatives.yaml:3: 'self' already has a formula at line 2"),
    ("""
     - name: mul.Tensor(Tensor self, Tensor other) -> Tensor
       self: grad * other
       non_differentiable: [self]
     """, "derivatives.yaml:2: 'self' has a formula but is listed in 'non_differentiable'"),
    ("""
     - name: mul.Tensor(Tensor self, Tensor other) -> Tensor
       non_differentiable: [others]
     """, "derivatives.yaml:2: 'mul.Tensor' has no argument 'others' (did you mean 'other'?)"),
    ("""
     - name: max.dim(Tensor self, int dim) -> (Tensor values, Tensor indices)
       self: grad
       output_differentiability: [True]
     """, "derivatives.yaml:3: 'output_differentiability' has 1 entries but 'max.dim' returns 2"),
    ("""
     - name: max.dim(Tensor self, int dim) -> (Tensor values, Tensor indices)
       self: grad
       output_differentiability: [True, 2]
     """, "derivatives.yaml:3: 'output_differentiability' must be a list of True/False, "
          "got [True, 2]"),
    ("""
     - name: max.dim(Tensor self, int dim) -> (Tensor values, Tensor indices)
       self: grad
       output_differentiability: [True, "dim > 0"]
     """, "derivatives.yaml:3: 'output_differentiability': a condition is for an op of one "
          "output; 'max.dim' returns 2"),
    ("""
     - name: _to_copy(Tensor self, *, ScalarType? dtype=None) -> Tensor
       self: grad
       output_differentiability: ["dtype is None or"]
     """, "derivatives.yaml:3: 'output_differentiability': 'dtype is None or' is not a "
          "Python condition (invalid syntax)"),
    ("""
     - name: mul.Tensor(Tensor self, Tensor other) -> Tensor
       self: 2
     """, "derivatives.yaml:2: the formula for 'self' must be a string, got 2"),
    ("""
     - name: relu(Tensor self) -> Tensor
     """, "derivatives.yaml:1: 'relu' has no formulas: give one per differentiable input, "
          "or list the inputs under 'non_differentiable'"),
    ("""
     - self: grad
     """, "derivatives.yaml:1: entry has no 'name' key (the operator's schema)"),
    ("""
     - name: relu(Tensor self) -> Tensor
       self: grad
     - name: relu(Tensor self) -> Tensr
       self: grad
     """, "derivatives.yaml:3: in 'relu(...)': unknown type 'Tensr' (did you mean 'Tensor'?)"),
    ("""
     - name: relu(Tensor self) -> Tensor
       self: grad
     - name: relu(Tensor self) -> Tensor
       self: grad * 1
     """, "derivatives.yaml:3: duplicate derivative for 'relu' (first at derivatives.yaml:1)"),
])
def test_load_derivatives_errors(text, message):
    assert codegen_error(load_derivatives, text) == message


# --- overload ambiguity -------------------------------------------------------------

def ambiguities(text: str) -> list[str]:
    return find_ambiguous_overloads(load_ops(yaml_text(text)))


def test_default_only_difference_is_ambiguous():
    assert ambiguities("""
        - func: relu(Tensor self) -> Tensor
        - func: foo.a(Tensor self, int dim=0) -> Tensor
        - func: foo.b(Tensor self, bool keepdim=False) -> Tensor
    """) == [
        "ops.yaml:2 and ops.yaml:3: overloads 'foo.a' and 'foo.b' are ambiguous: "
        "the call foo(Tensor) matches both"
    ]


def test_same_positional_types_are_ambiguous():
    assert ambiguities("""
        - func: foo.a(Tensor self, int x) -> Tensor
        - func: foo.b(Tensor self, int y) -> Tensor
    """) == [
        "ops.yaml:1 and ops.yaml:2: overloads 'foo.a' and 'foo.b' are ambiguous: "
        "the call foo(Tensor, int) matches both"
    ]


def test_required_keyword_only_argument_shows_in_the_call():
    assert ambiguities("""
        - func: foo.a(Tensor self, *, str mode) -> Tensor
        - func: foo.b(Tensor self, *, str mode, int dim=0) -> Tensor
    """) == [
        "ops.yaml:1 and ops.yaml:2: overloads 'foo.a' and 'foo.b' are ambiguous: "
        "the call foo(Tensor, mode=str) matches both"
    ]


def test_overloads_told_apart_by_type_are_fine():
    assert ambiguities("""
        - func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
          variants: function, method
        - func: add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
          variants: function, method
        - func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
        - func: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
          variants: method
        - func: add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)
          variants: method
        - func: max(Tensor self) -> Tensor
        - func: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
        - func: max.other(Tensor self, Tensor other) -> Tensor
        - func: sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
        - func: sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False) -> Tensor
        - func: mean.dim(Tensor self, int dim) -> Tensor
        - func: mean.names(Tensor self, int[] dim) -> Tensor
        - func: pow.int(Tensor self, int exponent) -> Tensor
        - func: pow.float(Tensor self, float exponent) -> Tensor
    """) == []


def two_foos(a: str, b: str) -> list[str]:
    text = f"- func: foo.a({a}) -> Tensor\n- func: foo.b({b}) -> Tensor\n"
    return find_ambiguous_overloads(load_ops(text))


@pytest.mark.parametrize("a, b, call", [
    # Scalar takes Python ints and bools
    ("Tensor self, Scalar other", "Tensor self, int other", "foo(Tensor, int)"),
    ("Tensor self, Scalar other", "Tensor self, bool other", "foo(Tensor, bool)"),
    ("Tensor self, int[2] size", "Tensor self, int size", "foo(Tensor, int)"),  # one int expands
    ("Tensor self, int[] size", "Tensor self, SymInt[] size", "foo(Tensor, int[])"),
    ("Tensor self, int? dim", "Tensor self, Tensor? dim", "foo(Tensor, None)"),
    ("Tensor self, Device d", "Tensor self, str d", "foo(Tensor, str)"),  # "cpu" names a device
])
def test_overlapping_types(a, b, call):
    assert two_foos(a, b) == [
        f"ops.yaml:1 and ops.yaml:2: overloads 'foo.a' and 'foo.b' are ambiguous: "
        f"the call {call} matches both"
    ]


@pytest.mark.parametrize("a, b", [
    ("Tensor self, int x", "Tensor self, float x"),
    ("Tensor self, int x", "Tensor self, bool x"),
    ("Tensor self, int x", "Tensor self, int[] x"),
    ("Tensor self, Tensor x", "Tensor self, Scalar x"),
    ("Tensor self, Tensor x", "Tensor self, Tensor[] x"),
    ("Tensor self, int[] x", "Tensor self, float[] x"),
    ("Tensor self, int dim=0", "Tensor self, Tensor other"),
])
def test_distinct_types(a, b):
    assert two_foos(a, b) == []


def test_different_variants_or_inplace_flags_never_compete():
    assert ambiguities("""
        - func: foo.a(Tensor self) -> Tensor
          variants: method
        - func: foo.b(Tensor self) -> Tensor
          variants: function
        - func: foo_.c(Tensor(a!) self) -> Tensor(a!)
          variants: method
    """) == []
