"""Recording launches: what Triton's JIT would compile for each, for the compile check.

A real launch compiles a kernel for its *specialisation*, not only for its argument
types: Triton's JIT looks at each argument and

    a tensor (its pointer)    `*fp16`...; marked divisible by 16 (`tt.divisibility`) when
                              its address is a multiple of 16 bytes: loads may then be
                              vectorised, and copied to shared memory asynchronously
    an int                    `i32` or `i64`; marked divisible by 16 when it is a multiple
                              of 16; an int equal to 1 becomes a compile-time constant
                              (a unit stride: the kernel is compiled for contiguous rows)
    a float, a bool           `fp32`, `i1`, never specialised on its value
    a tl.constexpr argument   its value (block sizes, dtypes, flags)

plus the launch options (num_warps, num_stages). Compiling a kernel without that
(compile_check.py did, with every int a plain `i32`) compiles a different program: the
matmul had no async copies, for one.

While a `Recorder` is installed (`with recording() as recorder:`), `_launch.launch` hands
it every launch before running it, and the recorder keeps one *signature* per distinct
(kernel, types, specialisation, constexprs, options), with Triton's own rule for each
argument (`native_specialize_impl`, what `JITFunction.run` calls). An autotuned choice
(tensorplay/dispatch/autotune.py `choose`) shows the recorder every config it could pick:
each is launched as a dry run, noted and not run.

Records are plain JSON (the kernel by module and name, or the generated source of a
pointwise template kernel), so a process without TRITON_INTERPRET can rebuild and
compile them (compile_check.py).
"""
from __future__ import annotations

import contextlib
import inspect
import json
import linecache

recorder = None     # the installed Recorder, or None (launch() checks this)

GENERATED = "<triton_kernels generated: "      # _template.py's file names


def _specialize():
    """Triton's per-argument rule, `(type, attribute)` for one value (triton >= 3.5)."""
    try:
        from triton._C.libtriton import native_specialize_impl
        from triton.backends.compiler import BaseBackend
    except ImportError:
        import triton
        raise RuntimeError(f"triton {triton.__version__} has no native_specialize_impl "
                           "(Triton 3.5 and later do): the launches' specialisation cannot be "
                           "recorded with this Triton") from None
    return lambda value, specialize, align: native_specialize_impl(
        BaseBackend, value, False, specialize, align)


def _encode(value):
    """A constexpr's value as JSON: tl dtypes as {"tl": "float32"}."""
    import triton.language as tl
    if isinstance(value, tl.constexpr):
        value = value.value
    if isinstance(value, tl.dtype):
        names = [n for n in ("float16", "bfloat16", "float32", "float64", "int1", "int8",
                             "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
                 if getattr(tl, n) == value]
        return {"tl": names[0]}
    if isinstance(value, tuple):         # a table's (start, length), say
        return {"tuple": [_encode(v) for v in value]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"a constexpr of type {type(value).__name__} cannot be recorded")


def decode(value):
    import triton.language as tl
    if isinstance(value, dict):
        if "tuple" in value:
            return tuple(decode(v) for v in value["tuple"])
        return getattr(tl, value["tl"])
    return value


def kernel_id(kernel):
    """'module:name' of a module-level @triton.jit function, 'generated:name' of one the
    pointwise template generated."""
    fn = kernel.fn
    if fn.__code__.co_filename.startswith(GENERATED):
        return f"generated:{fn.__name__}"
    return f"{fn.__module__}:{fn.__qualname__}"


def _is_constexpr(param):
    ann = param.annotation
    text = ann if isinstance(ann, str) else getattr(ann, "__name__", repr(ann))
    return "constexpr" in text


class Recorder:
    """The distinct launch signatures seen, in the order first met."""

    def __init__(self):
        self.records = {}        # key -> record (a JSON-able dict)
        self.errors = []         # what a dry-run config raised
        self.dry_run = False
        self.specialize = _specialize()
        self.phase = ""          # what the caller is running: kept with each new record
        self.all_configs = True  # whether a choice's other configs are noted too

    def note(self, kernel, args, meta):
        """Note one launch; True when it must not run (a dry-run config)."""
        record = self.signature(kernel, args, meta)
        key = json.dumps([record[k] for k in ("kernel", "signature", "constexprs",
                                               "aligned", "options")], sort_keys=True)
        kept = self.records.setdefault(key, dict(record, phase=self.phase))
        kept["launches"] = kept.get("launches", 0) + 1
        return self.dry_run

    def signature(self, kernel, args, meta):
        fn = kernel.fn
        params = inspect.signature(fn).parameters
        kwargs = {k: v for k, v in meta.items() if k in params}
        options = {k: v for k, v in meta.items() if k not in params}
        bound = inspect.signature(fn).bind(*args, **kwargs)
        extra = getattr(kernel, "kwargs", None) or {}       # the interpreter keeps them here
        not_specialised = set(extra.get("do_not_specialize") or
                              getattr(kernel, "do_not_specialize", None) or ())
        not_aligned = set(extra.get("do_not_specialize_on_alignment") or
                          getattr(kernel, "do_not_specialize_on_alignment", None) or ())
        signature, constexprs, aligned, ones = {}, {}, [], []
        for i, (name, param) in enumerate(params.items()):
            value = bound.arguments.get(name, param.default)
            if _is_constexpr(param):
                signature[name] = "constexpr"
                constexprs[name] = _encode(value)
                continue
            specialise = name not in not_specialised and i not in not_specialised
            align = name not in not_aligned and i not in not_aligned
            kind, attribute = self.specialize(value, specialise, align)
            signature[name] = kind
            if kind == "constexpr":           # an int equal to 1, or None
                constexprs[name] = _encode(attribute)
                ones.append(name)
            elif attribute and "D" in attribute:
                aligned.append(name)
        record = {"kernel": kernel_id(kernel), "signature": signature,
                  "constexprs": constexprs, "aligned": aligned, "ones": ones,
                  "options": {k: options[k] for k in sorted(options)}}
        if record["kernel"].startswith("generated:"):
            record["source"] = "".join(linecache.getlines(fn.__code__.co_filename))
        return record

    def every_config(self, configs, run):
        """autotune's hook: launch every config as a dry run (noted, not run)."""
        if not self.all_configs:
            return
        self.dry_run = True
        try:
            for config in configs:
                try:
                    run(config)
                except Exception as e:      # noqa: BLE001 - reported, the call goes on
                    self.errors.append(f"{config}: {type(e).__name__}: {e}")
        finally:
            self.dry_run = False


@contextlib.contextmanager
def recording():
    """Install a Recorder for the launches (and every autotune config) in the block."""
    global recorder
    from tensorplay.dispatch import autotune
    previous, previous_hook = recorder, autotune.options.every_config
    recorder = Recorder()
    autotune.options.every_config = recorder.every_config
    try:
        yield recorder
    finally:
        recorder, autotune.options.every_config = previous, previous_hook
