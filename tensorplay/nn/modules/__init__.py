"""Every layer of `tp.nn`, one module per topic (as in torch/nn/modules/)."""
from tensorplay.nn.modules.module import *  # noqa: F401,F403
from tensorplay.nn.modules.container import *  # noqa: F401,F403
from tensorplay.nn.modules.linear import *  # noqa: F401,F403
from tensorplay.nn.modules.flatten import *  # noqa: F401,F403
from tensorplay.nn.modules.conv import *  # noqa: F401,F403
from tensorplay.nn.modules.pooling import *  # noqa: F401,F403
from tensorplay.nn.modules.upsampling import *  # noqa: F401,F403
from tensorplay.nn.modules.normalization import *  # noqa: F401,F403
from tensorplay.nn.modules.dropout import *  # noqa: F401,F403
from tensorplay.nn.modules.sparse import *  # noqa: F401,F403
from tensorplay.nn.modules.activation import *  # noqa: F401,F403
from tensorplay.nn.modules.loss import *  # noqa: F401,F403
from tensorplay.nn.modules.rnn import *  # noqa: F401,F403
from tensorplay.nn.modules.attention import *  # noqa: F401,F403
from tensorplay.nn.modules.transformer import *  # noqa: F401,F403
