"""Every tunable of the library in one place.

Solver defaults that a user may change live in each solver's parameter model (the registry);
what is here are implementation thresholds that a user should never need to touch.
"""

# A row-subset product switches to the parallel Numba kernel once it touches at least this
# many stored entries; below it the cost of waking the thread pool outweighs the gain.  With
# the bounded spin of solvers/__init__.py, 50,000 beat 200,000 (the threshold for a passive
# wait alone) by ~20% over default mfn on a9a, w8a, ijcnn1 and mushrooms, C = 0.01, 1, 100
# (bench/history/measurements.json, config-parallel-min-nnz).
PARALLEL_MIN_NNZ = 50_000

# A kernel timed by solvers.core.sparse.TimedChoice tries its parallel form only once its
# serial form takes this long: a parallel call that loses costs milliseconds on a loaded machine,
# as much as a whole cutting-plane solve of mushrooms (bench/history/measurements.json,
# config-timed-choice).
TIMED_CHOICE_MIN_SECONDS = 0.002

# The cutting planes' reduced QP (solvers/cutting_plane/qp.py): the active-set method factorizes
# the free cuts' block once per solve, O(s^3), and then updates the factor, O(s^2) per
# iteration; past this many free variables the pairwise SMO alone is used (at 300 the
# factorization is ~9M multiply-adds, a few ms).  1000 and 2000 changed nothing measurable
# (bench/history/measurements.json, config-active-set-max-free).
CUTTING_PLANE_ACTIVE_SET_MAX_FREE = 300
# ... and each solve first takes up to this many SMO steps per cut (cheaper from a close warm
# start).  2 was best on dna (Crammer-Singer, tol 1e-4, load 18: QP 2.3-2.6 s against 2.5-3.0
# with 1, 2.7-2.9 with 5, 3.2-3.8 with 0); on a9a at C = 100 (replayed solves) 0 was best,
# 0.72-0.85 s against 0.95 s, both far below the SMO alone (5.7 s).
CUTTING_PLANE_SMO_STEPS_BEFORE_ACTIVE_SET = 2

# X'z in parallel keeps one accumulator of length n_features per thread; past this ratio of
# (threads * n_features) to the stored entries touched, the serial kernel is cheaper.
PARALLEL_MAX_BUFFER_RATIO = 0.5

# The CGLS kernel's loops over the features (the sum of the per-thread X'z buffers and the
# direction update) run in parallel from this many features on; below it they cost less than
# two parallel regions per iteration.  With the bounded spin of solvers/__init__.py a region
# costs about a microsecond: on news20's 62,062 features (4,000 active rows, 2 threads) a
# CGLS iteration took 0.58 ms with these loops serial and 0.42 ms in parallel (the same from
# 1,024 to 16,384 as the threshold).
CGLS_PARALLEL_MIN_FEATURES = 4096

# -- mfn's factorized step 3 (linear_solver="cholesky" / "auto", solvers/mfn.py) -------------

# linear_solver="auto" factorizes the normal equations when the problem has at most this many
# parameters and both the Cholesky factorization (n^3 / 3) and a Gram matrix of all rows
# (sum of L(L+1)/2) cost at most this many passes over the stored entries (a CGLS iteration
# costs two).
MFN_AUTO_CHOLESKY_MAX_PARAMS = 2048
MFN_AUTO_CHOLESKY_PASSES = 40

# linear_solver="cholesky" refuses problems with more parameters (dense n^2 memory per thread).
MFN_CHOLESKY_MAX_PARAMS = 8192

# -- alm's exact (w, b)-step (solvers/alm) -----------------------------------------------------

# w_solver="auto" solves (14) by a Cholesky factor of X~'X~ + D / mu (formed once: mu is fixed
# by default) under the same cost rule as mfn's "auto" above: at most this many parameters,
# and the factorization and the Gram matrix each at most this many passes over the stored
# entries (one exact step by the factor costs two passes; by CGLS two per CG iteration).
ALM_AUTO_CHOLESKY_MAX_PARAMS = 2048
ALM_AUTO_CHOLESKY_PASSES = 40

# w_solver="cholesky" refuses problems with more parameters (a dense n^2 matrix).
ALM_CHOLESKY_MAX_PARAMS = 8192

