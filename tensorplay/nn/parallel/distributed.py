"""DistributedDataParallel: the same model on every rank, each rank on its own share of
the batch, gradients averaged so every rank takes the same optimizer step.

    dist.init_process_group("gloo")
    model = DistributedDataParallel(MyModel())     # rank 0's weights on every rank
    for x, y in loader:                            # loader sharded by DistributedSampler
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()                            # grads averaged over the ranks
        optimizer.step()

With equal shards, the averaged gradient is the gradient of the mean loss over the
global batch: N ranks on batches of B compute what one process computes on N*B.
The averaging itself (buckets, overlap with backward) is in buckets.py.
"""
from __future__ import annotations

import contextlib

import tensorplay as tp
from tensorplay import distributed as dist
from tensorplay.distributed.process_group import require_group
from tensorplay.errors import ArgumentError, DeviceError
from tensorplay.nn.modules.module import Module
from tensorplay.nn.parallel.buckets import Reducer, reachable_parameters

__all__ = ["DistributedDataParallel"]

MB = 1024 * 1024
FIRST_BUCKET_BYTES = 1 * MB     # torch's too: the first all-reduce starts early


class DistributedDataParallel(Module):
    """Wrap `module` for data-parallel training over the default process group.

    Args:
        module: the model; its parameters and buffers are overwritten with rank 0's here.
        device_ids, output_device: as in PyTorch, the one device the module is on
            ([local_rank] for a GPU module, None for a CPU one); the module must already
            be there (module.to(...)): they are checked, nothing is moved.
        broadcast_buffers: copy rank 0's buffers (BatchNorm's running statistics) to
            every rank at the start of each forward.
        bucket_cap_mb: megabytes of gradients per all-reduce.
        find_unused_parameters: after each forward, find the parameters its graph does
            not reach and count them as reduced, so backward does not wait for them.
        process_group: a torch.distributed group other than the default one.
    """

    def __init__(self, module, device_ids=None, output_device=None, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=25, find_unused_parameters=False):
        super().__init__()
        require_group("DistributedDataParallel")
        _check_device_ids(module, device_ids, output_device)
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.process_group = process_group
        self.require_backward_grad_sync = True
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        with tp.no_grad():
            for tensor in list(module.parameters()) + list(module.buffers()):
                dist.broadcast(tensor.detach(), group=process_group, group_src=0)
        params = [p for _, p in named]
        cap = int(bucket_cap_mb * MB)
        self.reducer = Reducer(params, cap, min(cap, FIRST_BUCKET_BYTES), process_group,
                               find_unused_parameters) if params else None
        if self.reducer is not None:
            self.reducer.names = {p._impl: n for n, p in named}

    def forward(self, *inputs, **kwargs):
        if self.broadcast_buffers:
            with tp.no_grad():
                for buffer in self.module.buffers():
                    dist.broadcast(buffer.detach(), group=self.process_group, group_src=0)
        output = self.module(*inputs, **kwargs)
        if self.reducer is not None and tp.is_grad_enabled() \
                and self.require_backward_grad_sync:
            unused = []
            if self.find_unused_parameters:
                reached = reachable_parameters(output)
                unused = [p for p in self.reducer.params if p._impl not in reached]
            self.reducer.prepare_for_backward(unused)
        return output

    @contextlib.contextmanager
    def no_sync(self):
        """Inside the block, backward only accumulates into .grad on each rank (no
        communication); the first synchronised backward after it averages the sum."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous


def _check_device_ids(module, device_ids, output_device):
    """device_ids / output_device name the device the module's parameters are on."""
    if device_ids is None and output_device is None:
        return
    named = list(device_ids or ()) + ([output_device] if output_device is not None else [])
    if device_ids is not None and len(device_ids) != 1:
        raise ArgumentError(f"DistributedDataParallel(): argument 'device_ids' must name one "
                            f"device (one process per device), got {device_ids!r}",
                            op="DistributedDataParallel", arg="device_ids")
    devices = {str(p.device) for p in module.parameters()}
    for entry in named:
        wanted = str(tp.device(f"cuda:{entry}" if isinstance(entry, int) else entry))
        if devices != {wanted}:
            raise DeviceError(f"DistributedDataParallel(): device_ids/output_device name "
                              f"{wanted}, but the module's parameters are on "
                              f"{sorted(devices)} (move the module there first)",
                              op="DistributedDataParallel", arg="device_ids")
