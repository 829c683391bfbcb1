"""The problems every solver solves, defined once, for solvers, tests and benchmarks alike.

* :class:`BinaryProblem` -- ``docs/design.md``'s linear binary problem for every loss and bias mode:
  objective, gradient, Hessian-vector product, duality gap (free bias included), risk and
  subgradient, the dual QP;
* :class:`OrdinalProblem` -- Keerthi & DeCoste's ordinal regression (section 7);
* :class:`RegressionProblem` -- linear support vector regression (Ho & Lin; LIBLINEAR -s 11-13);
* :class:`CrammerSingerProblem` -- the multi-class problem of Crammer & Singer (LIBLINEAR -s 4);
* :class:`KernelProblem` -- the kernel forms of the least-squares family's problems (and
  C-SVC's), :class:`KernelSolution` one of them solved.
"""

from solvers.problems.binary import BIAS_MODES, BinaryProblem, DualQP, balancing_shift, loss_value
from solvers.problems.crammer_singer import CrammerSingerProblem
from solvers.problems.kernel import KernelProblem, KernelSolution
from solvers.problems.ordinal import OrdinalProblem
from solvers.problems.regression import RegressionProblem, RegressionTerms

__all__ = [
    "BIAS_MODES",
    "BinaryProblem",
    "CrammerSingerProblem",
    "DualQP",
    "KernelProblem",
    "KernelSolution",
    "OrdinalProblem",
    "RegressionProblem",
    "RegressionTerms",
    "balancing_shift",
    "loss_value",
]