# preconditioning="auto": alpha of M = lambda I + alpha diag(X_I'X_I).  LIBLINEAR's trust-region
# Newton mixes its diagonal preconditioner with the identity in the same proportion (Hsia,
# Chiang & Lin, ACML 2018).  It pays wherever the active rows outnumber the parameters (CG
# iterations to eps = 1e-2 at the first Newton step: a9a 70 -> 25 at C = 1, w8a 180 -> 39 at
# C = 100, the synthetic problem 174 -> 32 on 150,000 rows), and on fewer rows than parameters
# when the rows have equal norms (synthetic on 37,500 rows 87 -> 28; news20 with unit-norm rows
# 26 -> 20).  On fewer rows than parameters of unequal norms it costs: news20 as counts (the
# coefficient of variation of ||x~_i||^2 is 11.7) 904 -> 2065 at C = 1, as binary words (1.3)
# 235 -> 400 at C = 10.  So "auto" leaves it off there, with this bound on that coefficient.
MFN_AUTO_PRECONDITIONING = 0.01
MFN_PRECONDITION_MAX_CV = 0.5

# linear_solver="auto" without a factorization: step 3 runs CG in the active rows' space (row-
# Jacobi preconditioned, solvers.core.linalg.cg_dual_compact) when the active rows are fewer
# than the parameters and lambda is at most this times the median c_i ||x~_i||^2 of the active
# rows.  Measured on news20 made binary (raw counts; CG iterations per Newton step, either form
# throughout): at C = 1 (lambda = 0.5, about 0.011 of the active rows' median 46-48) the row
# space needs fewer iterations at nearly every step after heuristic 1's, at the C path's stage
# C = 0.1 (lambda = 5, 0.07-0.1 of the median) about as many, at C = 0.01 (lambda = 50, about
# 0.8 of it) more at every step (767 against 586 in all).  bench/history/notebook.md (section MFN).
MFN_ROW_SPACE_MAX_LAMBDA = 0.03
# ... and only in rounds of Appendix A whose eps is at most this (heuristic 2's second round, not
# its first or the C path's stages at eps = 1e-2).  In the loose rounds a row-space solve stops
# at a point shaped by its start u^0 = z^0 / lambda, far from beta in the directions of large
# curvature when lambda is small: a first version that took the row space in every round
# reached news20 at C = 1 in 21 Newton iterations (25 with CGLS) but spent 123 at C = 100 and
# ended one run on itermax.
MFN_ROW_SPACE_MAX_EPSILON = 1e-4

#: mfn with a gap ``tol``: the eps of rule (13) in the last round is at most this (and at
#: most a tenth of the gap tolerance).  1e-4 was the fastest on news20's 5-fold C path (above
#: 1e-4 step 3 leaves the row space for CGLS; bench/history/measurements.json,
#: config-mfn-gap-round-epsilon).
MFN_GAP_ROUND_EPSILON = 1e-4

# -- kernels and the least-squares SVM family (solvers/core/kernels.py, solvers/lssvm.py) ----

# Default memory of the kernel-row cache, MiB (LIBSVM's default is 100, scikit-learn's 200).
KERNEL_CACHE_MB = 256.0

# Kernel rows are computed in parallel once a batch costs at least this many multiply-adds
# (rows x stored entries of the other matrix); below it waking the thread pool costs more.
KERNEL_PARALLEL_MIN_WORK = 2_000_000

# A kernel model's decision values (predict(..., parallel=True)) use the parallel kernel only
# from this many kernel entries on (rows x support vectors x (1 + decision functions)): below
# it, waking the thread pool for each call costs more than it saves.  Measured 2026-12-07 (2
# cores, load 17, OpenMP layer, medians of 3; smo's RBF model of a9a's first 6,000 rows, 2,367
# SVs, predicting a9a.t's first rows): 1 row 0.19 ms serial vs 9.7 ms parallel, 100 rows
# (0.47M entries) 2.6 vs 33 ms, 1,000 rows (4.7M) 178 vs 150 ms, 16,000 rows 3.16 vs 2.31 s.
KERNEL_DECISION_PARALLEL_MIN_ENTRIES = 2_000_000

# Blocks per thread when a kernel walks rows in parallel (more blocks balance uneven rows).
KERNEL_BLOCKS_PER_THREAD = 4

