"""Measured priorities: `tp.dispatch.tune(op, sample_inputs)`.

Static priorities say which candidate *should* be faster; tuning measures it. For the
choice-cache key of the sample inputs (dtypes, layout, shape signature) and their shape
bucket (each dim rounded up to the next power of two: kernel_selection.shape_bucket),
every eligible candidate is timed on them, and the fastest is pinned for that key: later
calls with the same key and bucket run it first, whatever its static priority (a pinned
candidate that raises KernelConstraintError still hands over to the next). explain()
marks such a plan "tuned".

Timing is do_bench's (tensorplay/_device_timing.py): a warm-up run, then `repeat` runs,
each after the cache is flushed and between two events, so that on a GPU the kernel is
timed and not its launch (a launch returns before the kernel has run); the median wins.

    tp.dispatch.enable_tuning()                 # off by default: pins are not consulted
    tp.dispatch.tune("mm", (a, b))              # -> "cpu_kernels.linalg.mm"

Pins are saved to a user cache file (TP_TUNE_CACHE, else ~/.cache/tensorplay/tuned.json)
under the device's name and the library version, and read back by enable_tuning();
a file written by another version or for another device is ignored: its timings
describe other kernels or another machine. File format 2 keys a pin by the key's text
with its bucket, `(float32, float32; shapes [8, 4] [4, 4])`; a pin of format 1 (no
`format` field, its text without shapes) still loads, and serves every bucket of its key.
"""
from __future__ import annotations

import json
import os
import platform

from tensorplay import _cuda_state
from tensorplay._device_timing import do_bench
from tensorplay.dispatch.dispatcher import dispatcher
from tensorplay.dispatch.keys import DispatchKey
from tensorplay.dispatch.kernel_selection import bump_version, options
from tensorplay.errors import ArgumentError, KernelConstraintError

__all__ = ["tune", "enable_tuning", "tuning_file"]

LIBRARY_VERSION = "0.1.0"      # tensorplay.__version__ (not imported: it loads the API)
FILE_FORMAT = 2                # 2: pins keyed by shape bucket too (1: no `format` field)


def tuning_file():
    return os.environ.get("TP_TUNE_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "tensorplay", "tuned.json")


def device_name(device):
    """The name pins are saved under: the GPU's model, or the machine's for the CPU."""
    return _device_name(device.type, device.index)


def _device_name(device_type, index=None):
    if device_type == "cuda":
        if _cuda_state.is_interpreted():
            return "cuda (Triton interpreter)"
        import torch
        return torch.cuda.get_device_name(index or 0)
    return f"{device_type} ({platform.machine()} {platform.processor()})".strip()


def _registry_for(op, args):
    handle = dispatcher.find(op)
    devices = [a._impl.device for a in _tensors(args)]
    if not devices:
        raise ArgumentError(f"tune(): sample_inputs of {op} hold no tensor", op="tune",
                            arg="sample_inputs")
    device = next((d for d in devices if d.type != "cpu"), devices[0])
    key = DispatchKey.CUDA if device.type == "cuda" else DispatchKey.CPU
    registry = handle.registries.get(key)
    if registry is None or not registry.candidates:
        raise ArgumentError(f"tune(): {op} has no {key.name} kernels to choose from",
                            op="tune", arg="op")
    return registry, device


def _tensors(args):
    for a in args:
        if hasattr(a, "_impl"):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (t for t in a if hasattr(t, "_impl"))


def _time(fn, args, repeat):
    """The median milliseconds of `repeat` runs of fn(*args), after one warm-up run
    (compilation, caches, page faults); each run synchronised and after a cache flush."""
    return do_bench(lambda: fn(*args), n_warmup=1, n_repeat=repeat, return_mode="median")


def tune(op, sample_inputs, repeat=5, save=True):
    """Time every candidate of `op` eligible for `sample_inputs` (the op's arguments in
    schema order) and pin the fastest for their shape signature and shape bucket; returns
    its name. Turns tuning on (`enable_tuning`). Pins are saved to tuning_file() unless
    save=False."""
    args = tuple(sample_inputs)
    registry, device = _registry_for(op, args)
    key = registry.cache_key(args, by_shape=True)
    eligible = registry.viable(registry.dtype_of_key(key),
                               key[1] if key[1] is not None else True,
                               registry.shape_results(key))
    times = {}
    for cand in eligible:
        try:
            times[cand.name] = _time(cand.fn, args, repeat)
        except KernelConstraintError:
            continue
    if not times:
        raise ArgumentError(f"tune(): no candidate of {op} runs on these inputs "
                            f"{registry.describe_key(key)}", op="tune", arg="sample_inputs")
    best = min(times, key=times.get)
    registry.pin(registry.describe_key(key), best)
    if save:
        _save(device, dispatcher.find(op).name, registry.describe_key(key), best)
    enable_tuning()
    return best


def enable_tuning(enabled=True):
    """Consult pinned choices (and load those saved for this library version); off by
    default. Every op is re-resolved: a pinned op's backend slot must call its registry."""
    options.tuning = bool(enabled)
    if enabled:
        _load()
    for handle in dispatcher.ops.values():
        handle._resolve()
    bump_version()


def _read():
    try:
        with open(tuning_file()) as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    if data.get("version") != LIBRARY_VERSION:
        return {}          # stale: another version's kernels
    return data


def _save(device, op, key_text, name):
    data = _read() or {"version": LIBRARY_VERSION, "devices": {}}
    data["format"] = FILE_FORMAT      # format 1's pins (no bucket) read the same way
    choices = data["devices"].setdefault(device_name(device), {})
    choices.setdefault(op, {})[key_text] = name
    path = tuning_file()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)


def _load():
    """Pin what the file holds for the devices of this machine."""
    devices = _read().get("devices", {})
    names = {_device_name("cpu"): DispatchKey.CPU}
    if _cuda_state.triton_available() and _cuda_state.is_available():
        names[_device_name("cuda", 0)] = DispatchKey.CUDA
    for name, key in names.items():
        for op, pins in devices.get(name, {}).items():
            handle = dispatcher.ops.get(op)
            registry = handle.registries.get(key) if handle is not None else None
            if registry is None:
                continue
            for key_text, candidate in pins.items():
                if any(c.name == candidate for c in registry.candidates):
                    registry.pin(key_text, candidate)
