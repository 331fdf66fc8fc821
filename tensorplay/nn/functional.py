"""`tp.nn.functional` (import as `F`): the functional forms of neural-network ops.

Most are the ops of ops.yaml themselves (`F.relu(x)` calls `tp.relu`); the rest are thin
Python functions that pick an op and its arguments (`F.conv2d` calls the single
`convolution` op, as PyTorch does) or compose a few ops where there is no op
(`F.softshrink`, `F.triplet_margin_loss`). They live in modules by topic:

    _functional_spatial.py            convolutions (+ pooling, resampling)
    _functional_layers.py             softmax, norms, dropout, embedding (+ losses)
    _functional_activations.py        activations that are ops
    _functional_pointwise.py          relu/tanh/sigmoid, the shrinks, rrelu, linear, normalize
    _functional_dropout.py            channel-wise and alpha dropout
    _functional_composite_losses.py   margin, hinge, Poisson/Gaussian NLL, triplet losses
    _functional_compositions.py       local_response_norm, pdist, lp_pool, max_unpool, ...
"""
from tensorplay.nn._functional_spatial import *  # noqa: F401,F403
from tensorplay.nn._functional_layers import *  # noqa: F401,F403
from tensorplay.nn._functional_activations import *  # noqa: F401,F403
from tensorplay.nn._functional_pointwise import *  # noqa: F401,F403
from tensorplay.nn._functional_dropout import *  # noqa: F401,F403
from tensorplay.nn._functional_composite_losses import *  # noqa: F401,F403
from tensorplay.nn._functional_compositions import *  # noqa: F401,F403
# PyTorch's full signature of embedding (max_norm, norm_type) replaces the op-only form
# that _functional_layers.py exports.
from tensorplay.nn._functional_compositions import embedding  # noqa: F401,E402
