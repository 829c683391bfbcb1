"""What there is: ``svmsvc info`` (an SVMlight file's statistics) and ``svmsvc solvers``
(the solvers and what they solve)."""

from __future__ import annotations

import json

from app.cli.common import add_data_options, read_dataset


def add_info_command(commands) -> None:
    info = commands.add_parser("info", help="statistics of an SVMlight file")
    info.add_argument("file")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    add_data_options(info)
    info.set_defaults(handler=cmd_info)


def add_solvers_command(commands) -> None:
    listing = commands.add_parser("solvers", help="list the solvers and their parameters")
    listing.set_defaults(handler=cmd_solvers)


def cmd_info(args) -> int:
    """The file's statistics, one per line or as one JSON object."""
    ds = read_dataset(args.file, args.n_features, args.zero_based)
    stats = ds.stats().as_dict()
    stats["file"] = args.file
    if ds.qid is not None:
        stats["n_queries"] = int(len(set(ds.qid.tolist())))
    if ds.sample_weight is not None:
        stats["weighted"] = True
    if args.json:
        print(json.dumps(stats))
    else:
        for key, value in stats.items():
            print(f"{key:>12}: {value}")
    return 0


def cmd_solvers(args) -> int:
    """Each solver: what it is, its losses, bias modes, tasks and warm-started C paths."""
    import solvers

    for spec in solvers.list_solvers():
        print(f"{spec.name}: {spec.description}")
        print(f"    losses: {', '.join(spec.losses)}; bias: {', '.join(spec.bias_modes)}; "
              f"tasks: {', '.join(spec.tasks)}; warm-started C paths: "
              f"{', '.join(spec.warm_start_tasks()) or 'none'}")
    return 0
