"""The PyTorch surface a script touches, compared name by name with TensorPlay's.

For seven namespaces (`torch`, `torch.Tensor`, `torch.nn.functional`, `torch.nn`,
`torch.optim`, `torch.linalg`, `torch.special`) every public name of PyTorch is either
served by the TensorPlay namespace that mirrors it, skipped for a stated reason (`SKIPPED`
below: things that make no sense in a NumPy/Triton framework), or listed in
`tests/api_surface_missing.txt`.

The list may only shrink: the test fails when a listed name now exists (take it off the
list) and when a missing name is not listed (add it, or better, the function). Run this
file as a script to print the counts per namespace:

    python tests/test_api_surface.py
"""
from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

import torch

if __name__ == "__main__":   # run as a script: this checkout's tensorplay, not an installed one
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tensorplay as tp  # noqa: E402

MISSING_FILE = Path(__file__).with_name("api_surface_missing.txt")

NAMESPACES = {
    "torch": (torch, lambda: tp),
    "torch.Tensor": (torch.Tensor, lambda: tp.Tensor),
    "torch.nn.functional": (torch.nn.functional, lambda: tp.nn.functional),
    "torch.nn": (torch.nn, lambda: tp.nn),
    "torch.optim": (torch.optim, lambda: tp.optim),
    "torch.linalg": (torch.linalg, lambda: tp.linalg),
    "torch.special": (torch.special, lambda: tp.special),
}

# (pattern on the bare name, reason). A pattern skips the names it matches fully, in every
# namespace.
SKIPPED = [
    (r"q_.*|q?u?int\d+_?qparams.*|quantize.*|quantized_.*|dequantize|fake_quantize.*|"
     r"int_repr|qscheme|qint\d+|quint\w+|per_(channel|tensor)_.*|choose_qparams.*|"
     r"fused_moving_avg_obs_fake_quant|quantization|quantizable|quantized|qat|ao|intrinsic",
     "quantization: no quantized tensors here"),
    (r"sparse_(csr|csc|bsr|bsc|compressed).*|to_sparse_(csr|csc|bsr|bsc)|is_sparse_csr|"
     r"(c?col|c?row|crow)_indices.*|segment_reduce|sparse_support_notes",
     "compressed sparse layouts (CSR, CSC, BSR, BSC): sparse tensors here are COO"),
    (r"complex32|chalf",
     "complex half: NumPy, which holds the CPU backend's data, has no complex32"),
    (r"(cudnn|miopen|mkldnn|fbgemm)_.*|to_mkldnn|is_mkldnn|xpu|is_xpu|mps|is_mps|mtia|is_mtia|"
     r"ipu|is_ipu|is_xla|is_maia|is_vulkan.*|has_(lapack|mkl|openmp|spectral)|"
     r"compiled_with_cxx11_abi|profiler_allow_cudagraph.*",
     "vendor backends and build flags of PyTorch's C++ library"),
    (r"u?int[1-7]|bits.*|float8_.*|float4_.*",
     "sub-byte and 8-bit float dtypes: NumPy has none"),
    (r"sym_.*|Sym.*",
     "symbolic shapes: a torch.compile tracing device"),
    (r".*Storage|StorageBase|storage|storage_type|is_storage|untyped_storage|is_shared|"
     r"share_memory_|is_pinned|pin_memory|record_stream|is_set_to|set_|from_file|frombuffer",
     "typed storages, shared and pinned memory"),
    (r"torch|jit|fx|export|package|hub|onnx|distributed|is_distributed|"
     r"multiprocessing|prepare_multiprocessing_environment|futures|fork|wait|Future|monitor|"
     r"overrides|classes|ops|cpp|library|mobile_optimizer|DataParallel|parallel|"
     r"while_loop|cond|PRIVATE_OPS|import_ir_module.*|parse_ir|parse_schema|"
     r"parse_type_comment|merge_type_from_type_comment|unify_type_list|vmap|func",
     "subsystems outside an eager framework: TorchScript, FX, export, distributed, ..."),
    (r"Script.*|.*Type|Graph.*|Block|Node|Value|Use|Code|Argument|ArgumentSpec|"
     r"CompleteArgumentSpec|FunctionSchema|AliasDb|CompilationUnit|ConcreteModuleType.*|"
     r"ErrorReport|ExecutionPlan|FileCheck|Gradient|IODescriptor|InferredType|JITException|"
     r"LiteScriptModule|CallStack|Capsule|DeepCopyMemoTable|TracingState|StaticModule|"
     r"ThroughputBenchmark|Benchmark.*|LockingLogger|LoggerBase|NoopLogger|AggregationType|"
     r"AVG|SUM|OperatorInfo|PyTorchFile(Reader|Writer)|(De)?[sS]erializationStorageContext|"
     r"ScriptModuleSerializer|Tag|DispatchKey|DispatchKeySet|ExcludeDispatchKeyGuard|"
     r"DisableTorchFunction.*|BufferDict|Stream|Event|AcceleratorError|OutOfMemoryError|"
     r"FatalError|thread_safe_generator|get_file_path|classproperty|torch_version|"
     r"TYPE_CHECKING|USE_.*|Callable|Optional|DType|BroadcastingList\d|ScalingType|"
     r"SwizzleType|boolean_dispatch|(has|handle)_torch_function.*|assert_int_or_pair|"
     r".*_notes|common_types|common_args|multi_dim_common|factory_kwargs|reproducibility_notes|"
     r"grouped_mm|"
     r"scaled_(grouped_)?mm|hash_tensor|slice_inverse",
     "PyTorch's internals: JIT IR types, C++ bindings, typing helpers, doc strings"),
    (r"autocast_.*|clear_autocast_cache|(get|set)_autocast_.*|is_autocast_.*",
     "autocast's per-device C++ switches (tp.amp holds autocast)"),
    (r"Lazy.*|UninitializedParameter|UninitializedBuffer",
     "lazy modules: shapes inferred at the first call, a torch.compile-era feature"),
    (r"module_load|as_subclass|reinforce|volatile|output_nr|apply_|map_|map2_|"
     r"nonzero_static|dim_order|grad_dtype|get_device_module|is_warn_always_enabled|"
     r"set_warn_always|set_flush_denormal|init_num_threads|.*num_interop_threads|"
     r"get_deterministic_debug_mode|set_deterministic_debug_mode|"
     r"set_default_tensor_type|"
     r"(get|set)_float32_matmul_precision|is_inference",
     "C++-runtime controls and legacy hooks with no counterpart here"),
]
_SKIP = [(re.compile(pattern), reason) for pattern, reason in SKIPPED]


