# The steps of PyTorch's tutorial "Per-sample-gradients" (torch.func), at a small size:
# a per-sample gradient by a loop of autograd.grad calls, then by vmap(grad(...)) over a
# functional_call of the module, the two checked against each other, and both timed with
# torch.utils.benchmark's Timer. Timings differ from run to run, so what is printed of
# them is what does not: the kind of result, its runs and the statement it timed.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap
from torch.utils.benchmark import Timer

torch.manual_seed(0)


class SimpleCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)
        self.fc1 = nn.Linear(72, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def loss_fn(predictions, targets):
    return F.nll_loss(predictions, targets)


device = "cpu"
batch_size = 8
data = torch.randn(batch_size, 1, 10, 10, device=device)
targets = torch.randint(10, (batch_size,), device=device)

model = SimpleCNN().to(device=device)
predictions = model(data)
loss = loss_fn(predictions, targets)
loss.backward()
print("mini-batch loss", loss.item())


# One sample at a time: a forward and a backward per sample.
def compute_grad(sample, target):
    prediction = model(sample.unsqueeze(0))
    return torch.autograd.grad(loss_fn(prediction, target.unsqueeze(0)),
                               list(model.parameters()))


def compute_sample_grads(data, targets):
    per_sample = [compute_grad(data[i], targets[i]) for i in range(batch_size)]
    return [torch.stack(shards) for shards in zip(*per_sample)]


per_sample_grads = compute_sample_grads(data, targets)
print(per_sample_grads[0].shape)

# The same with function transforms: the loss of one sample as a function of the
# parameters, its gradient (grad), mapped over the batch (vmap).
params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}


def compute_loss(params, buffers, sample, target):
    predictions = functional_call(model, (params, buffers), (sample.unsqueeze(0),))
    return loss_fn(predictions, target.unsqueeze(0))


ft_compute_grad = grad(compute_loss)
ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
ft_per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)

for (name, ft_grad), loop_grad in zip(ft_per_sample_grads.items(), per_sample_grads):
    close = torch.allclose(loop_grad, ft_grad, atol=3e-3, rtol=1e-5)
    print(name, tuple(ft_grad.shape), close)
    assert close
print("fc2.bias of sample 0", ft_per_sample_grads["fc2.bias"][0])


# The tutorial's performance comparison, with Timer.timeit.
def get_perf(first, first_descriptor, second, second_descriptor):
    gain = abs((first.times[0] - second.times[0]) / first.times[0]) * 100
    return gain


without_vmap = Timer(stmt="compute_sample_grads(data, targets)", globals=globals())
with_vmap = Timer(stmt="ft_compute_sample_grad(params, buffers, data, targets)",
                  globals=globals())
no_vmap_timing = without_vmap.timeit(3)
with_vmap_timing = with_vmap.timeit(3)
for timing in (no_vmap_timing, with_vmap_timing):
    print(type(timing).__name__, timing.title, timing.number_per_run, len(timing.times),
          timing.median > 0)
print("gain is a percentage:", get_perf(with_vmap_timing, "vmap", no_vmap_timing,
                                        "no vmap") >= 0)
