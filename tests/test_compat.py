"""Real PyTorch programs run unchanged on TensorPlay (the programs live in tests/compat/).

Each program is a plain torch script. The test runs it twice in this process: once as
written, with torch, and once with its torch imports rewritten to TensorPlay's
(`import torch` -> `import tensorplay as torch`). Both runs must finish, and then their
outputs are compared in one of two ways, per program (PROGRAMS):

- FinalLoss: the last line of each run is `final loss <number>`, and the two numbers
  agree within a relative tolerance. For the training programs whose initial values
  come from NumPy or Python's `random`.
- EveryLine: the two runs print the same lines. Each line is cut into numbers and the
  text between them; the text must be equal (whitespace aside), integers equal, and
  other numbers equal within float noise (see compare_lines). For the tutorials that
  print tensors, counts and sampled names.

Tolerance. rtol=1e-4 for float32 programs. The two frameworks sum the 2000-point losses
and gradients in different orders, so each step differs by a few float32 ulps (a
relative 1e-7 or so); gradient descent on these fits damps such differences, so they
stay that small (3e-7 relative measured after 500 steps; RMSprop can amplify them, and
polynomial_optim.py says why its run stays short). rtol=1e-6 for the float64 program
(the printed six decimals allow no tighter). Both are far below any real bug: a wrong
gradient or update rule moves the final loss by whole percent. EveryLine uses the same
rtol and also lets each printed float be off by the rounding of its last digit (tensors
print four decimals). The longest seeded training, mlp_char_model.py (300 SGD steps at
lr 0.1), keeps every printed line within that when torch's own initial parameters are
perturbed by a relative 1e-6 (at 1e-5 the loss at step 200 moves by 1e-4), and its
sampled names stay the same.

Random draws. A program marked `seeded` prints numbers drawn from torch's own generator
(torch.manual_seed, torch.Generator().manual_seed(...)): torch.rand, torch.randn,
torch.randint, torch.multinomial and the layers' default initialisation. Its two runs
agree only where TensorPlay's CPU generator reproduces PyTorch's (mt19937 and the
transform of each distribution); a failure says so.
"""
import contextlib
import dataclasses
import io
import math
import pathlib
import re
import sys
import types
import warnings

import pytest
import threadpoolctl

import tensorplay

COMPAT_DIR = pathlib.Path(__file__).parent / "compat"

FLOAT32 = 1e-4
FLOAT64 = 1e-6

_SEEDED_NOTE = (
    "This program prints numbers drawn from torch's random generator: the two runs agree\n"
    "only where TensorPlay's CPU generator reproduces PyTorch's (mt19937 and the\n"
    "transforms of rand, randn, randint, multinomial, normal_ and uniform_).\n")


@dataclasses.dataclass(frozen=True)
class FinalLoss:
    """The last lines `final loss <number>` of the two runs agree within rtol."""

    rtol: float
    seeded: bool = False

    def mismatches(self, torch_out, tp_out, name):
        expected = final_loss(torch_out, name)
        got = final_loss(tp_out, name)
        assert math.isfinite(expected)
        if got == pytest.approx(expected, rel=self.rtol):
            return []
        return [f"final loss {got} under TensorPlay, {expected} under torch"]


@dataclasses.dataclass(frozen=True)
class EveryLine:
    """The two runs print the same lines (compare_lines, with rtol for floats)."""

    rtol: float
    seeded: bool = False

    def mismatches(self, torch_out, tp_out, name):
        return compare_lines(torch_out, tp_out, rtol=self.rtol)


