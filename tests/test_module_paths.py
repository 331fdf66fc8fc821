"""Every public module path of PyTorch's that a script imports (`import torch.onnx`,
`from torch.nn.modules.activation import MultiheadAttention`, `torch.backends.cudnn`) is
importable at the same path under tensorplay, or listed in OUT_OF_SCOPE with the reason.

The torch paths are found by walking PyTorch's installed package directories (ROOTS and
TOP_LEVEL below: every .py file and package whose name has no leading underscore), so a
new PyTorch module makes `test_every_torch_module_is_kept_or_out_of_scope` fail until it
is classified. KEPT may only grow; an OUT_OF_SCOPE entry whose modules all import now
must move to KEPT.
"""
from __future__ import annotations

import importlib
import os

import pytest
import torch

# The packages whose modules scripts import, walked in full, and single top-level modules.
ROOTS = ["nn", "optim", "amp", "backends", "autograd", "utils", "cuda", "cpu", "onnx",
         "export", "func", "distributions", "testing", "profiler", "sparse", "special", "linalg",
         "fft"]
TOP_LEVEL = ["serialization", "random", "functional", "version", "hub", "overrides",
             "library", "types", "storage", "return_types", "quasirandom", "accelerator"]

# torch paths that tensorplay serves at the same path (torch. -> tensorplay.).
KEPT = """
torch.accelerator
torch.amp torch.amp.autocast_mode torch.amp.grad_scaler
torch.autograd torch.autograd.anomaly_mode torch.autograd.forward_ad torch.autograd.function
torch.autograd.functional
torch.autograd.grad_mode torch.autograd.gradcheck torch.autograd.graph
torch.autograd.variable
torch.backends torch.backends.cpu torch.backends.cuda torch.backends.cudnn
torch.backends.mha torch.backends.mkl torch.backends.mkldnn torch.backends.mps
torch.backends.openmp torch.backends.opt_einsum
torch.cpu torch.cpu.amp
torch.cuda torch.cuda.amp
torch.distributions torch.distributions.bernoulli torch.distributions.beta
torch.distributions.binomial torch.distributions.categorical torch.distributions.cauchy
torch.distributions.chi2 torch.distributions.constraint_registry
torch.distributions.constraints torch.distributions.continuous_bernoulli
torch.distributions.dirichlet torch.distributions.distribution
torch.distributions.exp_family torch.distributions.exponential
torch.distributions.fishersnedecor torch.distributions.gamma
torch.distributions.generalized_pareto torch.distributions.geometric
torch.distributions.gumbel torch.distributions.half_cauchy torch.distributions.half_normal
torch.distributions.independent torch.distributions.inverse_gamma torch.distributions.kl
torch.distributions.kumaraswamy torch.distributions.laplace torch.distributions.lkj_cholesky
torch.distributions.log_normal torch.distributions.logistic_normal
torch.distributions.lowrank_multivariate_normal torch.distributions.mixture_same_family
torch.distributions.multinomial torch.distributions.multivariate_normal
torch.distributions.negative_binomial torch.distributions.normal
torch.distributions.one_hot_categorical torch.distributions.pareto
torch.distributions.poisson torch.distributions.relaxed_bernoulli
torch.distributions.relaxed_categorical torch.distributions.studentT
torch.distributions.transformed_distribution torch.distributions.transforms
torch.distributions.uniform torch.distributions.utils torch.distributions.von_mises
torch.distributions.weibull torch.distributions.wishart
torch.export
torch.fft
torch.func
torch.functional
torch.library
torch.linalg
torch.nn torch.nn.functional torch.nn.grad torch.nn.init torch.nn.modules
torch.nn.modules.activation torch.nn.modules.adaptive torch.nn.modules.batchnorm
torch.nn.modules.channelshuffle torch.nn.modules.container torch.nn.modules.conv
torch.nn.modules.distance torch.nn.modules.dropout torch.nn.modules.flatten
torch.nn.modules.fold torch.nn.modules.instancenorm torch.nn.modules.linear
torch.nn.modules.linear_cross_entropy_options torch.nn.modules.loss torch.nn.modules.module
torch.nn.modules.normalization torch.nn.modules.padding torch.nn.modules.pixelshuffle
torch.nn.modules.pooling torch.nn.modules.rnn torch.nn.modules.sparse
torch.nn.modules.transformer torch.nn.modules.upsampling torch.nn.modules.utils
torch.nn.parallel torch.nn.parallel.distributed torch.nn.parameter torch.nn.utils
torch.nn.utils.clip_grad torch.nn.utils.convert_parameters torch.nn.utils.parametrizations
torch.nn.utils.parametrize torch.nn.utils.rnn torch.nn.utils.spectral_norm
torch.nn.utils.stateless torch.nn.utils.weight_norm
torch.onnx torch.onnx.errors
torch.optim torch.optim.adadelta torch.optim.adagrad torch.optim.adam torch.optim.adamax
torch.optim.adamw torch.optim.asgd torch.optim.lbfgs torch.optim.lr_scheduler
torch.optim.nadam torch.optim.optimizer torch.optim.radam torch.optim.rmsprop
torch.optim.rprop torch.optim.sgd torch.optim.sparse_adam torch.optim.swa_utils
torch.profiler
torch.random
torch.serialization
torch.sparse
torch.special
torch.testing
torch.utils torch.utils.benchmark torch.utils.benchmark.utils
torch.utils.benchmark.utils.common torch.utils.benchmark.utils.compare
torch.utils.benchmark.utils.timer torch.utils.checkpoint
torch.utils.data torch.utils.data.dataloader torch.utils.data.dataset
torch.utils.data.distributed torch.utils.data.sampler
torch.version
""".split()

