"""Data: the SVMlight reader and writer, and the dataset type."""

from solvers.data.dataset import Dataset, DatasetStats, as_csr, label_key
from solvers.data.svmlight import (
    SVMLightFormatError,
    SVMLightLimitError,
    SVMLightStreamParser,
    read_svmlight,
    write_svmlight,
)
from solvers.data.warmup import warm_up_parser

__all__ = [
    "Dataset",
    "DatasetStats",
    "SVMLightFormatError",
    "SVMLightLimitError",
    "SVMLightStreamParser",
    "as_csr",
    "label_key",
    "read_svmlight",
    "warm_up_parser",
    "write_svmlight",
]
