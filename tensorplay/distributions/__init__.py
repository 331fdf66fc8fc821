"""`tp.distributions`: probability distributions, as torch.distributions has them.

Each family is a class in its own module (normal.py, categorical.py, ...) built on the
`Distribution` base (distribution.py), with `constraints` for parameters and supports,
`transforms` for distributions made by pushing another through an invertible map
(LogNormal = exp(Normal)), and `kl_divergence` for pairs of them. Everything is written
with TensorPlay's tensor ops, so `log_prob` and `rsample` are differentiable through
TensorPlay's autograd.

    d = tp.distributions.Normal(loc, scale)
    x = d.rsample((100,))            # gradients flow back to loc and scale
    loss = -d.log_prob(x).mean()
"""
from tensorplay.distributions import constraints, transforms  # noqa: F401
from tensorplay.distributions.bernoulli import Bernoulli
from tensorplay.distributions.beta import Beta
from tensorplay.distributions.binomial import Binomial
from tensorplay.distributions.categorical import Categorical
from tensorplay.distributions.cauchy import Cauchy
from tensorplay.distributions.chi2 import Chi2
from tensorplay.distributions.constraint_registry import biject_to, transform_to
from tensorplay.distributions.continuous_bernoulli import ContinuousBernoulli
from tensorplay.distributions.dirichlet import Dirichlet
from tensorplay.distributions.distribution import Distribution
from tensorplay.distributions.exp_family import ExponentialFamily
from tensorplay.distributions.exponential import Exponential
from tensorplay.distributions.fishersnedecor import FisherSnedecor
from tensorplay.distributions.gamma import Gamma
from tensorplay.distributions.generalized_pareto import GeneralizedPareto
from tensorplay.distributions.geometric import Geometric
from tensorplay.distributions.gumbel import Gumbel
from tensorplay.distributions.half_cauchy import HalfCauchy
from tensorplay.distributions.half_normal import HalfNormal
from tensorplay.distributions.independent import Independent
from tensorplay.distributions.inverse_gamma import InverseGamma
from tensorplay.distributions.kl import kl_divergence, register_kl
from tensorplay.distributions.kumaraswamy import Kumaraswamy
from tensorplay.distributions.laplace import Laplace
from tensorplay.distributions.lkj_cholesky import LKJCholesky
from tensorplay.distributions.log_normal import LogNormal
from tensorplay.distributions.logistic_normal import LogisticNormal
from tensorplay.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from tensorplay.distributions.mixture_same_family import MixtureSameFamily
from tensorplay.distributions.multinomial import Multinomial
from tensorplay.distributions.multivariate_normal import MultivariateNormal
from tensorplay.distributions.negative_binomial import NegativeBinomial
from tensorplay.distributions.normal import Normal
from tensorplay.distributions.one_hot_categorical import (
    OneHotCategorical, OneHotCategoricalStraightThrough)
from tensorplay.distributions.pareto import Pareto
from tensorplay.distributions.poisson import Poisson
from tensorplay.distributions.relaxed_bernoulli import RelaxedBernoulli
from tensorplay.distributions.relaxed_categorical import RelaxedOneHotCategorical
from tensorplay.distributions.studentT import StudentT
from tensorplay.distributions.transformed_distribution import TransformedDistribution
from tensorplay.distributions.transforms import (  # noqa: F401
    AbsTransform, AffineTransform, ComposeTransform, ExpTransform, IndependentTransform,
    LowerCholeskyTransform, PowerTransform, SigmoidTransform, SoftmaxTransform,
    SoftplusTransform, StickBreakingTransform, TanhTransform, Transform,
    CatTransform, CorrCholeskyTransform, CumulativeDistributionTransform,
    PositiveDefiniteTransform, ReshapeTransform, StackTransform, identity_transform,
)
from tensorplay.distributions.uniform import Uniform
from tensorplay.distributions.von_mises import VonMises
from tensorplay.distributions.weibull import Weibull
from tensorplay.distributions.wishart import Wishart

__all__ = [
    "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "Dirichlet", "Distribution",
    "Exponential",
    "ExponentialFamily", "Gamma", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent",
    "InverseGamma", "LogisticNormal", "NegativeBinomial",
    "Laplace", "RelaxedBernoulli",
    "LogNormal", "MixtureSameFamily", "Multinomial", "MultivariateNormal", "Normal",
    "OneHotCategorical", "Pareto",
    "Poisson", "StudentT", "TransformedDistribution", "Uniform", "Weibull", "kl_divergence", "register_kl",
    "AbsTransform", "AffineTransform", "ComposeTransform", "ExpTransform", "IndependentTransform",
    "LowerCholeskyTransform", "PowerTransform", "SigmoidTransform", "SoftmaxTransform",
    "SoftplusTransform", "StickBreakingTransform", "TanhTransform", "Transform",
    "constraints", "transforms", "biject_to", "transform_to",
    "ContinuousBernoulli", "FisherSnedecor", "GeneralizedPareto", "Kumaraswamy", "LKJCholesky",
    "LowRankMultivariateNormal", "OneHotCategoricalStraightThrough", "RelaxedOneHotCategorical",
    "VonMises", "Wishart",
    "CatTransform", "CorrCholeskyTransform", "CumulativeDistributionTransform",
    "PositiveDefiniteTransform", "ReshapeTransform", "StackTransform", "identity_transform",
]
