"""`tp.nn.functional` (import as `F`): the functional forms of neural-network ops.

Most are the ops of ops.yaml themselves (`F.relu(x)` calls `tp.relu`); the rest are thin
Python functions that pick an op and its arguments (`F.conv2d` calls the single
`convolution` op, as PyTorch does) or compose a few ops where there is no op
(`F.softshrink`, `F.triplet_margin_loss`). They live in modules by topic:

    _functional_<family>.py   one module per op family (tensorplay/codegen/families.py):
                              activations, softmax, normalization, dropout, losses, conv,
                              pooling, padding, resample, fold, embedding, distance,
                              attention, linalg (bilinear)
"""
from tensorplay.nn._functional_activations import *  # noqa: F401,F403
from tensorplay.nn._functional_attention import *  # noqa: F401,F403
from tensorplay.nn._functional_conv import *  # noqa: F401,F403
from tensorplay.nn._functional_distance import *  # noqa: F401,F403
from tensorplay.nn._functional_dropout import *  # noqa: F401,F403
from tensorplay.nn._functional_embedding import *  # noqa: F401,F403
from tensorplay.nn._functional_fold import *  # noqa: F401,F403
from tensorplay.nn._functional_linalg import *  # noqa: F401,F403
from tensorplay.nn._functional_losses import *  # noqa: F401,F403
from tensorplay.nn._functional_normalization import *  # noqa: F401,F403
from tensorplay.nn._functional_padding import *  # noqa: F401,F403
from tensorplay.nn._functional_pooling import *  # noqa: F401,F403
from tensorplay.nn._functional_resample import *  # noqa: F401,F403
from tensorplay.nn._functional_softmax import *  # noqa: F401,F403
from tensorplay.nn import grad  # noqa: F401,E402  (F.grad is torch.nn.grad, as in PyTorch)
