"""One spelling per idea in the solvers' parameters: a tolerance is ``tol`` or ``<what>_tol``,
an iteration cap ``max_iter`` or ``max_<what>_iter``, the starting point without a warm start
``cold_start`` (``SolverParams.renamed_fields``).

The renamed fields' old names are still accepted for one release, with a
``DeprecationWarning`` that names the new one and points at the code that gave them (also
through ``solvers.train``); the model keeps the new names only; the command line takes the
old options and says so.  The service's side is in tests/service/test_api_jobs.py.
"""

from __future__ import annotations

import re

import pydantic
import pytest
from shared_data import load

import solvers
from app.cli import build_parser
from app.cli.solver_options import solver_params
from solvers.base import SolverParams

#: every rename, with a value the new field takes
RENAMED = [
    ("mfn", "max_cgls_iterations", "max_cgls_iter", 300),
    ("mfn", "initial_cgls_iterations", "initial_cgls_iter", 5),
    ("mfn", "dual_kkt_tolerance", "dual_kkt_tol", 1e-3),
    ("interior_point", "mu_tolerance", "mu_tol", 1e-9),
    ("interior_point", "residual_tolerance", "residual_tol", 1e-9),
    ("cutting_plane", "qp_tolerance_ratio", "qp_tol_ratio", 0.5),
    ("interior_point", "start", "cold_start", "ooqp"),
    ("alm", "initial_w", "cold_start", "one"),
]

_TOLERANCE = re.compile(r"(^|_)tol(_|$)")
_CAP = re.compile(r"^max_(\w+_)?iter$")


def test_every_rename_is_declared_and_listed_here():
    declared = sorted((spec.name, old, new) for spec in solvers.list_solvers()
                      if not spec.portfolio
                      for old, new in spec.params_model.renamed_fields.items())
    assert declared == sorted((solver, old, new) for solver, old, new, _ in RENAMED)


def test_no_field_spells_a_tolerance_or_an_iteration_cap_otherwise():
    """The shared spelling holds for every field of every solver (``<what>_tolerance``,
    ``max_<what>_iterations`` and ``<what>_max_iter`` would be the same ideas spelled
    again)."""
    for spec in solvers.list_solvers():
        for name in spec.params_model.model_fields:
            assert "tolerance" not in name or _TOLERANCE.search(name), (spec.name, name)
            assert not re.search(r"max_\w*iterations|max_iters?$", name) or _CAP.match(name), \
                (spec.name, name)


@pytest.mark.parametrize("solver, old, new, value", RENAMED)
def test_an_old_name_is_accepted_with_a_warning_naming_the_new_one(solver, old, new, value):
    model = solvers.get_solver(solver).params_model
    others = {"tol": None} if new == "dual_kkt_tol" else {}
    with pytest.warns(DeprecationWarning, match=f"'{old}' is deprecated .*: use '{new}'") \
            as warned:
        params = model(**{old: value}, **others)
    assert warned[0].filename == __file__  # the line that gave it
    assert params == model(**{new: value}, **others)
    assert new in params.model_dump() and old not in params.model_dump()
    with pytest.warns(DeprecationWarning), \
            pytest.raises(pydantic.ValidationError, match=f"give '{new}' alone"):
        model(**{old: value, new: value}, **others)


def test_train_takes_an_old_name_and_reports_it_at_the_callers_line():
    data = load("heart_scale")
    with pytest.warns(DeprecationWarning, match="'max_cgls_iterations' is deprecated") \
            as warned:
        old = solvers.train(data, solver="mfn", max_cgls_iterations=2, linear_solver="cgls")
    assert warned[0].filename == __file__
    new = solvers.train(data, solver="mfn", max_cgls_iter=2, linear_solver="cgls")
    assert old.params == new.params and old.objective == new.objective
    assert [r.objective for r in old.log] == [r.objective for r in new.log]


def test_a_subclass_validator_sees_the_new_name():
    """mfn's own before-validator (dual_kkt_tol alone replaces the gap rule) runs before the
    base model's: given the old name, the gap rule is replaced all the same."""
    with pytest.warns(DeprecationWarning, match="dual_kkt_tolerance"):
        params = solvers.get_solver("mfn").params_model(dual_kkt_tolerance=1e-3)
    assert params.tol is None and params.dual_kkt_tol == 1e-3


def test_the_base_model_renames_nothing():
    assert SolverParams.renamed_fields == {}


@pytest.mark.parametrize("solver, old, new, value", RENAMED)
def test_the_command_line_takes_an_old_option_and_says_so(solver, old, new, value, capsys):
    spec = solvers.get_solver(solver)
    others = ["--tol", "none"] if new == "dual_kkt_tol" else []
    args = build_parser(spec).parse_args(
        ["train", "FILE", "--solver", solver, "--" + old.replace("_", "-"), str(value),
         *others])
    assert capsys.readouterr().err == (
        f"svmsvc: --{old.replace('_', '-')} is deprecated and will be removed in the next "
        f"release: use --{new.replace('_', '-')}\n")
    assert getattr(solver_params(spec, args), new) == value
    with pytest.raises(SystemExit):
        build_parser(spec).parse_args(["train", "--solver", solver, "--help"])
    assert "--" + old.replace("_", "-") not in capsys.readouterr().out
