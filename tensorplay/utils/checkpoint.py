"""`tp.utils.checkpoint` (torch.utils.checkpoint): activation checkpointing, memory
traded for compute.

A forward pass keeps, for backward, the tensors the formulas will read: for a deep
network that is every layer's activations at once. `checkpoint(fn, *args)` keeps only
fn's inputs; backward runs fn's forward a second time to get the rest back. Two ways,
both PyTorch's:

- use_reentrant=True: fn runs as one custom Function (`CheckpointFunction`) with grad
  mode off, so nothing inside it is recorded. Its backward reruns fn with grad mode on,
  on detached copies of the inputs, and calls backward on that small graph (a backward
  inside a backward: "reentrant").
- use_reentrant=False: fn runs normally, recorded op by op, but under saved-tensor hooks
  (tp.autograd.graph.saved_tensors_hooks) whose pack hook drops each saved tensor and
  keeps only its position. The first unpack reruns fn once, under hooks that collect the
  tensors the rerun saves, and every unpack hands back the one at its position.

Both reruns start from the random state the forward started from (preserve_rng_state):
the CPU generator's and the cuda one's (the Philox seed and offset its kernels draw at),
so a dropout inside draws the same mask twice.
"""
from __future__ import annotations

import contextlib
import warnings

import tensorplay as tp
from tensorplay.autograd.function import Function
from tensorplay.autograd.graph import saved_tensors_hooks

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "detach_variable", "noop_context_fn"]


class CheckpointError(RuntimeError):
    """The rerun of a checkpointed forward did not save what the forward saved."""


def _is_tensor(x):
    return getattr(x, "_impl", None) is not None


def noop_context_fn():
    """The default context_fn: no context around the forward, none around the rerun."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    """The tuple with each tensor detached, keeping its requires_grad."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not _is_tensor(inp):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def _check_backward_validity(inputs):
    if not any(_is_tensor(inp) and inp.requires_grad for inp in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


def _rng_states():
    """The states of both generators, CPU and cuda (saving the cuda one costs nothing
    here: PyTorch saves it only once cuda is initialised, to avoid initialising it)."""
    return tp.random.get_rng_state(), tp.cuda.get_rng_state()


@contextlib.contextmanager
def _forward_rng(states, preserve_rng_state):
    """Run the block from the random states the forward started from, then put back the
    states the caller has now."""
    with tp.random.fork_rng(enabled=preserve_rng_state):
        if preserve_rng_state:
            tp.random.set_rng_state(states[0])
            tp.cuda.set_rng_state(states[1])
        yield


class CheckpointFunction(Function):
    """use_reentrant=True: apply(run_function, preserve_rng_state, *args)."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        _check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_rng_states = _rng_states()
        # Non-tensors are kept as they are, tensors through save_for_backward (so an
        # in-place change of an input before backward is caught).
        ctx.inputs = [None if _is_tensor(a) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if _is_tensor(a)]
        ctx.save_for_backward(*(args[i] for i in ctx.tensor_indices))
        return run_function(*args)        # grad mode is off inside a Function's forward

    @staticmethod
    def backward(ctx, *grads):
        inputs = list(ctx.inputs)
        for i, tensor in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = tensor
        with _forward_rng(getattr(ctx, "fwd_rng_states", None), ctx.preserve_rng_state):
            detached = detach_variable(tuple(inputs))
            with tp.enable_grad():
                outputs = ctx.run_function(*detached)
        if _is_tensor(outputs):
            outputs = (outputs,)
        pairs = [(out, grad) for out, grad in zip(outputs, grads)
                 if _is_tensor(out) and out.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        tp.autograd.backward([p[0] for p in pairs], [p[1] for p in pairs])
        return (None, None) + tuple(inp.grad if _is_tensor(inp) else None
                                    for inp in detached)


def _metadata(x):
    return {"shape": tuple(x.shape), "dtype": x.dtype, "device": x.device}


_DETERMINISM_CHECKS = {"default": _metadata, "none": None}


class _Frame:
    """One use_reentrant=False call: how to rerun it, and the tensors of the rerun."""

    def __init__(self, rerun, metadata_fn):
        self.rerun = rerun
        self.metadata_fn = metadata_fn
        self.saved_metadata = []    # per position saved in the forward
        self.recomputed = {}        # position -> tensor, filled by the rerun

    def pack(self, tensor):
        """The forward's pack hook: the tensor is dropped, its position kept."""
        self.saved_metadata.append(None if self.metadata_fn is None
                                   else self.metadata_fn(tensor))
        return len(self.saved_metadata) - 1

    def unpack(self, position):
        """The first unpack of a backward reruns the forward; each position is handed out
        once (popped, so the rerun's tensors are freed as backward uses them; a second
        backward with retain_graph=True reruns again)."""
        if position not in self.recomputed:
            self._recompute()
        return self.recomputed.pop(position)

    def _recompute(self):
        rerun_saved = []

        def collect(tensor):
            if len(rerun_saved) >= len(self.saved_metadata):
                raise CheckpointError(
                    "torch.utils.checkpoint: trying to save more tensors during "
                    "recomputation than during the original forward pass.")
            rerun_saved.append(tensor.detach())
            return None

        def no_unpack(_):
            raise CheckpointError("torch.utils.checkpoint: the graph of a recomputation "
                                  "is not meant to be run backward")

        with saved_tensors_hooks(collect, no_unpack), tp.enable_grad():
            self.rerun()
        self._check(rerun_saved)
        self.recomputed = dict(enumerate(rerun_saved))

    def _check(self, rerun_saved):
        if self.metadata_fn is None:
            return
        if len(rerun_saved) != len(self.saved_metadata):
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.saved_metadata)}\n"
                f"Number of tensors saved during recomputation: {len(rerun_saved)}.")
        different = ""
        for i, (saved, tensor) in enumerate(zip(self.saved_metadata, rerun_saved)):
            now = self.metadata_fn(tensor)
            if saved != now:
                different += (f"tensor at position {i}:\nsaved metadata: {saved}\n"
                              f"recomputed metadata: {now}\n")
        if different:
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors have "
                f"different metadata than during the forward pass.\n{different}.")