# A kernel row runs over a dense copy of the other matrix's columns (one contiguous,
# vectorized loop per feature instead of a scatter of the stored entries) when at least this
# fraction of its entries is stored and it has at most this many entries (8 bytes each).
# Measured 2026-11-26 (loaded VM, Numba loop timings): a linear kernel row of svmguide1 (4
# features, all stored) 42 -> 13 us, an RBF row of ijcnn1 (4,000 rows, 13 of 22 stored)
# 263 -> 133 us; the values are bitwise the scatter's (solvers/core/kernels.py).  Measured
# 2026-12-07 (load 20, CPU time of 3 x 300 rows): an RBF row of the whole a9a (32,561 rows,
# 11% of 123 stored) 0.30-0.31 -> 0.18-0.21 ms, so the threshold went from 0.25 to 0.1.
KERNEL_DENSE_MIN_DENSITY = 0.1
KERNEL_DENSE_MAX_ENTRIES = 2**23

# Several kernel rows over a dense column copy are computed this many columns at a time
# (solvers/core/kernels.py, _rows_block): the chunk of the copy (features x columns x 8 bytes,
# a9a: 123 x 1024 x 8 = 1 MB) stays in cache while every row of the block reads it.
KERNEL_BLOCK_COLUMNS = 1024

# smo's working sets of many variables (solvers/smo/blocks.py, ThunderSVM's scheme): the
# set's size (at most the kernel cache's rows), the subproblem's budget of two-variable
# updates per variable of the set, and the training rows from which working_set="auto" uses it
# for C-SVC.
SMO_BLOCK_SIZE = 512
SMO_BLOCK_INNER_ITERATIONS = 10
SMO_BLOCK_MIN_ROWS = 10_000

# The subproblem over a working set is solved until its own m - M is at most this fraction of
# its value at the start (or the KKT tolerance).  ThunderSVM and oneDAL take 0.1; here an
# inner update costs about 1/30 of a kernel row (a9a, C = 10: 5.7 us against 0.15 ms CPU), so
# solving the set further pays in rows.  Measured 2026-12-07 (a9a, RBF, stop_rule="kkt",
# kkt_tol=1e-3, 256 MB cache, load 9-14): C = 10 191,896 -> 169,795 rows computed (887 -> 769
# steps), CPU 52.1 -> 46.9 s; C = 1 32,802 -> 31,481 rows, CPU 9.7 -> 10.1 s (same steps);
# 0.0 (the KKT tolerance itself) computed 178,853 rows at C = 10.
SMO_BLOCK_INNER_FACTOR = 0.01

# smo's polishing (solvers/smo/polish.py): after a KKT stage the free variables' KKT system is
# solved by a dense factorization of their kernel block when its working set has at most
# SMO_POLISH_MAX_FREE variables (up to three matrices of that order squared at once: 0.6 GB at
# 5,000; a9a at C = 10 has 4,723 free at m - M = 1e-2); each working set is solved at most
# SMO_POLISH_SOLVES times (variables that leave the box clamped, the rest solved again), a polish
# takes at most SMO_POLISH_SET_ROUNDS working sets (the violating bounded variables joining the
# next), and a problem is polished after at most SMO_POLISH_ROUNDS KKT stages, the first at
# m - M <= SMO_POLISH_KKT (or the rule's own tolerance when that is looser).  1e-1 in place of
# 1e-2 measured slower on a9a C = 1 (25,134 SMO iterations but 27 solves, 3 fallbacks; CPU 6.6 s
# against 5.6 s, 2026-12-08, load 10).
SMO_POLISH_MAX_FREE = 5000
SMO_POLISH_SOLVES = 4
SMO_POLISH_SET_ROUNDS = 4
SMO_POLISH_ROUNDS = 3
SMO_POLISH_KKT = 1e-2
# polish="auto" polishes under LIBSVM's rule (stop_rule="kkt") from this many variables: below
# it the tail from m - M = 1e-2 to 1e-3 is short and a polish costs as much (dna's pairs:
# 0.073-0.087 CPU s polished against 0.054-0.058, 2026-12-08, load 11); under the gap rule
# always.
SMO_POLISH_KKT_MIN_ROWS = 10_000

# method="auto" of lssvm / proximal_svm with a nonlinear kernel: a dense factorization up to
# this many training rows (memory 2 n^2 doubles), conjugate gradients through the row cache
# beyond.  The proximal SVM's matrix K K costs n^3 to form, hence the lower threshold.
LSSVM_DIRECT_MAX_ROWS = 3000
PROXIMAL_DIRECT_MAX_ROWS = 2000

# -- the interior-point method (solvers/interior_point) ---------------------------------------