# A path prefix (the module and everything under it) -> why TensorPlay has no module there.
OUT_OF_SCOPE = {
    # quantization, vendor libraries, C++ and JIT tooling
    "torch.nn.quantized": "quantization: no quantized tensors here",
    "torch.nn.quantizable": "quantization: no quantized tensors here",
    "torch.nn.intrinsic": "quantization's fused modules: no quantized tensors here",
    "torch.nn.qat": "quantization-aware training: no quantized tensors here",
    "torch.nn.cpp": "wrappers of C++ (libtorch) modules",
    "torch.nn.backends": "the legacy THNN backend of PyTorch's C library",
    "torch.nn.common_types": "typing aliases, all named with a leading underscore",
    "torch.backends.quantized": "quantization's engine choice: no quantized tensors here",
    "torch.utils.throughput_benchmark": "benchmarking TorchScript modules from C++ threads",
    "torch.backends.cudnn.rnn": "cuDNN's RNN weight layout: no cuDNN here",
    "torch.backends.cusparselt": "a vendor library TensorPlay does not link (cuSPARSELt)",
    "torch.backends.kleidiai": "a vendor library TensorPlay does not link (Arm KleidiAI)",
    "torch.backends.miopen": "a vendor library TensorPlay does not link (AMD MIOpen)",
    "torch.backends.nnpack": "a vendor library TensorPlay does not link (NNPACK)",
    "torch.backends.xnnpack": "a vendor library TensorPlay does not link (XNNPACK)",
    "torch.backends.python_native": "switches of PyTorch's Python-native kernel overrides",
    "torch.backends.xeon": "a launcher tuning PyTorch's C++ thread pools on Xeon CPUs",
    "torch.utils.backend_registration": "registering C++ out-of-tree device backends",
    "torch.utils.bundled_inputs": "TorchScript mobile models' bundled inputs",
    "torch.utils.cpp_backtrace": "C++ stack traces of libtorch",
    "torch.utils.cpp_extension": "building C++/CUDA extensions (TensorPlay's are Triton and "
                                 "NumPy kernels: tp.library)",
    "torch.utils.mobile_optimizer": "TorchScript mobile optimisation",
    "torch.utils.jit": "TorchScript tooling",
    "torch.utils.model_dump": "TorchScript model inspection",
    "torch.utils.show_pickle": "a TorchScript archive viewer",
    "torch.utils.serialization": "TorchScript/export serialization settings",
    "torch.utils.hipify": "CUDA to ROCm source translation",
    "torch.utils.collect_env": "a report of PyTorch's build and CUDA install",
    "torch.utils.debug_log": "PyTorch's C++ debug logging",
    "torch.utils.file_baton": "a lock file for C++ extension builds",
    "torch.utils.mkldnn": "oneDNN layout conversion: no oneDNN here",
    "torch.utils.backcompat": "warnings for PyTorch 0.x broadcasting changes",
    "torch.utils.weak": "weak-reference helpers of PyTorch's internals",
    "torch.utils.deterministic": "a C++ runtime flag (filling uninitialised memory)",
    "torch.utils.viz": "a CUDA caching-allocator memory visualiser",
    "torch.sparse.semi_structured": "2:4 semi-structured sparsity for GPU tensor cores",
    "torch.storage": "typed storages (tensor.untyped_storage())",
    "torch.types": "typing aliases",
    "torch.overrides": "the __torch_function__ protocol's helpers",
    # CUDA runtime features of torch.cuda, and file layouts whose names live elsewhere
    "torch.cuda.comm": "DataParallel's multi-GPU scatter/gather",
    "torch.cuda.gds": "GPUDirect Storage",
    "torch.cuda.graphs": "CUDA graphs capture",
    "torch.cuda.green_contexts": "CUDA green contexts (SM partitioning)",
    "torch.cuda.jiterator": "CUDA C++ kernels compiled at run time (TensorPlay's are Triton)",
    "torch.cuda.nccl": "NCCL bindings (tp.distributed reaches NCCL through torch)",
    "torch.cuda.nvtx": "NVTX ranges for Nsight",
    "torch.cuda.profiler": "the CUDA profiler's start/stop",
    "torch.cuda.sparse": "CUDA sparse tensor types",
    "torch.cuda.streams": "CUDA streams and events: the Triton backend runs on one stream",
    "torch.cuda.tunable": "TunableOp GEMM tuning of cuBLAS/hipBLASLt",
    "torch.cuda.memory": "a file of PyTorch's: tp.cuda is one module, and its memory "
                         "functions (memory_allocated, ...) are at tp.cuda.*",
    "torch.cuda.random": "a file of PyTorch's: tp.cuda's seeding functions are at tp.cuda.*",
    "torch.cuda.amp.autocast_mode": "files of the deprecated torch.cuda.amp: its names are "
                                    "at tp.cuda.amp",
    "torch.cuda.amp.common": "files of the deprecated torch.cuda.amp: its names are at "
                             "tp.cuda.amp",
    "torch.cuda.amp.grad_scaler": "files of the deprecated torch.cuda.amp: its names are at "
                                  "tp.cuda.amp",
    "torch.cpu.amp.autocast_mode": "files of the deprecated torch.cpu.amp: its names are at "
                                   "tp.cpu.amp",
    "torch.cpu.amp.grad_scaler": "files of the deprecated torch.cpu.amp: its names are at "
                                 "tp.cpu.amp",
    "torch.profiler.itt": "Intel ITT annotations for VTune",
    "torch.profiler.profiler": "a file of PyTorch's: tp.profiler is one module",
    "torch.profiler.python_tracer": "the Kineto profiler's Python tracer",
    "torch.autograd.profiler": "the legacy autograd profiler (tp.profiler serves "
                               "torch.profiler's API)",
    "torch.autograd.profiler_legacy": "the legacy autograd profiler",
    "torch.autograd.profiler_util": "the legacy autograd profiler's tables",
    # the TorchScript ONNX exporter's internals: tp.onnx exports a captured graph through
    # its own table of translations (tensorplay/onnx/translation.py)
    "torch.onnx.operators": "the TorchScript ONNX exporter's internals",
    "torch.onnx.symbolic_helper": "the TorchScript ONNX exporter's internals",
    **{f"torch.onnx.symbolic_opset{n}": "the TorchScript ONNX exporter's per-opset "
       "translations (tp.onnx's are tensorplay/onnx/translation.py)" for n in range(7, 21)},
    "torch.onnx.testing": "tests of PyTorch's ONNX export",
    "torch.onnx.utils": "the TorchScript ONNX exporter's internals",
    "torch.onnx.verification": "checking an exported model against onnxruntime: not built "
                               "(tests/test_onnx_export.py does it by hand)",
    "torch.onnx.ops": "ONNX operators callable inside a traced model: not built",
    # torch.export's files: tp.export is one package whose names are at tp.export.*
    "torch.export.dynamic_shapes": "a file of PyTorch's: Dim is at tp.export.Dim",
    "torch.export.exported_program": "a file of PyTorch's: ExportedProgram is at "
                                     "tp.export.ExportedProgram",
    "torch.export.graph_signature": "a file of PyTorch's: the signature's classes are at "
                                    "tp.export.*",
    "torch.export.custom_obj": "TorchScript custom classes in an exported program",
    "torch.export.custom_ops": "registering ops for export's fake-tensor tracing",
    "torch.export.decomp_utils": "decomposition tables (run_decompositions is the identity "
                                 "here: the graph is below the Composite decompositions)",
    "torch.export.experimental": "experimental export APIs",
    "torch.export.passes": "graph passes over exported programs (the compiler's work)",
    "torch.export.pt2_archive": "the .pt2 archive format (save/load of exported programs): "
                                "not built",
    "torch.export.unflatten": "restoring the module hierarchy of a graph: not built",
    # features not built yet, each with where it will be (or why not)
    "torch.utils.benchmark.examples": "PyTorch's own example scripts for its Timer",
    "torch.utils.benchmark.op_fuzzers": "random inputs for benchmarking PyTorch's ops: "
                                        "not built",
    "torch.utils.benchmark.utils.fuzzer": "the Fuzzer behind op_fuzzers: not built",
    "torch.utils.benchmark.utils.sparse_fuzzer": "the Fuzzer behind op_fuzzers: not built",
    "torch.utils.benchmark.utils.cpp_jit": "compiling C++ statements against libtorch "
                                           "(Timer(language='c++')): no C++ API here",
    "torch.utils.benchmark.utils.valgrind_wrapper": "Callgrind instruction counts of C++ "
                                                    "statements: no C++ API here",
    "torch.utils.benchmark.utils.compile": "benchmarking torch.compile backends",
    "torch.nn.attention": "SDPA kernel selection and flex attention: TensorPlay has one "
                          "attention (the math composition); fused kernels are issue 33",
    "torch.nn.modules.lazy": "lazy modules (shapes inferred at the first call), as "
                             "tests/test_api_surface.py skips them",
    "torch.nn.modules.linear_cross_entropy": "holds only private autograd Functions "
                                             "(nothing public)",
    "torch.nn.parallel.comm": "DataParallel (one process, many GPUs): not built; "
                              "DistributedDataParallel is",
    "torch.nn.parallel.data_parallel": "DataParallel: not built; DistributedDataParallel is",
    "torch.nn.parallel.parallel_apply": "DataParallel's helpers: not built",
    "torch.nn.parallel.replicate": "DataParallel's helpers: not built",
    "torch.nn.parallel.scatter_gather": "DataParallel's helpers: not built",
    "torch.nn.utils.fusion": "conv/linear + batch-norm folding for inference: not built",
    "torch.nn.utils.init": "skip_init (construct a module without initialising): not built",
    "torch.nn.utils.memory_format": "converting conv weights to channels_last: not built",
    "torch.nn.utils.prune": "pruning: not built",
    "torch.utils.dlpack": "to_dlpack: not built (tp.from_dlpack is)",
    "torch.utils.flop_counter": "a FLOP counter built on TorchDispatchMode: not built",
    "torch.utils.module_tracker": "module tracking built on TorchDispatchMode: not built",
    "torch.utils.hooks": "RemovableHandle and BackwardHook, PyTorch's internal helpers",
    "torch.utils.tensorboard": "TensorBoard logging: not built",
    "torch.utils.model_zoo": "downloading pretrained weights (torch.hub): not built",
    "torch.hub": "downloading models and weights: not built",
    "torch.utils.data.datapipes": "DataPipes (deprecated in PyTorch, torchdata's now)",
    "torch.utils.data.backward_compatibility": "DataPipes' worker_init_fn shim",
    "torch.utils.data.graph": "DataPipe graphs",
    "torch.utils.data.graph_settings": "DataPipe graph settings",
    "torch.return_types": "the named tuples of multi-output ops' types "
                          "(tests/api_surface_missing.txt lists it)",
    "torch.quasirandom": "SobolEngine (tests/api_surface_missing.txt lists it)",
}

