"""Gradient buckets: DistributedDataParallel's averaging of gradients over the ranks,
started while backward is still running.

One all-reduce per parameter would pay the per-message latency hundreds of times; one
all-reduce of every gradient at the end would leave the network idle during backward.
Buckets sit between: the parameters are cut into groups of about `cap_bytes`, in the
*reverse* order of model.parameters() (backward produces the last layer's gradients
first). Each group owns one flat buffer:

    bucket 0   [ grad of fc2.bias | grad of fc2.weight ]          <- ready first
    bucket 1   [ grad of fc1.bias | grad of fc1.weight ]

A parameter's post-accumulate-grad hook copies its .grad into its slot. When the last
slot of a bucket is filled, the bucket's all-reduce (op AVG: the sum over the ranks
divided by their number) starts in the background (async_op) and backward goes on
computing the earlier layers' gradients meanwhile. When the last bucket is launched, the
reducer waits for all of them and copies each averaged slot back into .grad.

Every rank must launch the same all-reduces in the same order, so a bucket is launched
only after the buckets before it (a rank whose gradients arrive in another order waits).
"""
from __future__ import annotations

import tensorplay as tp
from tensorplay import distributed as dist
from tensorplay.autograd.node import AccumulateGrad
from tensorplay.distributed.errors import DistributedError

__all__ = ["Bucket", "Reducer", "assign_buckets", "reachable_parameters"]


class Bucket:
    """The gradients of a few parameters of one dtype and device, in one flat buffer."""

    def __init__(self, params):
        self.params = params
        self.slices = []            # (start, numel) of each parameter's slot
        start = 0
        for p in params:
            self.slices.append((start, p.numel()))
            start += p.numel()
        first = params[0]
        self.buffer = tp.zeros(start, dtype=first.dtype, device=first.device)
        self.ready = [False] * len(params)
        self.pending = len(params)
        self.work = None

    def slot(self, index):
        start, numel = self.slices[index]
        return self.buffer[start:start + numel]

    def reset(self):
        self.ready = [False] * len(self.params)
        self.pending = len(self.params)
        self.work = None


def assign_buckets(params, cap_bytes, first_cap_bytes):
    """Cut `params` (in reverse order) into lists of one dtype and device holding at most
    `cap_bytes` each (the first list at most `first_cap_bytes`, so that the first
    all-reduce starts early); a parameter larger than the cap gets a list of its own."""
    buckets = []
    open_lists = {}             # (dtype, device) -> (list being filled, its bytes)
    for p in reversed(params):
        key = (p.dtype, str(p.device))
        current, size = open_lists.get(key, ([], 0))
        cap = first_cap_bytes if not buckets else cap_bytes
        nbytes = p.numel() * p.element_size()
        if current and size + nbytes > cap:
            buckets.append(current)
            current, size = [], 0
        current.append(p)
        open_lists[key] = (current, size + nbytes)
    buckets.extend(current for current, _ in open_lists.values() if current)
    return buckets


def reachable_parameters(outputs):
    """The impls of the leaves whose AccumulateGrad the autograd graph of `outputs`
    (tensors, possibly nested in lists, tuples and dicts) leads to."""
    stack = [t.grad_fn for t in _tensors_in(outputs) if t.grad_fn is not None]
    seen = set()
    leaves = set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if type(node) is AccumulateGrad:
            leaves.add(node.variable._impl)
        stack.extend(child for child, _ in node.next_functions if child is not None)
    return leaves


