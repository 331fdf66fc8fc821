"""The pieces of tp.utils.benchmark, in torch.utils.benchmark.utils's modules."""