# Every program the runner runs, with how its two runs are compared. A program in
# tests/compat/ that is missing here fails test_every_program_is_run, so none is left
# out silently.
PROGRAMS = {
    "polynomial_tensor.py": FinalLoss(rtol=FLOAT32),
    "polynomial_autograd.py": FinalLoss(rtol=FLOAT32),
    "polynomial_custom_function.py": FinalLoss(rtol=FLOAT32),
    "polynomial_matrix.py": FinalLoss(rtol=FLOAT64),
    "polynomial_nn.py": FinalLoss(rtol=FLOAT32),
    "polynomial_optim.py": FinalLoss(rtol=FLOAT32),
    "dynamic_net.py": FinalLoss(rtol=FLOAT32),
    "classifier.py": FinalLoss(rtol=FLOAT32),
    "two_layer_net.py": FinalLoss(rtol=FLOAT32),
    "tensor_basics.py": EveryLine(rtol=FLOAT32, seeded=True),
    "autograd_basics.py": EveryLine(rtol=FLOAT32, seeded=True),
    "micrograd_check.py": EveryLine(rtol=FLOAT64),
    "word_embeddings.py": EveryLine(rtol=FLOAT32, seeded=True),
    "bigram.py": EveryLine(rtol=FLOAT32, seeded=True),
    "mlp_char_model.py": EveryLine(rtol=FLOAT32, seeded=True),
    "gpu_script_on_cpu.py": EveryLine(rtol=FLOAT32, seeded=True),
    "whole_model_checkpoint.py": EveryLine(rtol=FLOAT32, seeded=True),
    "per_sample_grads.py": EveryLine(rtol=FLOAT32, seeded=True),
    "jacobians_hessians.py": EveryLine(rtol=FLOAT32, seeded=True),
}

# The import forms a program may use, and what each becomes under TensorPlay.
#   import torch                 -> import tensorplay as torch
#   import torch.nn as nn        -> import tensorplay.nn as nn
#   import torch.onnx            -> import tensorplay.onnx, tensorplay as torch
#                                   (Python binds `torch` to the package, and so do we)
#   from torch.utils.data import -> from tensorplay.utils.data import
_IMPORT_RULES = [
    (re.compile(r"^import torch$"), "import tensorplay as torch"),
    (re.compile(r"^import torch\.([\w.]+) as (\w+)$"), r"import tensorplay.\1 as \2"),
    (re.compile(r"^import torch\.([\w.]+)$"), r"import tensorplay.\1, tensorplay as torch"),
    (re.compile(r"^from torch(\.[\w.]+)? import "), r"from tensorplay\1 import "),
]
_ANY_TORCH_IMPORT = re.compile(r"^\s*(import|from)\s+torch\b")


