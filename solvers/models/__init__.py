"""Trained models: linear (binary and one-vs-rest), linear regression and the kinds later
solvers add.

Every kind implements :class:`Model` and registers itself, so :func:`load_model`, the CLI and
the service handle all of them without special cases.
"""

from solvers.models.base import (
    FORMAT_VERSION,
    Model,
    ModelFormatError,
    as_feature_matrix,
    load_model,
    register_model_kind,
)
from solvers.models.kernel import (  # noqa: F401
    KernelModel,
    KernelRegressionModel,
    OneClassKernelModel,
)
from solvers.models.linear import LinearModel
from solvers.models.onnx_export import ModelExportError
from solvers.models.ordinal import OrdinalModel  # noqa: F401
from solvers.models.regression import RegressionModel

__all__ = [
    "FORMAT_VERSION",
    "LinearModel",
    "Model",
    "ModelExportError",
    "ModelFormatError",
    "RegressionModel",
    "as_feature_matrix",
    "load_model",
    "register_model_kind",
]