# The dense (n_features + 1)^2 matrices of linear_solver="direct" (M) and of the SVM
# preconditioner P_A are refused past this many parameters (8192: 512 MiB a matrix, and the
# Gram build keeps one more per extra thread); "auto" and "direct" raise there, "pcg" runs
# with the diagonal-only preconditioner (measured too slow to use: news20, 274 s to 1e-3).
INTERIOR_POINT_MAX_DENSE_PARAMS = 8192

# PCG with the diagonal-only preconditioner has no fall-back: each solve stops at section
# 5.3's tolerance or after this many iterations.
INTERIOR_POINT_DIAGONAL_PCG_MAX_ITER = 1000

# linear_solver="auto" (solvers/interior_point/auto.py): the cost model's constants.  PCG
# iterations per MPC iteration measured 6.4-21.4 (13.4 on a9a, 15.0 on w8a: the paper's
# 12.3-35.6), |A| 20-60% of the rows on a9a; a Gram entry and a product entry weighted alike.
# With these "auto" chose the faster solver on all ten problems of bench/history/notebook.md
# (Interior point: a9a, w8a, mushrooms, dna, letter, dense synthetic rows with 50-400
# features; 2026-11-23).
INTERIOR_POINT_AUTO_PCG_ITERATIONS = 15.0
INTERIOR_POINT_AUTO_ACTIVE_FRACTION = 0.2
INTERIOR_POINT_AUTO_GRAM_WEIGHT = 1.0

# -- distributed data (solvers.distributed) --------------------------------------------------
#: Seconds a round over the partitions may take before the solve fails with the reason (a
#: worker that died or hangs never makes a job wait for ever).
DISTRIBUTED_ROUND_TIMEOUT = 600.0
#: Seconds a worker that a round waits on may go without a heartbeat reaching the scheduler
#: before the round fails as lost (a hung process: stopped, swapping, deadlocked), long
#: before DISTRIBUTED_ROUND_TIMEOUT and Dask's own worker-ttl (5 minutes).  A worker busy in
#: a long kernel still heartbeats (from its event loop, while the kernel releases the GIL or
#: between Python steps); a kernel that holds the GIL longer than this is taken for a hang.
DISTRIBUTED_HEARTBEAT_TIMEOUT = 120.0
#: Seconds between the heartbeat checks of a round that has not finished (and between the
#: checks of a read that waits on paused workers).
DISTRIBUTED_HEARTBEAT_POLL = 5.0
#: Seconds a worker may stay paused by Dask's memory manager (80% of its memory limit) while
#: partitions wait to be read on it before the read fails with the reason: the partitions it
#: holds keep their memory, so it would not resume.
DISTRIBUTED_PAUSED_TIMEOUT = 60.0
#: Restarts of a distributed solve after a lost worker (solvers.train on a DistributedDataset:
#: the lost partitions are read again from their shards onto the workers left and the solve
#: resumes from its last good iterate); 0 fails at the first loss.  A dataset's own
#: ``restarts`` (read_svmlight's argument) overrides it.
DISTRIBUTED_RESTARTS = 2
#: Seconds a partition has to answer the probe after a failed round (an answer: its worker
#: lives and it is kept; none: it is read again elsewhere).
DISTRIBUTED_PROBE_TIMEOUT = 30.0
#: Seconds a recovery waits for a worker to join when none is left (a nanny restarting one,
#: an autoscaler) before the solve fails saying no worker is left.
DISTRIBUTED_WORKER_WAIT = 30.0
#: Points each partition sends at least per round of the distributed exact line search
#: (solvers.distributed.problem.breakpoint_root; more when its breakpoints are many): more
#: points, a narrower bracket, more scalars (5 doubles each).
DISTRIBUTED_PIVOTS = 64
#: Breakpoints (over all partitions) that a line search's bracket may hold for the driver to
#: gather them and finish with the single machine's sweep (3 doubles each; a partition sends
#: its own when it holds at most this / the partitions).  65536 (4096 until 2026-11-27): at
#: most 1.5 MB a round at the driver, less than a round's fixed cost buys on a 10 Gb/s link
#: (3 ms: 3.75 MB); OCAS on a9a (16 k rows a partition) then gathers at every iteration, 2
#: rounds instead of 3 (2 x 1 workers, load 3.9: 4.23 s against 5.04 s, w8a 2.80 s against
#: 3.08 s; 0.4 MB against 17.5 kB moved an iteration).
DISTRIBUTED_GATHER_BREAKPOINTS = 65536
#: The exact line searches' window (issue 51): the first round brings back only the
#: breakpoints in [0, window] (and a few points above it); breakpoints above the root never
#: change it, so when the summed slope is >= 0 at the window's end the driver finishes with
#: those (no further round), otherwise one selection round or more follow from the bracket
#: (window, inf).  mfn: the trial point is at 1 and Appendix A's step overshoots it a little
#: (measured, 2 partitions: a9a 1.00-1.23, ijcnn1 1.00-1.40, w8a 1.00-1.71; at 1 the window
#: missed at every Newton iteration but the last, a round each); OCAS: mu's window starts at
#: this and follows the last mu found (twice it).  None: the whole ray (every breakpoint up
#: to DISTRIBUTED_GATHER_BREAKPOINTS, as before 2026-12-07).
DISTRIBUTED_NEWTON_WINDOW: float | None = 2.0
DISTRIBUTED_OCAS_WINDOW: float | None = 1.0
#: Distributed mfn: a partition copies its active rows into compacted arrays for CGLS when
#: they hold at most this fraction of its stored entries; above it, CGLS passes over all its
#: rows with the inactive ones weighted zero (no copy: more work per pass, and the rows a
#: worker holds may then take its memory nearly whole; bench distributed_memory sets 0).
#: 1.0: always compact (the single machine's engine does), as far as the memory rule below
#: allows.  Read on the driver, sent with the round.
DISTRIBUTED_COMPACT_MAX_FRACTION = 1.0
#: Distributed mfn, the memory rule: on a Dask worker with a memory limit, a partition copies
#: its active rows only while the worker's resident size plus the copy stays within this
#: fraction of the limit (Dask pauses a worker at 0.8 of it and its nanny restarts it at
#: 0.95); otherwise CGLS passes over all its rows as above.  None: no memory rule.  Measured:
#: a 5 GB set on 4 workers at 2 GB failed at 1.0 without the rule (every worker restarted by
#: its nanny) and trains with it (docs/distributed.md).
DISTRIBUTED_COMPACT_MEMORY_FRACTION: float | None = 0.7

