"""Data that no single machine holds: partitions persisted on Dask workers, and the row
operator of a binary problem over them (``docs/design.md`` section 3.9).

* :func:`read_svmlight` parses SVMlight shards on the workers with the library's own parser
  and returns a :class:`DistributedDataset`; :func:`split_svmlight` cuts one file into
  shards at line boundaries.
* :class:`DistributedBinaryProblem` poses a binary problem on every partition; its
  evaluations are rounds over the partitions that move d-vectors and scalars only
  (:mod:`solvers.distributed.cluster` counts them: the communication record).

The families run on it through their own engines (``cutting_plane`` with methods ``ocas``
and ``cpa``, ``mfn`` for the squared hinge and modified Huber losses); ``solvers.train``
accepts a :class:`DistributedDataset` for the solvers whose spec declares it
(``SolverSpec.distributed``).  Dask is imported by this package only, and only when a
client is given to it: the library does not need Dask otherwise.
"""

from solvers.distributed.cluster import (
    Communication,
    CommunicationMonitor,
    Partition,
    PartitionGroup,
    PartitionLostError,
    WorkerMemoryError,
    reduce_sum,
)
from solvers.distributed.dataset import DistributedDataset, read_svmlight, split_svmlight
from solvers.distributed.problem import (
    DistributedBinaryProblem,
    RemoteVector,
    breakpoint_root,
    keep_breakpoints,
)

__all__ = [
    "Communication",
    "CommunicationMonitor",
    "DistributedBinaryProblem",
    "DistributedDataset",
    "Partition",
    "PartitionGroup",
    "PartitionLostError",
    "RemoteVector",
    "WorkerMemoryError",
    "breakpoint_root",
    "keep_breakpoints",
    "read_svmlight",
    "reduce_sum",
    "split_svmlight",
]