def skip_reason(obj, name):
    """Why `name` of a torch namespace is not expected of TensorPlay, or None."""
    if inspect.ismodule(obj) and not obj.__name__.startswith("torch"):
        return "a module PyTorch imports for itself (os, math, typing, ...)"
    for pattern, reason in _SKIP:
        if pattern.fullmatch(name):
            return reason
    return None


def torch_names(qualified):
    """The public names of one torch namespace that TensorPlay is expected to serve."""
    namespace, _ = NAMESPACES[qualified]
    names = []
    for name in dir(namespace):
        if name.startswith("_"):
            continue
        if skip_reason(getattr(namespace, name, None), name) is None:
            names.append(name)
    return names


def missing_now():
    """Namespace-qualified names of torch that TensorPlay lacks today."""
    out = []
    for qualified, (_, ours) in NAMESPACES.items():
        mine = ours()
        out += [f"{qualified}.{n}" for n in torch_names(qualified) if not hasattr(mine, n)]
    return out


def listed():
    lines = MISSING_FILE.read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def counts():
    """{namespace: (public names expected, names missing)}."""
    missing = missing_now()
    out = {}
    for qualified in NAMESPACES:
        prefix = qualified + "."
        gone = [m for m in missing if m.startswith(prefix) and "." not in m[len(prefix):]]
        out[qualified] = (len(torch_names(qualified)), len(gone))
    return out


def test_no_listed_name_exists_now():
    now = set(missing_now())
    served = [name for name in listed() if name not in now]
    assert not served, (f"{len(served)} names on {MISSING_FILE.name} exist now (or left "
                        f"torch): take them off the list: {served}")


def test_every_missing_name_is_listed():
    known = set(listed())
    unlisted = [name for name in missing_now() if name not in known]
    assert not unlisted, (f"{len(unlisted)} torch names are missing from TensorPlay and not "
                          f"on {MISSING_FILE.name} (serve them, or list them): {unlisted}")


def test_list_is_sorted_without_duplicates():
    names = listed()
    assert names == sorted(set(names))


def test_every_skip_pattern_still_skips_something():
    """A pattern that no torch name matches is dead weight (or a typo)."""
    all_names = {n for q in NAMESPACES for n in dir(NAMESPACES[q][0]) if not n.startswith("_")}
    unused = [p for p, _ in SKIPPED if not any(re.fullmatch(p, n) for n in all_names)]
    assert not unused


if __name__ == "__main__":
    if "--write" in sys.argv:   # shrink-only: keep the listed names still missing
        now = set(missing_now())
        keep = [n for n in listed() if n in now]
        MISSING_FILE.write_text(MISSING_FILE.read_text().split("\n\n")[0] + "\n\n"
                                + "\n".join(keep) + "\n")
    for qualified, (expected, gone) in counts().items():
        print(f"{qualified:22s} {expected - gone:4d} of {expected:4d} served, {gone:4d} missing")
