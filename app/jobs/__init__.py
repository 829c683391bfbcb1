"""Job execution: the dispatcher (``dispatcher``) and the executors it feeds (``executors``:
the local process pool, or a Dask cluster), the checks of a new job (``admission``), the
worker processes, the monitor that writes convergence logs, and the job state transitions
they all share.

Nothing here imports Numba at module level: a spawned worker sets its thread count before
the solver library is imported.
"""
