"""The parameters of ``cutting_plane`` (the package docstring maps them to the papers)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from solvers.base import SolverParams, Solves, gap_tolerance_field

Method = Literal["cpa", "ocas", "gca2", "tca"]

#: What cutting_plane solves: the hinge loss, binary (one-vs-rest for more classes) and the
#: Crammer-Singer problem natively, with a regularized bias or none.
CUTTING_PLANE_SOLVES = Solves.product(
    ("binary", "ovr", "ovo", "crammer_singer"), ("hinge",), ("regularized", "none")
).refusing("with an unregularized bias the first reduced problems are unbounded; use "
           "'regularized' (a constant feature, as libocas and SVMperf) or 'none'", bias="free")


class CuttingPlaneParams(SolverParams):
    """Parameters of ``cutting_plane``: Joachims' CPA, Franc & Sonnenburg's OCAS, Arnosti's
    GCA2 and TCA on the hinge loss (binary; Crammer-Singer natively or one-vs-rest)."""

    solves: ClassVar[Solves] = CUTTING_PLANE_SOLVES
    renamed_fields: ClassVar[dict[str, str]] = {"qp_tolerance_ratio": "qp_tol_ratio"}

    solver: Literal["cutting_plane"] = "cutting_plane"
    loss: CUTTING_PLANE_SOLVES.choices("loss") = Field(
        "hinge", description="The hinge loss (L1-SVM) only.")
    bias: CUTTING_PLANE_SOLVES.choices("bias") = CUTTING_PLANE_SOLVES.bias_field(
        "regularized", "regularized: a constant feature of value bias_scale (libocas' X0, "
                       "SVMperf's bias feature); none: no bias.")
    multiclass: CUTTING_PLANE_SOLVES.choices("multiclass") = CUTTING_PLANE_SOLVES.multiclass_field(
        crammer_singer="the Crammer-Singer problem natively (libocas' msvmocas, LIBLINEAR -s 4)")
    method: Method = Field(
        "ocas",
        description="How the best-so-far point moves along [w_best, w_t]: cpa (Joachims: no "
                    "best point, the cut at w_t), ocas (exact line search, the cut at "
                    "0.9 w_best + 0.1 w_t), gca2 (Arnosti's grid search, Alg. 2), tca "
                    "(Arnosti's three-point search, Alg. 3).")
    tol: float = gap_tolerance_field(
        description="Stop when F(w_best) - F_t(w_t) <= tol |F(w_best)|: the relative gap to "
                    "the cutting-plane lower bound, a certified duality gap -- every solver's "
                    "rule and default (libocas' TolRel; its and Arnosti's default is 0.01, "
                    "this family's own was 1e-3 until 2026-11-26).")
    max_iter: int = Field(
        10_000, ge=1,
        description="Iterations: one reduced QP solve and the passes over the data that add "
                    "one cut.")
    cut_buffer: int = Field(2000, ge=2, description="Most cuts kept (libocas' BufSize).")
    max_inactive: int = Field(
        50, ge=1,
        description="A cut whose dual weight stayed 0 this many consecutive QP solves is "
                    "removed (SVMperf's rule).")
    qp_solver: Literal["active_set", "smo"] = Field(
        "active_set",
        description="The reduced QP's solver: active_set (up to 2 SMO steps per cut, then a "
                    "warm-started primal active-set method, finished by the SMO when it gives "
                    "up; our choice) or smo (the pairwise SMO over the simplex alone, libocas' "
                    "libqp_splx).")
    qp_tol_ratio: float = Field(
        0.2, gt=0, le=1,
        description="The reduced QP is solved to a relative gap of this times the current "
                    "outer relative gap (never below this times tol; libocas: half of tol "
                    "from the first iteration).  0.2 (0.5 until 2026-11-23): a QP solved "
                    "loosely early gives a worse w_t and more iterations (mushrooms, C = "
                    "0.01: 148 iterations to tol 1e-6 at 0.5, 105 at 0.2, 90 solved exactly); "
                    "tighter than 0.2 the QP time grows on dna (Crammer-Singer) without "
                    "fewer iterations (bench/history/notebook.md).")
    cut_point: float = Field(
        0.1, ge=0, le=1,
        description="ocas/gca2/tca: the new cut is taken at (1 - c) w_best + c w_t, c this "
                    "(libocas' MU = 0.1; 0 cuts at w_best).")
    grid_beta: float = Field(0.2, gt=0, le=0.5,
                             description="gca2: the coarse step beta (steps beta, beta^2, "
                                         "beta^3); Arnosti's 0.2.")
    grid_t1: float | None = Field(None, gt=0,
                                  description="gca2: only the finest pass below this "
                                              "uncertainty (default beta^2).")
    grid_t2: float | None = Field(None, gt=0,
                                  description="gca2: the coarse pass from this uncertainty up "
                                              "(default beta).")
    tca_gamma: float = Field(0.02, gt=0, lt=1,
                             description="tca: stop when high - low <= gamma; Arnosti's 0.02.")
    uncertainty_shrink: float = Field(0.5, gt=0, lt=1,
                                      description="gca2/tca: factor on the uncertainty when mu "
                                                  "moved by at most h(u) = u/2.")
    uncertainty_grow: float = Field(2.0, gt=1,
                                    description="gca2/tca: factor on the uncertainty "
                                                "otherwise.")
    force_mu_iterations: int = Field(
        0, ge=0,
        description="Arnosti section V's fix of the mu = 0 trap: mu = forced_mu in the first "
                    "this many iterations (he used 5).")
    force_mu_when_zero: bool = Field(
        False, description="Arnosti section V: mu = forced_mu whenever the search returns 0.")
    forced_mu: float = Field(0.02, gt=0, le=1, description="The mu the two fixes force.")
    kernel_form: Literal["timed", "serial"] = Field(
        "timed",
        description="The risk oracle's and the Crammer-Singer line search's form: timed "
                    "(serial or parallel, whichever measured faster under the machine's "
                    "load: the forms sum in different orders, so the point returned depends "
                    "on the load) or serial (a run reproducible bit for bit; auto races the "
                    "cutting planes this way, solvers.auto.Candidate.fixed).")

    @model_validator(mode="after")
    def _grid_thresholds(self):
        t1 = self.grid_beta ** 2 if self.grid_t1 is None else self.grid_t1
        t2 = self.grid_beta if self.grid_t2 is None else self.grid_t2
        if not t1 < t2:
            raise ValueError("gca2 needs grid_t1 < grid_t2")
        return self
