"""Job execution: the worker pool and its dispatcher, the worker processes, the monitor that
writes convergence logs, and the job state transitions they all share.

Nothing here imports Numba at module level: a spawned worker sets its thread count before
the solver library is imported.
"""