TORCH_DIR = os.path.dirname(torch.__file__)


def _walk(package):
    """`package` and every public module and package under it, from the file system."""
    base = os.path.join(TORCH_DIR, *package.split("."))
    found = []
    for dirpath, dirnames, files in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("_")
                             and os.path.exists(os.path.join(dirpath, d, "__init__.py")))
        name = "torch." + os.path.relpath(dirpath, TORCH_DIR).replace(os.sep, ".")
        found.append(name)
        found += [f"{name}.{f[:-3]}" for f in sorted(files)
                  if f.endswith(".py") and not f.startswith("_")]
    return found


def torch_modules():
    found = []
    for package in ROOTS:
        found += _walk(package)
    for name in TOP_LEVEL:
        if os.path.exists(os.path.join(TORCH_DIR, name + ".py")) or \
                os.path.isdir(os.path.join(TORCH_DIR, name)):
            found.append("torch." + name)
    return sorted(set(found))


def _reason(path):
    for prefix, why in OUT_OF_SCOPE.items():
        if path == prefix or path.startswith(prefix + "."):
            return why
    return None


def _ours(path):
    return "tensorplay" + path[len("torch"):]


@pytest.mark.parametrize("path", KEPT)
def test_kept_module_path_imports(path):
    importlib.import_module(_ours(path))