def _tensors_in(value):
    if isinstance(value, tp.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors_in(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors_in(v)


class Reducer:
    """Averages the gradients of `params` over the group during each backward pass that
    `prepare_for_backward` announced."""

    def __init__(self, params, cap_bytes, first_cap_bytes, group=None,
                 find_unused_parameters=False):
        self.params = params
        self.group = group
        self.find_unused_parameters = find_unused_parameters
        self.buckets = [Bucket(ps) for ps in assign_buckets(params, cap_bytes, first_cap_bytes)]
        # Keyed by impl: the hook receives a Tensor object of its own around the
        # parameter's impl (the one its AccumulateGrad holds), not the Parameter itself.
        self.where = {}             # param impl -> (bucket, index in the bucket)
        for bucket in self.buckets:
            for i, p in enumerate(bucket.params):
                self.where[p._impl] = (bucket, i)
        self.names = {}             # param impl -> name, for the messages (set by DDP)
        self.expecting = False      # hooks reduce only in a pass prepare_for_backward set up
        self.started = False        # some gradient of this pass has been handed in
        self.next_launch = 0
        self.locally_used = set()
        self.hooks = [p.register_post_accumulate_grad_hook(self._on_gradient) for p in params]

    # ---- one backward pass ----------------------------------------------------------
    def prepare_for_backward(self, unused):
        """Called by each forward that will be followed by a synchronised backward;
        `unused` are the parameters the forward's graph does not reach."""
        if self.expecting and self.started:
            missing = [self.names.get(p._impl, "?") for b in self.buckets
                       for p, ready in zip(b.params, b.ready) if not ready]
            raise DistributedError(
                f"DistributedDataParallel: the previous backward pass did not produce "
                f"gradients for the parameters {missing}, so their reduction never finished. "
                f"Pass find_unused_parameters=True if some parameters do not take part in "
                f"every forward pass.", op="DistributedDataParallel.forward")
        for bucket in self.buckets:
            bucket.reset()
        self.next_launch = 0
        self.locally_used = set()
        self.expecting = True
        self.started = False
        for p in unused:
            self._mark_ready(p, None)

    def _on_gradient(self, param):
        if self.expecting:
            self.locally_used.add(param._impl)
            self._mark_ready(param, param.grad)

    def _mark_ready(self, param, grad):
        bucket, index = self.where[param._impl]
        if bucket.ready[index]:
            raise DistributedError(
                f"DistributedDataParallel: parameter {self.names.get(param._impl, '?')} got "
                f"a second gradient before the reduction of the first finished (two "
                f"backward calls through one forward's graph?)",
                op="DistributedDataParallel.backward")
        self.started = True
        with tp.no_grad():
            if grad is None:
                bucket.slot(index).zero_()
            else:
                bucket.slot(index).copy_(grad.reshape(-1))
        bucket.ready[index] = True
        bucket.pending -= 1
        self._launch_ready_buckets()

    def _launch_ready_buckets(self):
        while self.next_launch < len(self.buckets) \
                and self.buckets[self.next_launch].pending == 0:
            bucket = self.buckets[self.next_launch]
            bucket.work = dist.all_reduce(bucket.buffer, op=dist.ReduceOp.AVG,
                                          group=self.group, async_op=True)
            self.next_launch += 1
        if self.next_launch == len(self.buckets):
            self._finish()

    def _finish(self):
        """Wait for every bucket and write the averages into each .grad."""
        for bucket in self.buckets:
            bucket.work.wait()
        used = self._globally_used()
        with tp.no_grad():
            for bucket in self.buckets:
                for i, p in enumerate(bucket.params):
                    if used is not None and p._impl not in used:
                        continue      # no rank used it: .grad stays as it was, as in torch
                    averaged = bucket.slot(i).view(p.shape)
                    if p.grad is None:
                        p.grad = averaged.clone()
                    else:
                        p.grad.copy_(averaged)
        self.expecting = False

    def _globally_used(self):
        """With find_unused_parameters: the impls of the parameters some rank used."""
        if not self.find_unused_parameters:
            return None
        flags = tp.tensor([int(p._impl in self.locally_used) for p in self.params],
                          dtype=tp.int32)
        dist.all_reduce(flags, group=self.group)
        return {p._impl for p, n in zip(self.params, flags.tolist()) if n > 0}
