"""The shared Numba core: sparse products, iterative linear algebra, exact line searches."""

from solvers.core.kernels import (
    Kernel,
    KernelCache,
    kernel_decision,
    kernel_diagonal,
    kernel_matrix,
)
from solvers.core.linalg import (
    CGResult,
    TrackedOperator,
    cgls,
    cgls_compact,
    conjugate_gradient,
    monitored_conjugate_gradient,
)
from solvers.core.linesearch import piecewise_linear_root
from solvers.core.lowrank import Factor, FeatureMap, incomplete_cholesky, nystrom
from solvers.core.sparse import (
    CompactRows,
    TimedChoice,
    csr_matmat,
    csr_matvec,
    csr_matvec_rows,
    csr_rmatvec,
    csr_rmatvec_rows,
    use_parallel,
)
from solvers.core.warmup import warm_up

__all__ = [
    "CGResult",
    "CompactRows",
    "Factor",
    "FeatureMap",
    "Kernel",
    "KernelCache",
    "TimedChoice",
    "TrackedOperator",
    "cgls",
    "cgls_compact",
    "conjugate_gradient",
    "csr_matmat",
    "csr_matvec",
    "csr_matvec_rows",
    "csr_rmatvec",
    "csr_rmatvec_rows",
    "incomplete_cholesky",
    "kernel_decision",
    "kernel_diagonal",
    "kernel_matrix",
    "monitored_conjugate_gradient",
    "nystrom",
    "piecewise_linear_root",
    "use_parallel",
    "warm_up",
]
