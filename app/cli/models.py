"""What is done with a model file: ``svmsvc predict`` (labels, probabilities and the scores of
a test file, LIBLINEAR's argument order accepted) and ``svmsvc export`` (LIBLINEAR's or
LIBSVM's text format, or ONNX)."""

from __future__ import annotations

import sys
from pathlib import Path

from app.cli.common import CLIError, add_data_options, existing_file, read_dataset


def add_predict_command(commands) -> None:
    predict = commands.add_parser(
        "predict", help="predict an SVMlight file with a model: TEST MODEL [OUTPUT], as "
                        "LIBLINEAR's predict (MODEL TEST also works)")
    predict.add_argument("first", metavar="TEST")
    predict.add_argument("second", metavar="MODEL")
    predict.add_argument("rest", nargs="*", metavar="OUTPUT")
    predict.add_argument("-b", type=int, choices=(0, 1), default=0,
                         help="1: write probabilities (LIBSVM's format: a 'labels ...' "
                              "header, then the label and one probability per class); the "
                              "model must have been trained with --probability true or be "
                              "a logistic model (-s 0, -s 7), whose probabilities are its "
                              "own")
    predict.add_argument("--output", help="write one predicted label per line here")
    predict.add_argument("--metrics", action="store_true",
                         help="after LIBLINEAR's line, print balanced accuracy, macro F1 and, "
                              "where they apply, ROC AUC and average precision")
    add_data_options(predict, widen=False)
    predict.set_defaults(handler=cmd_predict)


def add_export_command(commands) -> None:
    export = commands.add_parser("export", help="write a model in LIBLINEAR's format (a C-SVC "
                                                  "kernel model from smo: LIBSVM's), or as ONNX")
    export.add_argument("model")
    export.add_argument("--format", choices=("text", "onnx"), default="text",
                        help="text: LIBLINEAR's or LIBSVM's model file (default); onnx: an ONNX "
                             "graph of standard float64 operators (any model kind)")
    export.add_argument("--output", help="file to write (default: stdout)")
    export.set_defaults(handler=cmd_export)


def cmd_predict(args) -> int:
    """Label a test file with a model, write the labels (or LIBSVM's probability lines) when
    asked, and print the scores."""
    import solvers

    model_path, test_path = _model_and_test_paths(args)
    model = solvers.load_model(model_path)
    ds = read_dataset(test_path, zero_based=args.zero_based)
    decision, proba = model.scores_and_probabilities(ds.X, parallel=True)
    predictions = model.labels_from_scores(decision)
    _write_predictions(args, model, predictions, proba)
    print(liblinear_summary(model, ds.labels, predictions))
    if args.metrics:
        _print_metrics(model, ds)
    return 0


def _model_and_test_paths(args) -> tuple[str, str]:
    """(model, test file) from the command line, in LIBLINEAR's order TEST MODEL [OUTPUT] or
    this command's own MODEL TEST (the model is the file that reads as one); an OUTPUT
    word becomes ``args.output``."""
    first, second = existing_file(args.first), existing_file(args.second)
    if len(args.rest) > 1:
        raise CLIError("predict takes TEST MODEL [OUTPUT] (or MODEL TEST)")
    if args.rest:
        if args.output:
            raise CLIError("give the output file once (OUTPUT or --output)")
        args.output = args.rest[0]
    # LIBLINEAR's order is TEST MODEL OUTPUT; this command's own was MODEL TEST
    if _is_model_file(second):
        return second, first
    if _is_model_file(first):
        return first, second
    raise CLIError(f"{second}: not a model file (neither an svmsvc model nor a LIBLINEAR "
                   f"model file); usage: svmsvc predict TEST MODEL [OUTPUT]")


def _write_predictions(args, model, predictions, proba) -> None:
    """One label a line to the output file; with -b 1, LIBSVM's probability output (a
    header of labels, then each label and its probabilities), which needs a model trained
    with probabilities."""
    from solvers.data.dataset import label_key

    if args.b == 1:  # LIBSVM's -b 1 output: a header of labels, then label and probabilities
        if proba is None:
            raise CLIError("-b 1 needs a model with probabilities: trained with "
                           "--probability true, or a logistic model (-s 0, -s 7, --loss "
                           "logistic: its own)")
        lines = ["labels " + " ".join(label_key(c) for c in model.classes_) + "\n"]
        lines += [f"{label_key(p)} " + " ".join(f"{v:g}" for v in row) + "\n"
                  for p, row in zip(predictions, proba, strict=True)]
        if args.output:
            Path(args.output).write_text("".join(lines))
    elif args.output and model.task == "regression":  # real values, every digit
        Path(args.output).write_text("".join(f"{float(p)!r}\n" for p in predictions))
    elif args.output:
        Path(args.output).write_text("".join(f"{label_key(p)}\n" for p in predictions))