def to_tensorplay(source):
    """The program with its torch imports rewritten to TensorPlay's.

    Raises ValueError for an import form the rules do not cover (`import torch, os`,
    an indented import), naming the line, so that no program can reach the real torch
    in its TensorPlay run.
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
    """Execute a program as __main__; returns (its stdout, its globals). The program's
    module stands in for sys.modules["__main__"] while it runs (as `python script.py`
    makes it), so that pickle finds the classes it defines (`torch.save(model, f)`)."""
    code = compile(source, filename, "exec")
    module = types.ModuleType("__main__")
    module.__file__ = filename
    namespace = module.__dict__
    out = io.StringIO()
    main = sys.modules["__main__"]
    sys.modules["__main__"] = module
    try:
        with contextlib.redirect_stdout(out):
            exec(code, namespace)
    finally:
        sys.modules["__main__"] = main
    return out.getvalue(), namespace


def final_loss(output, filename):
    lines = output.strip().splitlines()
    last = lines[-1] if lines else ""
    match = re.fullmatch(r"final loss (\S+)", last)
    assert match, f"{filename}: last line should be 'final loss <number>', got {last!r}"
    return float(match.group(1))


# ---- comparing printed lines --------------------------------------------------------------
# A number: an optional minus, digits with an optional fraction and exponent, or nan/inf;
# never part of a name (float32, AddBackward0, log10) or of a longer number.
_NUMBER = re.compile(
    r"(?<![\w.])-?(?:(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|inf|nan)(?![\w.])")
# What differs between the runs without being a difference: TensorPlay's module name where
# torch prints its own (tensorplay.float32, tensorplay.Size) and object addresses.
_MODULE_NAME = re.compile(r"\btensorplay\.")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")


def _tokens(line):
    """A line as ([text between numbers, whitespace removed], [number strings])."""
    texts = [re.sub(r"\s+", "", text) for text in _NUMBER.split(line)]
    return texts, _NUMBER.findall(line)


def _is_integer(token):
    return re.fullmatch(r"-?\d+", token) is not None


def _last_digit(token):
    """The value of one unit in the last printed digit of a float: 1e-4 for 0.1235 and
    for 1.2346e+00, 1e-8 for 1.2346e-04; 0 where no digit follows the point (`3.`, torch's
    form for a whole number), which is printed exactly."""
    if token.lstrip("-") in ("inf", "nan"):
        return 0.0
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    if decimals == 0:
        return 0.0
    return 10.0 ** (int(exponent or 0) - decimals)


def _numbers_agree(expected, got, rtol):
    if _is_integer(expected) or _is_integer(got):
        return expected == got
    a, b = float(expected), float(got)
    if math.isnan(a) or math.isnan(b) or math.isinf(a) or math.isinf(b):
        return expected == got
    # Two runs whose values differ by float noise can still round to neighbouring
    # printed digits (0.12345001 -> 0.1235, 0.12344999 -> 0.1234): allow half a unit
    # in the last printed digit of each, on top of rtol.
    allowed = rtol * max(abs(a), abs(b)) + (_last_digit(expected) + _last_digit(got)) / 2
    return abs(a - b) <= allowed


def compare_lines(expected, got, rtol):
    """The differences between two printed outputs, one message per differing line.

    Both outputs are cut into lines and each line into numbers and the text between
    them. The text must be equal once whitespace is removed (tensor printing pads with
    spaces) and TensorPlay's module name reads as torch's; an integer must be equal (a
    count, an index, a shape); a float may differ by rtol relative plus the rounding of
    its last printed digit. Anything else printed (a sampled name, True/False, a grad_fn
    name) is text, and must be equal.
    """
    expected_lines = _ADDRESS.sub(" at 0x...>", expected).splitlines()
    got_lines = _ADDRESS.sub(" at 0x...>", _MODULE_NAME.sub("torch.", got)).splitlines()
    problems = []
    if len(expected_lines) != len(got_lines):
        problems.append(f"{len(got_lines)} lines under TensorPlay, "
                        f"{len(expected_lines)} under torch")
    for number, (want, have) in enumerate(zip(expected_lines, got_lines), start=1):
        want_texts, want_numbers = _tokens(want)
        have_texts, have_numbers = _tokens(have)
        if want_texts != have_texts or len(want_numbers) != len(have_numbers):
            problems.append(f"line {number}: text differs\n  torch:      {want}\n"
                            f"  TensorPlay: {have}")
            continue
        for w, h in zip(want_numbers, have_numbers):
            if not _numbers_agree(w, h, rtol):
                problems.append(f"line {number}: {h} under TensorPlay, {w} under torch\n"
                                f"  torch:      {want}\n  TensorPlay: {have}")
                break
    return problems


def test_every_program_is_run():
    on_disk = sorted(p.name for p in COMPAT_DIR.glob("*.py"))
    assert on_disk == sorted(PROGRAMS)


def test_rewrite_rules():
    source = ("import math\nimport torch\nimport torch.nn as nn\n"
              "from torch.utils.data import DataLoader\nfrom torch import optim\n")
    assert to_tensorplay(source) == (
        "import math\nimport tensorplay as torch\nimport tensorplay.nn as nn\n"
        "from tensorplay.utils.data import DataLoader\nfrom tensorplay import optim\n")
    assert to_tensorplay("import torch.onnx\n") == \
        "import tensorplay.onnx, tensorplay as torch\n"
    with pytest.raises(ValueError, match="line 2: no rule rewrites 'import torch, os'"):
        to_tensorplay("import math\nimport torch, os\n")
    with pytest.raises(ValueError, match="line 1: no rule rewrites 'import torch'"):
        to_tensorplay("    import torch\n")


# (a line torch printed, the line TensorPlay printed, whether compare_lines lets it pass)
COMPARE_CASES = [
    ("tensor([0.1235, 2.0000])", "tensor([0.1234, 2.0000])", True),  # rounding, last digit
    ("tensor([0.1235])", "tensor([0.1237])", False),
    ("tensor([1.0000e-05])", "tensor([1.0001e-05])", True),
    ("tensor([1.0000e-05])", "tensor([1.0003e-05])", False),
    ("tensor(1.0000) torch.Size([27, 27])", "tensor(1.) tensorplay.Size([27, 27])", True),
    ("tensor([3., 3.])", "tensor([3., 4.])", False),  # a whole number prints exactly
    ("0 3.726142168045044", "0 3.7261425", True),  # rtol
    ("0 3.726142168045044", "0 3.7275", False),
    ("tensor([ 0, 39])", "tensor([0, 39])", True),  # padding
    ("tensor([ 0, 39])", "tensor([0, 38])", False),  # counts are exact
    ("torch.Size([1853, 3])", "torch.Size([1853, 4])", False),
    ("3 c", "4 c", False),
    ("cexze.", "cexzo.", False),  # sampled names are exact
    ("True True", "True False", False),
    ("dtype=torch.float32", "dtype=tensorplay.float32", True),
    ("dtype=torch.float32", "dtype=torch.float64", False),
    ("<AddBackward0 object at 0x7fadf4833760>", "<AddBackward0 object at 0x7fa6b19a51b0>", True),
    ("grad_fn=<AddBackward0>", "grad_fn=<MulBackward0>", False),
    ("tensor(5.4474, grad_fn=<LinalgVectorNormBackward0>)",
     "tensor(5.4474, grad_fn=<NormBackward0>)", False),
    ("2.4232499599456787", "tensor(2.4232)", False),  # a tensor where torch prints a number
    ("12.0 <class 'float'>", "12 <class 'float'>", False),  # an integer where torch has a float
    ("nan inf -inf", "nan inf -inf", True),
    ("nan", "0.0", False),
]


@pytest.mark.parametrize("torch_line, tp_line, agree", COMPARE_CASES)
def test_compare_lines(torch_line, tp_line, agree):
    problems = compare_lines(torch_line + "\n", tp_line + "\n", rtol=FLOAT32)
    assert (problems == []) == agree, problems


def test_compare_lines_counts_lines():
    assert compare_lines("a\nb\n", "a\nb\nc\n", rtol=FLOAT32) == [
        "3 lines under TensorPlay, 2 under torch"]


@pytest.fixture
def one_thread():
    """torch and NumPy's BLAS on one thread for the test.

    These programs work on small tensors, where extra threads only wait for each other:
    on a busy two-core machine torch's thread pool made the runs several times slower
    (polynomial_optim.py: 3.4 s of CPU under torch, 0.9 s on one thread).
    """
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpoolctl.threadpool_limits(limits=1):
            yield
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_matches_torch(name, one_thread):
    torch = pytest.importorskip("torch")
    path = COMPAT_DIR / name
    source = path.read_text()

    torch_out, torch_ns = run_program(source, str(path))
    assert torch_ns["torch"] is torch
    tp_out, tp_ns = run_program(to_tensorplay(source), str(path))
    assert tp_ns["torch"] is tensorplay

    check = PROGRAMS[name]
    problems = check.mismatches(torch_out, tp_out, name)
    assert not problems, (
        f"{name}: the TensorPlay run differs from the torch run\n" + "\n".join(problems[:8])
        + "\n" + (_SEEDED_NOTE if check.seeded else "")
        + f"--- torch output ---\n{torch_out}--- TensorPlay output ---\n{tp_out}")


# ---- the small Tensor pieces torch programs reach for (tensorplay/_tensor.py) -------------
# Each case is one expression over the module `m` (torch or tensorplay); the two results,
# made comparable by _plain, must be equal.
_A = [[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]],
      [[12.0, 13.0, 14.0, 15.0], [16.0, 17.0, 18.0, 19.0], [20.0, 21.0, 22.0, 23.0]]]
SURFACE_CASES = {
    "T of a matrix": lambda m: m.tensor(_A[0]).T,
    "mT": lambda m: m.tensor(_A).mT,
    "H": lambda m: m.tensor(_A[0]).H,
    "mH": lambda m: m.tensor(_A).mH,
    "T is a view": lambda m: m.tensor(_A[0]).T.stride(),
    "new_tensor keeps dtype": lambda m: m.ones(2, dtype=m.float64).new_tensor([1, 2]),
    "new_tensor dtype=": lambda m: m.ones(2).new_tensor([1, 2], dtype=m.int32),
    "new_zeros varargs": lambda m: m.ones(2, dtype=m.float64).new_zeros(2, 3),
    "new_zeros tuple": lambda m: m.ones(2, dtype=m.int64).new_zeros((2, 3)),
    "new_ones": lambda m: m.ones(2, dtype=m.float64).new_ones([3]),
    "new_full": lambda m: m.ones(2, dtype=m.float64).new_full((2, 2), 3),
    "new_empty": lambda m: m.ones(2, dtype=m.int32).new_empty(4, 1).shape,
    "new_zeros requires_grad": lambda m: m.ones(2).new_zeros(2, requires_grad=True)
    .requires_grad,
    "type_as": lambda m: m.tensor([1.5, 2.5]).type_as(m.ones(1, dtype=m.int64)),
    "reshape_as": lambda m: m.tensor(_A).reshape_as(m.ones(4, 6)),
    "nbytes, itemsize": lambda m: (m.tensor(_A).nbytes, m.tensor(_A).itemsize),
    "gradient through T": lambda m: _grad_through(m, lambda y: (y.T * m.arange(3.0)).sum()),
    "gradient through mT": lambda m: _grad_through(m, lambda y: (y.mT @ y).sum()),
}


def _grad_through(m, f):
    y = m.tensor(_A[0], requires_grad=True)
    f(y).backward()
    return y.grad


def _plain(value):
    """A framework-free form of a result: tensors become (dtype name, shape, values)."""
    if hasattr(value, "tolist") and hasattr(value, "dtype"):
        return (str(value.dtype).split(".")[-1], tuple(value.shape), value.tolist())
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


@pytest.mark.parametrize("case", SURFACE_CASES)
def test_tensor_surface_matches_torch(case):
    torch = pytest.importorskip("torch")
    assert _plain(SURFACE_CASES[case](tensorplay)) == _plain(SURFACE_CASES[case](torch))


@pytest.mark.parametrize("expr", ["ones(3).mT", "ones(3).mH", "ones(3).H", "ones(2, 3, 4).H"])
def test_transpose_errors_match_torch(expr):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as expected:
        eval(f"torch.{expr}")
    with pytest.raises(RuntimeError, match=re.escape(str(expected.value))):
        eval(f"tensorplay.{expr}")


_T_ON_A_SCALAR = "Tensor.T is deprecated on 0-D tensors"
_T_OFF_MATRICES = "The use of `x.T` on tensors of dimension other than 2 to reverse their shape"


# torch raises these warnings once per process (TORCH_WARN_ONCE), so its words are
# written out here rather than caught from it.
@pytest.mark.parametrize("shape, message", [((), _T_ON_A_SCALAR), ((3,), _T_OFF_MATRICES),
                                            ((2, 3, 4), _T_OFF_MATRICES)])
def test_T_off_matrices_warns_as_torch_does(shape, message):
    torch = pytest.importorskip("torch")
    with pytest.warns(UserWarning, match=re.escape(message)):
        got = tensorplay.arange(float(math.prod(shape))).reshape(shape).T
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.arange(float(math.prod(shape))).reshape(shape).T
    assert _plain(got) == _plain(want)


def test_new_tensor_from_a_tensor_is_detached():
    x = tensorplay.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="sourceTensor.detach"):
        copy = x.new_tensor(x * 3)
    assert copy.grad_fn is None and not copy.requires_grad
    assert copy.tolist() == [3.0, 3.0]


# ---- top-level names (tensorplay/_api.py) -------------------------------------------------
@pytest.mark.parametrize("name", ["pi", "e", "inf", "nan", "newaxis"])
def test_constants_match_torch(name):
    torch = pytest.importorskip("torch")
    assert repr(getattr(tensorplay, name)) == repr(getattr(torch, name))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", None])
def test_finfo_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    args = () if dtype is None else (getattr(torch, dtype),)
    want = torch.finfo(*args)
    got = tensorplay.finfo(*(() if dtype is None else (getattr(tensorplay, dtype),)))
    for field in ["bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution",
                  "dtype"]:
        assert getattr(got, field) == getattr(want, field), field
    assert repr(got) == repr(want)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    want = torch.iinfo(getattr(torch, dtype))
    got = tensorplay.iinfo(getattr(tensorplay, dtype))
    assert (got.bits, got.max, got.min, got.dtype) == (want.bits, want.max, want.min, want.dtype)
    assert repr(got) == repr(want)


@pytest.mark.parametrize("call", ["finfo(m.int64)", "iinfo(m.float32)", "iinfo(m.bool)",
                                  "is_floating_point(3.0)"])
def test_limit_errors_match_torch(call):
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError) as expected:
        eval(f"m.{call}", {"m": torch})
    with pytest.raises(TypeError, match=re.escape(str(expected.value))):
        eval(f"m.{call}", {"m": tensorplay})


def test_is_floating_point():
    assert tensorplay.is_floating_point(tensorplay.ones(2))
    assert not tensorplay.is_floating_point(tensorplay.ones(2, dtype=tensorplay.int64))