def test_every_torch_module_is_kept_or_out_of_scope():
    kept = set(KEPT)
    unclassified = [m for m in torch_modules() if m not in kept and _reason(m) is None]
    assert not unclassified, (f"{len(unclassified)} PyTorch modules are neither in KEPT nor "
                              f"OUT_OF_SCOPE (serve them, or say why not): {unclassified}")


def test_the_lists_do_not_overlap_and_name_torch_modules():
    torch_set = set(torch_modules())
    assert sorted(set(KEPT)) == KEPT and set(KEPT) <= torch_set
    assert not [m for m in KEPT if _reason(m) is not None]
    unused = [p for p in OUT_OF_SCOPE if not any(m == p or m.startswith(p + ".")
                                                  for m in torch_set)]
    assert not unused, f"OUT_OF_SCOPE entries no PyTorch module has: {unused}"


def test_no_out_of_scope_module_exists_now():
    """When TensorPlay builds one, the entry moves to KEPT."""
    now = []
    for path in OUT_OF_SCOPE:
        try:
            importlib.import_module(_ours(path))
        except ImportError:
            continue
        now.append(path)
    assert not now, f"these import under tensorplay now: move them to KEPT: {now}"


def test_module_paths_hold_the_names_scripts_import():
    from tensorplay.nn.modules.activation import MultiheadAttention
    from tensorplay.nn.modules.linear import NonDynamicallyQuantizableLinear
    import tensorplay as tp
    assert MultiheadAttention is tp.nn.MultiheadAttention
    assert isinstance(MultiheadAttention(4, 2).out_proj, NonDynamicallyQuantizableLinear)
    assert issubclass(NonDynamicallyQuantizableLinear, tp.nn.Linear)
    from tensorplay.cuda.amp import GradScaler, autocast  # noqa: F401
    from tensorplay.optim.adamw import AdamW
    assert AdamW is tp.optim.AdamW


