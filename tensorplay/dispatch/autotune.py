"""Autotuning: a Triton kernel's launch configuration measured per shape bucket.

Kernel selection (kernel_selection.py) chooses *which* kernel runs a call; a Triton
kernel then still has choices of its own: the block sizes it is compiled for (BLOCK of the
pointwise template, the row block of softmax, BLOCK_M/N/K of the matmul), and the
`num_warps` and `num_stages` it is launched with. Which is fastest depends on the GPU and
on the problem's size, so it is measured (the "JIT and autotune" step: compile each
candidate configuration, time it, keep the winner):

    the first call of a kernel in a shape bucket   every config of its list is compiled
                                                   and timed on the call's own arguments
                                                   (do_bench: warm-up, cache flushed,
                                                   events around each run); the fastest
                                                   runs the call, and is kept
    later calls in the same bucket                 the kept config, no measurement

A bucket is the kernel's sizes each rounded up to the next power of two (kernel_selection
`round_up_pow2`), with whatever else its configs depend on (the dtype, a flag): one
measurement per power of two, not one per shape. Choices are kept with the launch plans
(dispatch/plan_cache.py, under `autotune <kernel>`), the second level of the kernel
selection cache: dropped, like the registry's choices, when the registry version moves.

explain() shows an `autotune` hop per launch while autotuning is on: the config that ran
and why (measured now, with every config's time; or kept from the bucket's measurement).
While it is off a kernel launches its list's default config, which the `triton` hop shows.

On by default with a GPU. Under the Triton interpreter, off unless asked for
(`TP_AUTOTUNE=1`, or `tp.dispatch.enable_autotune()`): an interpreted config's time says
nothing of a GPU's (the interpreter pays per program, whatever its block), so measuring
would only make the tests slow; a kernel then runs its list's default config. A launch
small enough to be one program under every config (a short pointwise tensor) is not
measured either: nothing would differ. A measuring launch must be repeatable: it runs
several times on the same arguments, so a kernel that reads what it writes (in place)
gives its autotuned launches a scratch result to write (triton_kernels/pointwise.py).
"""
from __future__ import annotations

import os

from tensorplay import _cuda_state
from tensorplay._device_timing import do_bench
from tensorplay.dispatch import trace
from tensorplay.dispatch.kernel_selection import bump_version, round_up_pow2
from tensorplay.dispatch.plan_cache import plans

__all__ = ["Config", "choose", "enable_autotune", "autotune_enabled", "choices", "bucket"]

# The timing budget of one config: milliseconds of warm-up and of timed runs on a GPU
# (a quarter of Triton's autotuner's 25 and 100: hundreds of runs of a microsecond
# kernel still, and a program meeting many buckets does not wait seconds for each);
# under the interpreter, run counts (a run costs milliseconds there, whatever the config).
GPU_WARMUP_MS, GPU_REP_MS = 5, 25
INTERPRETER_RUNS = 2


class Config:
    """One launch configuration: the kernel's constexpr block sizes (`kwargs`) and the
    launch options num_warps (threads per program / 32) and num_stages (software
    pipelining depth of the loops); the defaults are a plain launch's (Triton's)."""

    __slots__ = ("kwargs", "num_warps", "num_stages")

    def __init__(self, kwargs, num_warps=4, num_stages=3):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages

    def launch_options(self):
        """What the launch takes: the constexprs and the two options."""
        return dict(self.kwargs, num_warps=self.num_warps, num_stages=self.num_stages)

    def __repr__(self):
        sizes = " ".join(f"{k}={v}" for k, v in self.kwargs.items())
        return f"{sizes} num_warps={self.num_warps} num_stages={self.num_stages}"

    def __eq__(self, other):
        return isinstance(other, Config) and self.launch_options() == other.launch_options()

    def __hash__(self):
        return hash(tuple(sorted(self.launch_options().items())))