def _checkpoint_without_reentrant(function, preserve_rng_state, context_fn,
                                  determinism_check, args, kwargs):
    if determinism_check not in _DETERMINISM_CHECKS:
        raise ValueError(f"determinism_check should be one of {list(_DETERMINISM_CHECKS)}, "
                         f"but got {determinism_check}")
    forward_context, recompute_context = context_fn()
    if not tp.is_grad_enabled():      # nothing is saved: nothing to recompute
        with forward_context:
            return function(*args, **kwargs)
    rng_states = _rng_states() if preserve_rng_state else None

    def rerun():
        with _forward_rng(rng_states, preserve_rng_state), recompute_context:
            function(*args, **kwargs)

    frame = _Frame(rerun, _DETERMINISM_CHECKS[determinism_check])
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        return function(*args, **kwargs)


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check="default", debug=False, early_stop=True, **kwargs):
    """`function(*args, **kwargs)`, keeping only its inputs for backward: backward runs it
    again. use_reentrant should be given (PyTorch warns when it is not, and then takes
    True); False is the recommended form: it takes keyword arguments, works with
    tp.autograd.grad and needs no input that requires grad. `preserve_rng_state=True`
    (a keyword) reruns from the forward's random state. `debug` and `early_stop` are
    accepted for PyTorch's signature: the determinism check's message is the whole
    report here (no operator log), and the rerun always runs fn to its end (PyTorch's
    early stop ends it once every saved tensor is back)."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
            "exception. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for "
            "more details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    if debug and context_fn is not noop_context_fn:
        raise ValueError("debug=True is incompatible with non-default context_fn")
    return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check,
                                         args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run `functions` (a list or an nn.Sequential) in order on `input`, cut into
    `segments` pieces: every piece but the last is checkpointed, so only the pieces'
    boundaries are kept for backward (and one piece's activations while it reruns)."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter "
            "should be passed explicitly. In version 2.9 we will raise an exception if "
            "use_reentrant is not passed. use_reentrant=False is recommended, but if you "
            "need to preserve the current default behavior, you can pass use_reentrant=True. "
            "Refer to docs for more details on the differences between the two variants.",
            stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    if isinstance(functions, tp.nn.Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