def test_each_torch_nn_modules_file_has_its_public_names_here():
    """torch.nn.modules.<file>'s public classes and functions, at the same path (the lazy
    modules and two kinds of backward hook are the exceptions, each with its reason)."""
    import inspect
    not_here = {"LazyModuleMixin": "lazy modules", "LazyLinear": "lazy modules",
                "register_module_full_backward_pre_hook":
                    "backward pre-hooks: not built (per module either)",
                "register_module_backward_hook":
                    "the deprecated non-full backward hook: not built (per module either)"}
    missing = []
    for path in KEPT:
        if not path.startswith("torch.nn.modules."):
            continue
        theirs = importlib.import_module(path)
        names = set(getattr(theirs, "__all__", [])) | {
            n for n, v in vars(theirs).items() if not n.startswith("_")
            and (inspect.isclass(v) or inspect.isfunction(v))
            and getattr(v, "__module__", None) == path}
        ours = importlib.import_module(_ours(path))
        missing += [f"{path}.{n}" for n in sorted(names) if not hasattr(ours, n)
                    and not n.startswith("Lazy") and n not in not_here]
    assert not missing


def test_serialization_is_an_attribute_before_any_import_of_it():
    import subprocess
    import sys
    code = "import tensorplay as tp; print(tp.serialization.__name__, tp.onnx.__name__, " \
           "tp.backends.cudnn.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.stdout.split() == ["tensorplay.serialization", "tensorplay.onnx",
                                  "tensorplay.backends.cudnn"], out.stderr


DEVICE_PREDICATES = ["is_cpu", "is_cuda", "is_xpu", "is_mps", "is_mkldnn", "is_vulkan",
                     "is_ipu", "is_xla", "is_maia", "is_mtia", "is_meta", "is_sparse",
                     "is_sparse_csr", "is_quantized", "is_nested"]


def test_every_tensor_device_predicate_tells_the_truth():
    import tensorplay as tp
    assert [p for p in dir(torch.Tensor) if p.startswith("is_") and
            not callable(getattr(torch.ones(1), p))] == sorted(
        DEVICE_PREDICATES + ["is_leaf"])
    for make_torch, make_tp in [(lambda: torch.ones(2), lambda: tp.ones(2)),
                                (lambda: torch.ones(2, device="meta"),
                                 lambda: tp.ones(2, device="meta"))]:
        a, b = make_torch(), make_tp()
        assert {p: getattr(b, p) for p in DEVICE_PREDICATES} == \
            {p: getattr(a, p) for p in DEVICE_PREDICATES}
    assert tp.ones(2).is_distributed() is False