def liblinear_summary(model, truth, predictions) -> str:
    """What LIBLINEAR's and LIBSVM's ``predict`` print after labelling a test file (their
    Python bindings' ``predict``, line for line): the accuracy of a classifier,
    ``Accuracy = 84.9456% (13830/16281) (classification)``; for a regression model the mean
    squared error and the squared correlation coefficient, each marked ``(regression)``."""
    import numpy as np

    total = int(np.shape(truth)[0])
    if model.task == "regression":
        from solvers.evaluate import regression_scores

        scores = regression_scores(truth, predictions)
        mse, scc = scores["mean_squared_error"], scores["squared_correlation"]
        return (f"Mean squared error = {float('nan') if mse is None else mse:g} (regression)\n"
                f"Squared correlation coefficient = {float('nan') if scc is None else scc:g} "
                f"(regression)")
    correct = int(np.sum(np.asarray(predictions) == np.asarray(truth)))
    accuracy = 100.0 * correct / total if total else 0.0
    return f"Accuracy = {accuracy:g}% ({correct}/{total}) (classification)"


def _print_metrics(model, ds) -> None:
    """``--metrics``: balanced accuracy, macro F1 and, where they apply, ROC AUC and average
    precision."""
    from solvers.evaluate import evaluate

    if model.task == "regression":
        report = evaluate(model, ds, parallel=True)
        print(f"mean absolute error: {report['mean_absolute_error']:.6g}")
        if report["r2"] is not None:
            print(f"R^2: {report['r2']:.6f}")
        return
    if model.task == "one_class":  # solvers.evaluate.one_class_scores
        report = evaluate(model, ds, parallel=True)
        print(f"outlier fraction: {100.0 * report['outlier_fraction']:.4f}%")
        if report["roc_auc"] is not None:
            print(f"ROC AUC (label {report['inlier_label']} as inliers): "
                  f"{report['roc_auc']:.6f}")
        return
    report = evaluate(model, ds, parallel=True)
    print(f"balanced accuracy: {100.0 * report['balanced_accuracy']:.4f}%")
    print(f"macro F1: {report['f1_macro']:.6f}")
    if report["roc_auc"] is not None:
        print(f"ROC AUC: {report['roc_auc']:.6f}")
    if report["average_precision"] is not None:
        print(f"average precision: {report['average_precision']:.6f}")


def cmd_export(args) -> int:
    """Write the model in LIBSVM's format (a kernel model) or LIBLINEAR's, or as ONNX."""
    import solvers

    model = solvers.load_model(existing_file(args.model))
    if args.format == "onnx":
        return _export_onnx(model, args.output)
    if hasattr(model, "to_libsvm"):  # a kernel model: LIBSVM's format (C-SVC, from smo)
        try:
            text = model.to_libsvm()
        except ValueError as exc:
            raise CLIError(str(exc)) from None
    elif hasattr(model, "to_liblinear"):
        text = model.to_liblinear()
    else:
        raise CLIError(f"a {model.kind} model has no LIBLINEAR form")
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def _export_onnx(model, output: str | None) -> int:
    """The model as ONNX bytes (``Model.to_onnx``), to ``output`` or to standard output."""
    import solvers

    try:
        data = model.to_onnx()
    except solvers.ModelExportError as exc:
        raise CLIError(str(exc)) from None
    except ImportError as exc:
        raise CLIError(f"ONNX export needs the onnx package (pip install 'svmsvc[onnx]'): "
                       f"{exc}") from None
    if output:
        Path(output).write_bytes(data)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return 0


def _is_model_file(path: str) -> bool:
    with open(path, "rb") as f:
        head = f.read(12)
    return head.startswith(b"PK") or head.startswith(b"solver_type ")