class Choice:
    """What the cache keeps for one bucket: the config and every config's time (ms)."""

    __slots__ = ("config", "times")

    def __init__(self, config, times):
        self.config = config
        self.times = times

    def __repr__(self):
        return f"Choice({self.config!r})"


class _Options:
    enabled = None      # None: not decided yet (see autotune_enabled)
    # Called as `every_config(configs, run)` before each choice, when set: the compile
    # check (triton_kernels/_launch_record.py) notes the launch of every config a choice
    # could pick, not only the one that runs.
    every_config = None


options = _Options()


def enable_autotune(enabled=True):
    """Measure Triton kernels' configurations per shape bucket (the default with a GPU;
    off under the interpreter, where TP_AUTOTUNE=1 also turns it on). Kept choices are
    dropped: a config chosen while off was the default, not a measurement."""
    options.enabled = bool(enabled)
    bump_version()


def autotune_enabled():
    enabled = options.enabled
    if enabled is None:
        setting = os.environ.get("TP_AUTOTUNE")
        enabled = options.enabled = setting == "1" if setting is not None \
            else not _cuda_state.is_interpreted()
    return enabled


def bucket(*sizes):
    """Sizes rounded up to the next power of two (the bucket of a launch's sizes)."""
    return tuple(round_up_pow2(s) for s in sizes)


def choices(kernel):
    """{key: Choice} kept for `kernel` (what tests and notebooks inspect)."""
    return dict(plans.by_kernel.get(f"autotune {kernel}", {}))


def choose(kernel, configs, key, run, default=0):
    """The config `kernel` launches with for `key` (its bucket and what else its configs
    depend on): `configs[default]` while autotuning is off; else the kept choice of
    `key`, or, on the first call in the bucket, the fastest config measured by running
    `run(config)` (a launch of the kernel with that config on the call's arguments)."""
    if options.every_config is not None:
        options.every_config(configs, run)
    if not autotune_enabled() or not plans.enabled:
        # No hop: the launch's `triton` hop shows the default's block sizes, and explain()
        # reads as it did before autotuning existed. With the plan cache off
        # (`plans.enabled = False`) there is nowhere to keep a choice, and measuring every
        # launch would cost more than any config saves: the default too.
        return configs[default]
    measured = []

    def measure():
        measured.append(True)
        return _measure(configs, run)
    choice = plans.get(f"autotune {kernel}", key, measure)
    if trace.state.active:
        if measured:
            times = ", ".join(f"[{c}] {ms:.3g} ms" for c, ms in choice.times)
            why = f"measured fastest of {len(choice.times)} for {key}: {times}"
        else:
            why = f"kept from the measurement of {key}"
        trace.hop("autotune", f"{kernel}: {choice.config} ({why})",
                  where=trace.frame_where(1))
    return choice.config


def _measure(configs, run):
    """Time every config (do_bench); the fastest, with all the times. A config that cannot
    run (its tiles need more shared memory than the GPU has for this dtype: Triton's
    OutOfResources) is left out, as Triton's autotuner leaves it; if none can, the first
    one's error is raised. The launches being timed are not reported to explain(): only
    the choice is."""
    active = trace.state.active
    trace.state.active = False
    try:
        times, errors = [], []
        for config in configs:
            try:
                if _cuda_state.is_interpreted():
                    ms = do_bench(lambda: run(config), n_warmup=1, n_repeat=INTERPRETER_RUNS,
                                  return_mode="median")
                else:
                    ms = do_bench(lambda: run(config), warmup=GPU_WARMUP_MS, rep=GPU_REP_MS,
                                  return_mode="median")
            except Exception as e:      # noqa: BLE001 - any compile or launch failure
                errors.append(e)
                continue
            times.append((config, ms))
    finally:
        trace.state.active = active
    if not times:
        raise errors[0]
    best = min(times, key=lambda pair: pair[1])[0]
    return Choice(best, times)
