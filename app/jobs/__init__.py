"""Job execution: the dispatcher (``pool``) and the executor it feeds (``executor``: the
local process pool today), the checks of a new job (``admission``), the worker processes, the
monitor that writes convergence logs, and the job state transitions they all share.

Nothing here imports Numba at module level: a spawned worker sets its thread count before
the solver library is imported.
"""
