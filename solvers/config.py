"""Every tunable of the library in one place.

Solver defaults that a user may change live in each solver's parameter model (the registry);
what is here are implementation thresholds that a user should never need to touch.
"""

# A row-subset product switches to the parallel Numba kernel once it touches at least this
# many stored entries; below it the cost of waking the thread pool outweighs the gain.
PARALLEL_MIN_NNZ = 200_000

# X'z in parallel keeps one accumulator of length n_features per thread; past this ratio of
# (threads * n_features) to the stored entries touched, the serial kernel is cheaper.
PARALLEL_MAX_BUFFER_RATIO = 0.5

# Rows per block when a kernel walks the matrix in parallel (a block is one unit of work).
PARALLEL_BLOCK_ROWS = 2048