# newton runs its loop compiled whole (solvers/newton/compiled.py) on problems with fewer stored
# entries than this: those whose products the Python driver runs serially anyway
# (PARALLEL_MIN_NNZ), so the compiled loop does the same arithmetic without the dispatch around
# each product (issue 47: heart's Newton iteration was ~200 us of dispatch at load 12-15).
NEWTON_COMPILED_MAX_NNZ = PARALLEL_MIN_NNZ

# dual_cd's support vector regression runs its descent and gap checks as one Numba loop
# (solvers/dual_cd/compiled.py) on problems with fewer stored entries than this, as newton's loop
# above: the serial regime, where a check's Python dispatch costs more than a pass.
DUAL_CD_COMPILED_MAX_NNZ = PARALLEL_MIN_NNZ

# The low-rank step's rank when the user gives none (solvers/core/lowrank.py, choose_nystrom_rank;
# SolverParams.rank = None): Nystrom's landmarks doubled from CHOSEN_RANK_START until the
# relative residual trace trace(K - G G') / trace(K) falls to rank_tol, at most CHOSEN_RANK_MAX
# (and n); the incomplete Cholesky pivots to the same bound.  The residual is estimated on
# RANK_SEARCH_SAMPLE_ROWS uniform rows (every row below that: exact); a step costs an m x m
# eigendecomposition and a sample x m x m product (0.4 s at m = 1024 on one core).  Measured
# (2026-12-08, RBF at gamma 'scale', C = 1, dual_cd hinge on the factor, bench lowrank and
# docs/design.md 3.8): at 1024 landmarks the held-out accuracy was within 1 point of exact smo on
# a9a, ijcnn1, w8a, mushrooms and dna (news20 made binary 3.4 points behind at any rank tried);
# doubling to 2048 gained 0.0-0.4 point where measured (svmguide1, mushrooms, letter one-vs-rest)
# for about 4x the map's work (the n x m x m product); a9a's rank 2048 took 102 s against exact
# smo's 43 s in the 2026-12-07 record at load 8-12.
CHOSEN_RANK_START = 64
CHOSEN_RANK_MAX = 1024
RANK_SEARCH_SAMPLE_ROWS = 4096
