"""The options of a solver, generated from its parameter model.

Every field of a solver's parameter model becomes an option whose value is parsed as the
field's annotation says: a union tries its members in order (numbers, then literal choices,
then ``none`` for an optional field), booleans take true/false, a constraint such as
``Field(ge=0)`` (on the field or inside an ``Annotated`` member) is shown in the help.  The
parsed value goes to the parameter model unchanged, so pydantic gives the verdict on ranges
and on how fields combine.
"""

from __future__ import annotations

import argparse
import enum
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.cli.common import CLIError, parse_number

_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")
_SIGNS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}


@dataclass(frozen=True)
class _Spelling:
    """One way to write a value of a field: a parser (ValueError when the text is not this
    kind of value), its name in the usage line and in the help."""

    parse: Callable[[str], Any]
    metavar: str
    describe: str
    rank: int  # position in a union: numbers, then booleans, literal choices, text, none


def _bounds(constraints) -> dict[str, Any]:
    """{'gt': 0, 'lt': 1} ... from annotated-types constraints (FieldInfo objects included)."""
    found = {}
    for constraint in constraints:
        found.update(_bounds(getattr(constraint, "metadata", None) or []))
        found.update({name: getattr(constraint, name) for name in _SIGNS
                      if getattr(constraint, name, None) is not None})
    return found


def _number(kind: type, constraints) -> _Spelling:
    noun = "an integer" if kind is int else "a number"
    bounds = _bounds(constraints)
    low = next((key for key in ("gt", "ge") if key in bounds), None)
    high = next((key for key in ("lt", "le") if key in bounds), None)
    if low and high:
        noun += (f" in {'(' if low == 'gt' else '['}{bounds[low]}, "
                 f"{bounds[high]}{')' if high == 'lt' else ']'}")
    elif low or high:
        noun += f" {_SIGNS[low or high]} {bounds[low or high]}"
    return _Spelling(kind, "INT" if kind is int else "NUMBER", noun, 0)


def _spelled(value) -> str:
    """A value as the command line writes it."""
    if value is None:
        return "none"
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _choices(values) -> list[_Spelling]:
    def exactly(text: str, value):
        def parse(given: str):
            if given != text:
                raise ValueError(given)
            return value

        return parse

    return [_Spelling(exactly(_spelled(v), v), _spelled(v), _spelled(v), 2) for v in values]


def _parse_bool(text: str) -> bool:
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise ValueError(text)


def _parse_none(text: str) -> None:
    if text.lower() != "none":
        raise ValueError(text)


def _spellings(annotation, constraints=()) -> list[_Spelling]:
    """The ways to write a value of ``annotation``, in the order a union tries them."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        base, *extra = typing.get_args(annotation)
        return _spellings(base, [*constraints, *extra])
    if origin in (typing.Union, types.UnionType):
        members = [s for a in typing.get_args(annotation) for s in _spellings(a, constraints)]
        return sorted(members, key=lambda s: s.rank)
    if origin is typing.Literal:
        return _choices(typing.get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _choices(list(annotation))
    if annotation is bool:
        return [_Spelling(_parse_bool, "true|false", "true or false", 1)]
    if annotation in (int, float):
        return [_number(annotation, constraints)]
    if annotation is str:
        return [_Spelling(str, "TEXT", "any text", 3)]
    if annotation is type(None):
        return [_Spelling(_parse_none, "none", "none", 4)]
    raise TypeError(f"no command-line form for parameters of type {annotation!r}")


def _enumerate(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def _option(field) -> tuple[Callable[[str], Any], str, str]:
    """(parser, metavar, allowed values in words) for a pydantic field."""
    spellings = _spellings(field.annotation, field.metadata)
    allowed = _enumerate([s.describe for s in spellings])

    def parse(text: str):
        for spelling in spellings:
            try:
                return spelling.parse(text)
            except ValueError:
                continue
        raise argparse.ArgumentTypeError(f"expected {allowed}, got {text!r}")

    return parse, "|".join(s.metavar for s in spellings), allowed


def add_solver_options(parser: argparse.ArgumentParser, spec, exclude=()) -> None:
    group = parser.add_argument_group(f"parameters of solver {spec.name!r}")
    if "class_weight" in spec.params_model.model_fields:
        group.add_argument("-w", dest="class_weight_items", action="append",
                           metavar="LABEL=WEIGHT", default=None,
                           help="multiply C for the examples of LABEL by WEIGHT (LIBLINEAR's "
                                "-wi; repeat for several labels; 2^k accepted; a negative "
                                "label attached: -w-1=0.5)")
        group.add_argument("--class-weight", dest="class_weight_mode", choices=("balanced",),
                           default=None,
                           help="balanced: weight each class by n / (k n_c)")
    for name, field in spec.params_model.model_fields.items():
        if name in ("solver", "class_weight") or name in exclude:
            continue
        parse, metavar, allowed = _option(field)
        description = (field.description or "").strip()
        help_text = f"{description} Allowed: {allowed}. (default: {_spelled(field.default)})"
        group.add_argument("--" + name.replace("_", "-"), dest=f"param_{name}", type=parse,
                           metavar=metavar, default=argparse.SUPPRESS,
                           help=help_text.strip().replace("%", "%%"))  # argparse %-formats help
    for old, new in spec.params_model.renamed_fields.items():
        if new not in exclude:  # a renamed field's old option: accepted, said so, not listed
            parse, metavar, _ = _option(spec.params_model.model_fields[new])
            group.add_argument("--" + old.replace("_", "-"), dest=f"param_{new}", type=parse,
                               metavar=metavar, default=argparse.SUPPRESS,
                               action=_RenamedOption, new="--" + new.replace("_", "-"),
                               help=argparse.SUPPRESS)


class _RenamedOption(argparse.Action):
    """The option of a renamed solver parameter (``SolverParams.renamed_fields``): sets the
    new one and says on stderr that the old spelling goes away in the next release."""

    def __init__(self, *args, new: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.new = new

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"svmsvc: {option_string} is deprecated and will be removed in the next "
              f"release: use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def params_from_args(spec, args) -> dict:
    """The parameters given on the command line (an option not given is absent: an optional
    field given as ``none`` is None, not its default)."""
    given = vars(args)
    params = {name: given[f"param_{name}"] for name in spec.params_model.model_fields
              if f"param_{name}" in given}
    items, mode = given.get("class_weight_items"), given.get("class_weight_mode")
    if items and mode:
        raise CLIError("give -w LABEL=WEIGHT or --class-weight balanced, not both")
    if mode:
        params["class_weight"] = mode
    elif items:
        weights = {}
        for item in items:
            label, sep, weight = item.partition("=")
            if not sep or not label.strip():
                raise CLIError(f"-w {item!r}: write LABEL=WEIGHT, e.g. -w 1=10")
            weights[label.strip()] = parse_number(weight)
        params["class_weight"] = weights
    return params


def solver_params(spec, args):
    """The solver's validated parameter object for the parsed command line."""
    from solvers.train import validate_params

    return validate_params(spec.name, params_from_args(spec, args))[1]
