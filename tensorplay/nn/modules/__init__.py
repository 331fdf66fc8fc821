"""Every layer of `tp.nn`, one module per topic (as in torch/nn/modules/)."""
from tensorplay.nn.modules.activation import *  # noqa: F401,F403
from tensorplay.nn.modules.attention import *  # noqa: F401,F403
from tensorplay.nn.modules.container import *  # noqa: F401,F403
from tensorplay.nn.modules.conv import *  # noqa: F401,F403
from tensorplay.nn.modules.distance import *  # noqa: F401,F403
from tensorplay.nn.modules.dropout import *  # noqa: F401,F403
from tensorplay.nn.modules.flatten import *  # noqa: F401,F403
from tensorplay.nn.modules.fold import *  # noqa: F401,F403
from tensorplay.nn.modules.linear import *  # noqa: F401,F403
from tensorplay.nn.modules.loss import *  # noqa: F401,F403
# (not *: module.py's __all__ also names the global hooks, which torch.nn does not have)
from tensorplay.nn.modules.module import IncompatibleKeys, Module  # noqa: F401
from tensorplay.nn.modules.normalization import *  # noqa: F401,F403
from tensorplay.nn.modules.padding import *  # noqa: F401,F403
from tensorplay.nn.modules.pixelshuffle import *  # noqa: F401,F403
from tensorplay.nn.modules.pooling import *  # noqa: F401,F403
from tensorplay.nn.modules.rnn import *  # noqa: F401,F403
from tensorplay.nn.modules.sparse import *  # noqa: F401,F403
from tensorplay.nn.modules.transformer import *  # noqa: F401,F403
from tensorplay.nn.modules.upsampling import *  # noqa: F401,F403
