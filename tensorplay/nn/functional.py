"""`tp.nn.functional` (import as `F`): the functional forms of neural-network ops.

Most are the ops of ops.yaml themselves (`F.relu is tp.relu`); the rest are thin
Python functions that pick an op and its arguments (`F.conv2d` calls the single
`convolution` op, as PyTorch does). They live in two modules by topic.
"""
from tensorplay.nn._functional_spatial import *  # noqa: F401,F403
from tensorplay.nn._functional_layers import *  # noqa: F401,F403
from tensorplay.nn._functional_activations import *  # noqa: F401,F403
