"""Tests of the SVMlight reader and writer (solvers/data/svmlight.py)."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import math
import pickle
import struct

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from naive_svmlight import NaiveError, naive_read
from shared_data import dataset_names, dataset_path

from solvers.data import Dataset
from solvers.data.svmlight import (
    SVMLightFormatError,
    SVMLightStreamParser,
    read_svmlight,
    write_svmlight,
)

DATA_FILES = dataset_names() + dataset_names("regression")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

COMPRESSORS = {"gzip": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}


def bits(values) -> list[bytes]:
    return [struct.pack("<d", value) for value in np.asarray(values, dtype=np.float64).tolist()]


def parse_in_chunks(content: bytes, chunk_size: int, **options) -> SVMLightStreamParser:
    parser = SVMLightStreamParser(**options)
    for start in range(0, len(content), chunk_size):
        parser.feed(content[start : start + chunk_size])
    return parser


def assert_same_dataset(actual: Dataset, expected: Dataset) -> None:
    assert actual == expected
    assert actual.X.indices.dtype == expected.X.indices.dtype
    assert bits(actual.X.data) == bits(expected.X.data)
    assert bits(actual.y) == bits(expected.y)


# =============================================================================================
# Real datasets
# =============================================================================================


@pytest.mark.parametrize("name", DATA_FILES)
def test_real_file_matches_scikit_learn(name):
    from sklearn.datasets import load_svmlight_file

    n_features = 123 if name == "a9a.t" else None  # a9a.t never uses its last column
    X, y = load_svmlight_file(str(dataset_path(name)), n_features=n_features, zero_based=False)
    ds = read_svmlight(dataset_path(name), n_features=n_features)

    assert ds.X.shape == X.shape
    assert (ds.X != X).nnz == 0
    # scikit-learn keeps explicit zeros as stored entries; so do we, hence identical structure
    assert np.array_equal(ds.X.indptr, X.indptr)
    assert np.array_equal(ds.X.indices, X.indices)
    assert bits(ds.X.data) == bits(X.data)
    assert bits(ds.y) == bits(y)
    assert ds.X.indices.dtype == np.int32
    assert ds.qid is None and ds.sample_weight is None


def test_explicit_zeros_are_stored_entries():
    ds = read_svmlight(dataset_path("ijcnn1.t"))
    assert np.count_nonzero(ds.X.data == 0.0) == 12  # as documented in the data README


@pytest.mark.parametrize("chunk_size", [7, 4093])
def test_real_file_in_small_chunks(chunk_size):
    name = "heart_scale" if chunk_size < 100 else "a9a"
    whole = read_svmlight(dataset_path(name))
    assert_same_dataset(read_svmlight(dataset_path(name), chunk_size=chunk_size), whole)


def test_real_file_fed_byte_by_byte():
    content = dataset_path("heart_scale").read_bytes()
    parser = parse_in_chunks(content, 1)
    assert_same_dataset(parser.finish(), read_svmlight(content))
    assert parser.lines_read == content.count(b"\n") == 270


def test_real_file_round_trip():
    ds = read_svmlight(dataset_path("dna.scale"))
    assert_same_dataset(read_svmlight(write_svmlight(ds)), ds)


# =============================================================================================
# Compressed input
# =============================================================================================


@pytest.fixture(scope="module")
def plain_content() -> bytes:
    if DATA_FILES:
        return dataset_path("dna.scale.t").read_bytes()
    rng = np.random.default_rng(0)
    return write_svmlight(
        Dataset(sp.random(500, 50, density=0.3, random_state=rng), rng.random(500))
    )


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_compressed_input_from_path_bytes_and_file(kind, plain_content, tmp_path):
    expected = read_svmlight(plain_content)
    compressed = COMPRESSORS[kind](plain_content)
    path = tmp_path / "data.txt"  # the name says nothing: the magic bytes decide
    path.write_bytes(compressed)

    assert_same_dataset(read_svmlight(path), expected)
    assert_same_dataset(read_svmlight(str(path)), expected)
    assert_same_dataset(read_svmlight(compressed), expected)
    assert_same_dataset(read_svmlight(io.BytesIO(compressed)), expected)
    with open(path, "rb") as stream:
        assert_same_dataset(read_svmlight(stream), expected)
    # small input chunks and small decompressed pieces
    assert_same_dataset(read_svmlight(compressed, chunk_size=1000), expected)
    assert_same_dataset(parse_in_chunks(compressed, 3).finish(), expected)
    explicit = parse_in_chunks(compressed, 4096, decompress=kind)
    assert_same_dataset(explicit.finish(), expected)


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_concatenated_compressed_streams(kind, plain_content):
    middle = plain_content.index(b"\n", len(plain_content) // 2) + 1
    compress = COMPRESSORS[kind]
    content = compress(plain_content[:middle]) + compress(plain_content[middle:])
    assert_same_dataset(read_svmlight(content, chunk_size=777), read_svmlight(plain_content))


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_truncated_compressed_input(kind, plain_content):
    compressed = COMPRESSORS[kind](plain_content)
    with pytest.raises(SVMLightFormatError, match=f"(truncated|corrupt) {kind}") as caught:
        read_svmlight(compressed[: len(compressed) // 2])
    assert caught.value.line is None


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_junk_after_compressed_stream(kind, plain_content):
    compressed = COMPRESSORS[kind](plain_content) + b"junk that is no compressed stream"
    with pytest.raises(SVMLightFormatError, match=f"corrupt {kind} data") as caught:
        read_svmlight(compressed)
    assert caught.value.line is None


def test_compressed_input_without_decompression_is_rejected(plain_content):
    with pytest.raises(SVMLightFormatError, match="line 1: "):
        parse_in_chunks(gzip.compress(plain_content), 1 << 20, decompress=None).finish()


def test_compressed_file_name_without_compression(tmp_path):
    path = tmp_path / "data.gz"
    path.write_bytes(b"1 1:1\n")
    assert read_svmlight(path).X.toarray().tolist() == [[1.0]]


# =============================================================================================
# Accepted input
# =============================================================================================


def test_full_format():
    content = (
        b"# a header comment\n"
        b"   \n"
        b"2 qid:7 cost:0.5 sid:3 1:1 3:-2.5e-1 # info: 1:2 qid:3\n"
        b"4\tsid:1\tqid:7\t2:.5\t4:5.\r\n"
        b"  -0 qid:-9223372036854775808 cost:1e0 10:1E+2#no space before the comment\n"
        b"+1.5e0 cost:0 qid:9223372036854775807\n"
    )
    parser = SVMLightStreamParser()
    parser.feed(content)
    ds = parser.finish()
    assert bits(ds.y) == bits([2.0, 4.0, -0.0, 1.5])
    assert ds.qid.dtype == np.int64
    assert ds.qid.tolist() == [7, 7, INT64_MIN, INT64_MAX]
    assert ds.sample_weight.tolist() == [0.5, 1.0, 1.0, 0.0]
    assert parser.sid.tolist() == [3, 1, 0, 0]
    assert ds.n_features == 10
    assert ds.X.toarray()[:, [0, 1, 2, 3, 9]].tolist() == [
        [1.0, 0.0, -0.25, 0.0, 0.0],
        [0.0, 0.5, 0.0, 5.0, 0.0],
        [0.0, 0.0, 0.0, 0.0, 100.0],
        [0.0, 0.0, 0.0, 0.0, 0.0],
    ]
    assert parser.lines_read == 6 and parser.rows_read == 4


def test_plain_file_has_no_side_information():
    parser = SVMLightStreamParser()
    parser.feed(b"1 1:1\n-1 2:1\n")
    ds = parser.finish()
    assert ds.qid is None and ds.sample_weight is None and parser.sid is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1e-3", 1e-3),
        ("1.5E+2", 150.0),
        ("+1", 1.0),
        (".5", 0.5),
        ("5.", 5.0),
        ("-0", -0.0),
        ("007", 7.0),
        ("1e400000000000000000000", None),
        ("1e-400", 0.0),
        ("-1e-400", -0.0),
        ("4.9e-324", 5e-324),
        ("1.7976931348623157e308", 1.7976931348623157e308),
        ("123456789012345678901234567890", 1.2345678901234568e29),
        ("0.30000000000000004", 0.30000000000000004),
        ("1" + "0" * 30, 1e30),
        ("0." + "0" * 400 + "1e400", 0.1),
    ],
)
def test_number_syntax(text, expected):
    content = f"{text} 1:{text}\n".encode()
    if expected is None:
        with pytest.raises(SVMLightFormatError, match="not a finite number"):
            read_svmlight(content)
        return
    ds = read_svmlight(content)
    assert bits(ds.y) == bits([expected]) == bits([float(text)])
    assert bits(ds.X.data) == bits([expected])


def test_line_endings_separators_and_comments():
    content = (
        b"1 1:1\r\n\t -1\t\t2:2  3:3 \r\n#c\r\n\r\n1 1:1 # trailing comment \xe9\xff\r\n1 4:4\r"
    )
    ds = read_svmlight(content)
    assert ds.y.tolist() == [1.0, -1.0, 1.0, 1.0]
    assert ds.X.toarray().tolist() == [
        [1, 0, 0, 0],
        [0, 2, 3, 0],
        [1, 0, 0, 0],
        [0, 0, 0, 4],
    ]


def test_labels_are_kept_as_given():
    ds = read_svmlight(b"2 1:1\n4 1:1\n0 1:1\n-7.25 1:1\n")
    assert ds.y.tolist() == [2.0, 4.0, 0.0, -7.25]


def test_line_without_features():
    ds = read_svmlight(b"1\n-1 2:1\n1 # only a comment after the label\n")
    assert ds.X.shape == (3, 2)
    assert ds.X.indptr.tolist() == [0, 0, 1, 1]


def test_explicit_zero_values_are_stored():
    ds = read_svmlight(b"1 1:0 2:0.0 3:-0 4:0e10\n")
    assert ds.nnz == 4
    assert bits(ds.X.data) == bits([0.0, 0.0, -0.0, 0.0])


def test_zero_based_indices():
    ds = read_svmlight(b"1 0:1 2:3\n", zero_based=True)
    assert ds.X.toarray().tolist() == [[1.0, 0.0, 3.0]]
    assert read_svmlight(b"1 1:1 3:3\n").X.toarray().tolist() == [[1.0, 0.0, 3.0]]


def test_n_features_widens_the_matrix():
    ds = read_svmlight(b"1 1:1 3:3\n", n_features=10)
    assert ds.X.shape == (1, 10)
    assert read_svmlight(b"1 1:1 3:3\n", n_features=3).X.shape == (1, 3)
    assert read_svmlight(b"1 0:1 2:3\n", n_features=3, zero_based=True).X.shape == (1, 3)


def test_very_large_indices_switch_to_int64():
    ds = read_svmlight(b"1 1:1 3000000000:2\n")
    assert ds.X.shape == (1, 3_000_000_000)
    assert ds.X.indices.dtype == np.int64
    assert ds.X.indices.tolist() == [0, 2_999_999_999]
    ds = read_svmlight(b"1 9223372036854775807:1\n")
    assert ds.n_features == INT64_MAX
    ds = read_svmlight(b"1 1:1\n", n_features=2**40)
    assert ds.X.indices.dtype == np.int64 and ds.n_features == 2**40


def test_many_numbers_outside_the_fast_path():
    rng = np.random.default_rng(1)
    values = rng.standard_normal(10_000).tolist()
    one_line = "1 " + " ".join(f"{i + 1}:{v!r}" for i, v in enumerate(values)) + "\n"
    assert bits(read_svmlight(one_line.encode()).X.data) == bits(values)
    many_lines = "".join(f"{v!r} 1:{v!r}\n" for v in values)
    ds = read_svmlight(many_lines.encode(), chunk_size=65536)
    assert bits(ds.y) == bits(values) and bits(ds.X.data) == bits(values)


def test_growth_from_small_to_large():
    rows = "".join(
        f"{i % 3} " + " ".join(f"{j}:{i}" for j in range(1, 40)) + "\n" for i in range(3000)
    )
    ds = read_svmlight(rows.encode(), chunk_size=1000)
    assert ds.X.shape == (3000, 39) and ds.nnz == 3000 * 39
    assert ds.X.data[-1] == 2999.0


# =============================================================================================
# Rejected input
# =============================================================================================

MALFORMED = [
    # (content, options, line, token, words in the description)
    (b"1 1:1\n2 5:abc\n", {}, 2, "5:abc", "invalid feature value"),
    (b"abc 1:1\n", {}, 1, "abc", "invalid label"),
    (b"1.2.3 1:1\n", {}, 1, "1.2.3", "invalid label"),
    (b"+-1 1:1\n", {}, 1, "+-1", "invalid label"),
    (b"1:2 3:4\n", {}, 1, "1:2", "invalid label"),
    (b"1 3:1 2:1\n", {}, 1, "2:1", "not in increasing order"),
    (b"1 3:1 3:2\n", {}, 1, "3:2", "duplicate feature index"),
    (b"1 0:1\n", {}, 1, "0:1", "index 0 in 1-based data"),
    (b"1 -1:1\n", {"zero_based": True}, 1, "-1:1", "negative feature index"),
    (b"1 99999999999999999999:1\n", {}, 1, "99999999999999999999:1", "64-bit"),
    (b"1 9223372036854775808:1\n", {}, 1, "9223372036854775808:1", "64-bit"),
    (b"1 9223372036854775807:1\n", {"zero_based": True}, 1, "9223372036854775807:1", "64-bit"),
    (b"1 5:1\n", {"n_features": 4}, 1, "5:1", "beyond n_features=4"),
    (b"1 3\n", {}, 1, "3", "feature without ':'"),
    (b"1 3:\n", {}, 1, "3:", "empty feature value"),
    (b"1 :3\n", {}, 1, ":3", "invalid feature index"),
    (b"1 x:3\n", {}, 1, "x:3", "invalid feature index"),
    (b"1 1.5:3\n", {}, 1, "1.5:3", "invalid feature index"),
    (b"1 1:1 2:2:2\n", {}, 1, "2:2:2", "invalid feature value"),
    (b"1 1:1_0\n", {}, 1, "1:1_0", "invalid feature value"),
    (b"1 1:0x10\n", {}, 1, "1:0x10", "invalid feature value"),
    (b"1 1:1e\n", {}, 1, "1:1e", "invalid feature value"),
    (b"1 3:nan\n", {}, 1, "3:nan", "feature value is not a finite number"),
    (b"1 1:-inf\n", {}, 1, "1:-inf", "feature value is not a finite number"),
    (b"1 1:1e400\n", {}, 1, "1:1e400", "feature value is not a finite number"),
    (b"NaN 1:1\n", {}, 1, "NaN", "label is not a finite number"),
    (b"-Infinity 1:1\n", {}, 1, "-Infinity", "label is not a finite number"),
    (b"2e308 1:1\n", {}, 1, "2e308", "label is not a finite number"),
    (b"1 cost:nan 1:1\n", {}, 1, "cost:nan", "cost is not a finite number"),
    (b"1 cost:1e999\n", {}, 1, "cost:1e999", "cost is not a finite number"),
    (b"1 cost:-2 1:1\n", {}, 1, "cost:-2", "negative cost"),
    (b"1 cost:\n", {}, 1, "cost:", "invalid cost value"),
    (b"1 1:1 qid:2\n", {}, 1, "qid:2", "qid after the features"),
    (b"1 1:1 sid:2\n", {}, 1, "sid:2", "sid after the features"),
    (b"1 qid:1 qid:1 1:1\n", {}, 1, "qid:1", "qid given twice"),
    (b"1 qid:1 cost:1 cost:2\n", {}, 1, "cost:2", "cost given twice"),
    (b"1 qid:abc\n", {}, 1, "qid:abc", "invalid qid value"),
    (b"1 qid:1.5\n", {}, 1, "qid:1.5", "invalid qid value"),
    (b"1 qid:9223372036854775808\n", {}, 1, "qid:9223372036854775808", "qid out of the 64-bit"),
    (b"1 sid:x\n", {}, 1, "sid:x", "invalid sid value"),
    (b"1 QID:1\n", {}, 1, "QID:1", "invalid feature index"),
    (b"1 1:1\r2:2\n", {}, 1, "\r", "carriage return not followed by a line feed"),
    (b"1 1:1 # \x00\n", {}, 1, "\x00", "NUL byte"),
    (b"\x00\x01\x02 1:1\n", {}, 1, "\x00\x01\x02", "NUL byte"),
    (b"1 1:\xe9t\xe9\n", {}, 1, "1:\\xe9t\\xe9", "invalid feature value"),
    (b"\xef\xbb\xbf1 1:1\n", {}, 1, "\ufeff1", "invalid label"),
    (b"1 1:1\n\n# c\n   \n1 2:2 3:3 x\n", {}, 5, "x", "invalid feature index"),
    (b"1 1:1\n\n# c\n   \n1 2:2 3:3 4\n", {}, 5, "4", "feature without ':'"),
    (b"1 1:1\r\n2 2:2\r\n3 3:\r\n", {}, 3, "3:", "empty feature value"),
    (b"1 1:" + b"x" * 200 + b"\n", {}, 1, "1:" + "x" * 78 + "...", "invalid feature value"),
]


@pytest.mark.parametrize(("content", "options", "line", "token", "description"), MALFORMED)
def test_malformed_input_names_line_and_token(content, options, line, token, description):
    with pytest.raises(SVMLightFormatError) as caught:
        read_svmlight(content, **options)
    error = caught.value
    assert isinstance(error, ValueError)
    assert (error.line, error.token) == (line, token)
    assert str(error) == f"line {line}: {error.description} in token {token!r}"
    assert description in error.description


@pytest.mark.parametrize(("content", "options", "line", "token", "description"), MALFORMED)
def test_malformed_input_in_tiny_chunks(content, options, line, token, description):
    with pytest.raises(SVMLightFormatError) as caught:
        parse_in_chunks(content, 1, **options).finish()
    assert (caught.value.line, caught.value.token) == (line, token)


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        (b"1 qid:1 1:1\n2 1:1\n", 2, "line 2: no qid, but line 1 has one"),
        (b"# c\n1 1:1\n2 qid:3 1:1\n", 2, "line 2: no qid, but line 3 has one"),
    ],
)
def test_qid_on_some_lines_only(content, line, message):
    with pytest.raises(SVMLightFormatError, match=message) as caught:
        read_svmlight(content)
    assert caught.value.line == line


@pytest.mark.parametrize("content", [b"", b"\n\n", b"# only a comment\n", b"  \t \r\n"])
def test_no_data_lines(content):
    with pytest.raises(SVMLightFormatError, match="no data lines") as caught:
        read_svmlight(content)
    assert caught.value.line is None and caught.value.token is None


def test_first_error_wins_even_when_found_later():
    # the label of line 2 is only converted (and found infinite) after the kernel returns
    content = b"1 1:1\n1e999 1:1\n1 x\n"
    with pytest.raises(SVMLightFormatError, match="line 2: label is not a finite number"):
        read_svmlight(content)
    with pytest.raises(SVMLightFormatError, match="line 1: feature value is not a finite"):
        read_svmlight(b"1 1:1e999 2:x\n")


def parse_in_two(content: bytes, split: int) -> Dataset:
    """``content`` fed to a stream parser in two chunks, cut at ``split``."""
    parser = SVMLightStreamParser()
    parser.feed(content[:split])
    parser.feed(content[split:])
    return parser.finish()


def test_error_straddling_every_chunk_boundary():
    content = b"1 1:1\n# comment\r\n\n-1 2:3 4:1.5e+x 5:1\n1 1:1\n"
    for split in range(len(content) + 1):
        with pytest.raises(SVMLightFormatError) as caught:
            parse_in_two(content, split)
        assert (caught.value.line, caught.value.token) == (4, "4:1.5e+x"), split


def test_valid_input_split_at_every_boundary():
    content = b"1 qid:1 cost:2.5 1:1 22:0.123456789012345678\r\n# c\n-1 qid:2 3:1e-5\r\n"
    expected = read_svmlight(content)
    for split in range(len(content) + 1):
        assert_same_dataset(parse_in_two(content, split), expected)


def test_long_tokens_straddling_chunk_boundaries():
    # "1...1e" is invalid only if nothing follows: a chunk may end right after the "e"
    content = b"1 1:1\n1 2:" + b"1" * 100 + b"e5\n2 " + b"3" * 100 + b"e\n"
    for split in range(len(content) + 1):
        with pytest.raises(SVMLightFormatError) as caught:
            parse_in_two(content, split)
        assert (caught.value.line, caught.value.token) == (3, "3" * 80 + "..."), split


def test_long_binary_line_fails_without_waiting_for_the_end():
    parser = SVMLightStreamParser()
    with pytest.raises(SVMLightFormatError, match="line 1: invalid label"):
        parser.feed(b"\x01\x02" * 1000)  # no line end yet, but it can never become valid


def test_error_attributes_survive_pickling():
    with pytest.raises(SVMLightFormatError) as caught:
        read_svmlight(b"1 1:1\n1 2:x\n")
    copy = pickle.loads(pickle.dumps(caught.value))
    assert (copy.line, copy.token, str(copy)) == (2, "2:x", str(caught.value))


# =============================================================================================
# API
# =============================================================================================


def test_sources(tmp_path):
    content = b"1 1:1\n-1 2:2\n"
    expected = read_svmlight(content)
    path = tmp_path / "data"
    path.write_bytes(content)
    for source in (path, str(path), bytearray(content), memoryview(content), io.BytesIO(content)):
        assert_same_dataset(read_svmlight(source), expected)
    with open(path, encoding="ascii") as text_stream, pytest.raises(TypeError, match="binary"):
        read_svmlight(text_stream)
    with pytest.raises(TypeError):
        read_svmlight(12)
    with pytest.raises(ValueError, match="chunk_size"):
        read_svmlight(content, chunk_size=0)


def test_stream_parser_lifecycle():
    parser = SVMLightStreamParser()
    parser.feed(b"1 1:")
    parser.feed(b"")
    parser.feed(b"1\n2 ")
    assert parser.rows_read == 1
    ds = parser.finish()
    assert ds.y.tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError):
        parser.feed(b"1 1:1\n")
    with pytest.raises(RuntimeError):
        parser.finish()

    failed = SVMLightStreamParser()
    with pytest.raises(SVMLightFormatError):
        failed.feed(b"xyz 1:1\n")
    with pytest.raises(RuntimeError):
        failed.feed(b"1 1:1\n")


def test_stream_parser_options_are_checked():
    with pytest.raises(ValueError, match="decompress"):
        SVMLightStreamParser(decompress="zip")
    with pytest.raises(ValueError, match="n_features"):
        SVMLightStreamParser(n_features=-1)
    with pytest.raises(ValueError, match="n_features"):
        SVMLightStreamParser(n_features=2.5)


def test_short_input_with_automatic_decompression():
    for content in (b"1", b"1\n", b"1 1:1", b"1 1:1\n"):
        parser = SVMLightStreamParser()
        for byte in content:
            parser.feed(bytes([byte]))
        assert parser.finish().y.tolist() == [1.0]


# =============================================================================================
# Writing
# =============================================================================================


def small_dataset(**extra) -> Dataset:
    X = sp.csr_matrix(np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -0.25]]))
    return Dataset(X, [1.0, -1.0], **extra)


def test_write_text_and_targets(tmp_path):
    ds = small_dataset(qid=[3, 3], sample_weight=[0.5, 2.0])
    expected = (
        b"# made by a test\n# second line\n1 qid:3 cost:0.5 2:1.5\n-1 qid:3 cost:2 1:2 3:-0.25\n"
    )
    assert write_svmlight(ds, comment="made by a test\nsecond line") == expected
    path = tmp_path / "out.svm"
    assert write_svmlight(ds, path, comment="made by a test\nsecond line") is None
    assert path.read_bytes() == expected
    stream = io.BytesIO()
    write_svmlight(ds, stream)
    assert stream.getvalue() == expected.split(b"\n", 2)[2]
    assert read_svmlight(path) == ds


def test_write_zero_based():
    content = write_svmlight(small_dataset(), zero_based=True)
    assert content == b"1 1:1.5\n-1 0:2 2:-0.25\n"
    assert read_svmlight(content, zero_based=True) == small_dataset()


def test_write_keeps_explicit_zeros_and_signs():
    X = sp.csr_matrix((np.array([0.0, -0.0, 5e-324]), np.array([0, 1, 2]), np.array([0, 3])))
    content = write_svmlight(Dataset(X, [-0.0]))
    assert content == b"-0 1:0 2:-0 3:5e-324\n"
    assert_same_dataset(read_svmlight(content), Dataset(X, [-0.0]))


def test_write_rejects_bad_arguments():
    with pytest.raises(TypeError):
        write_svmlight((np.eye(2), [1, 2]))
    with pytest.raises(ValueError, match="NUL"):
        write_svmlight(small_dataset(), comment="a\x00b")


EXTREME_FLOATS = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308]
finite_floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    EXTREME_FLOATS + [-x for x in EXTREME_FLOATS]
)


@st.composite
def datasets(draw) -> Dataset:
    n_rows = draw(st.integers(1, 12))
    n_features = draw(st.integers(0, 30))
    indptr, indices, values = [0], [], []
    for _ in range(n_rows):
        columns = sorted(draw(st.sets(st.integers(0, max(n_features - 1, 0)), max_size=n_features)))
        indices += columns
        values += draw(st.lists(finite_floats, min_size=len(columns), max_size=len(columns)))
        indptr.append(len(indices))
    X = sp.csr_matrix(
        (np.array(values, dtype=np.float64), np.array(indices, dtype=np.int32), indptr),
        shape=(n_rows, n_features),
    )
    labels = st.integers(-5, 5).map(float) | finite_floats
    y = draw(st.lists(labels, min_size=n_rows, max_size=n_rows))
    qid = draw(
        st.none() | st.lists(st.integers(INT64_MIN, INT64_MAX), min_size=n_rows, max_size=n_rows)
    )
    weights = st.floats(min_value=0.0, allow_infinity=False) | st.sampled_from([0.0, 5e-324, 1e308])
    sample_weight = draw(st.none() | st.lists(weights, min_size=n_rows, max_size=n_rows))
    return Dataset(X, y, qid=qid, sample_weight=sample_weight)


@pytest.mark.slow
@settings(deadline=None, max_examples=150)
@given(ds=datasets(), zero_based=st.booleans())
def test_write_read_round_trip(ds, zero_based):
    content = write_svmlight(ds, zero_based=zero_based)
    back = read_svmlight(content, n_features=ds.n_features, zero_based=zero_based)
    assert back == ds
    assert bits(back.X.data) == bits(ds.X.data) and bits(back.y) == bits(ds.y)
    if ds.sample_weight is not None:
        assert bits(back.sample_weight) == bits(ds.sample_weight)


# =============================================================================================
# Numbers: bit-identical to float()
# =============================================================================================


def assert_parsed_like_float(texts: list[str]) -> None:
    """Each text as a label and as a feature value must give exactly float(text)."""
    content = "".join(f"{text} cost:{text.lstrip('-')} 1:{text}\n" for text in texts).encode()
    ds = read_svmlight(content)
    expected = bits([float(text) for text in texts])
    assert bits(ds.y) == expected
    assert bits(ds.X.data) == expected
    assert bits(ds.sample_weight) == bits([float(text.lstrip("-")) for text in texts])


FORMATS = [repr, "{:.17g}".format, "{:.15g}".format, "{:.6e}".format, "{:.3E}".format, str]


@settings(deadline=None, max_examples=300)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=30))
def test_float_reprs_parse_exactly(values):
    texts = [style(value) for value in values for style in FORMATS]
    assert_parsed_like_float([text for text in texts if math.isfinite(float(text))])


DECIMAL_TEXT = st.from_regex(
    r"\A[+-]?([0-9]{1,25}(\.[0-9]{0,25})?|\.[0-9]{1,25})([eE][+-]?[0-9]{1,3})?\Z"
)


@settings(deadline=None, max_examples=100)
@given(st.lists(DECIMAL_TEXT, min_size=1, max_size=30))
def test_decimal_strings_parse_exactly(texts):
    finite = [text for text in texts if math.isfinite(float(text))]
    if finite:
        assert_parsed_like_float(finite)
    for text in texts:
        if text not in finite:
            with pytest.raises(SVMLightFormatError, match="not a finite number"):
                read_svmlight(f"1 1:{text}\n".encode())


@settings(deadline=None, max_examples=300)
@given(
    st.lists(
        st.tuples(st.integers(0, 2**64), st.integers(-45, 45), st.integers(0, 3)),
        min_size=1,
        max_size=30,
    )
)
def test_fast_path_boundaries_parse_exactly(parts):
    # mantissas around 2**53 and exponents around +-22 (the edges of Clinger's fast path)
    texts = []
    for mantissa, exponent, point in parts:
        digits = str(mantissa)
        if point and point < len(digits):
            digits = digits[:-point] + "." + digits[-point:]
        texts.append(f"{digits}e{exponent}")
        texts.append(f"{2**53 + mantissa % 5 - 2}e{exponent}")
    assert_parsed_like_float([text for text in texts if math.isfinite(float(text))])


@pytest.mark.parametrize(
    ("text", "exact_in_kernel"),
    [
        ("-0.731854", True),
        ("0.00027", True),
        ("123456789012345", True),
        ("9007199254740992", True),  # 2**53
        ("1e22", True),
        ("3e37", True),  # Clinger's extension: 3e15 * 1e22
        ("1." + "0" * 30, True),  # trailing zeros only
        ("9007199254740993", False),  # 2**53 + 1
        ("0.30000000000000004", False),
        ("1e23", True),  # 10 * 1e22
        ("1e38", False),
        ("9007199254740991e23", False),
        ("5e-324", False),
    ],
)
def test_typical_numbers_take_the_fast_path(text, exact_in_kernel):
    from solvers.data import svmlight

    buffer = np.frombuffer(text.encode() + b" ", dtype=np.uint8)
    kind, value, end = svmlight._parse_decimal(buffer, 0, buffer.shape[0])
    assert end == len(text)
    assert kind == (svmlight._NUMBER_EXACT if exact_in_kernel else svmlight._NUMBER_DEFERRED)
    if exact_in_kernel:
        assert bits([value]) == bits([float(text)])


# =============================================================================================
# Differential fuzzing against the naive reader
# =============================================================================================

NUMBERS = [b"1", b"-1", b"+1", b"0", b"-0", b"2.5", b".5", b"5.", b"1e3", b"1E-2", b"1e999"]
JUNK = [b"nan", b"x", b"1..2", b"e5", b":", b"#", b"\r", b"\x00", b"\xe9", b"1:", b"-2:1", b"QID:1"]
SEPARATORS = [b" ", b"\t", b"  ", b" \t "]


@st.composite
def svmlight_lines(draw) -> bytes:
    number = st.sampled_from(NUMBERS)
    feature = st.builds(lambda i, v: b"%d:%s" % (i, v), st.integers(0, 6), number)
    side = st.builds(
        lambda key, value: key + b":" + value,
        st.sampled_from([b"qid", b"sid", b"cost"]),
        st.sampled_from([b"1", b"-3", b"2.5", b"x", b"", b"-0", b"99999999999999999999"]),
    )
    token = st.one_of(feature, feature, feature, side, number, st.sampled_from(JUNK))
    tokens = draw(st.lists(token, max_size=6))
    if draw(st.booleans()):  # a line that is mostly well-formed
        label = draw(number)
        columns = sorted(draw(st.sets(st.integers(1, 9), max_size=5)))
        tokens = [label] + [b"%d:%s" % (column, draw(number)) for column in columns]
    line = draw(st.sampled_from([b"", b" ", b"\t"]))
    for i, token in enumerate(tokens):
        line += (draw(st.sampled_from(SEPARATORS)) if i else b"") + token
    if draw(st.integers(0, 4)) == 0:
        line += draw(st.sampled_from([b"#", b" # "])) + draw(st.binary(max_size=4))
    return line + draw(st.sampled_from([b"\n", b"\n", b"\r\n"]))


@pytest.mark.slow
@settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(svmlight_lines(), max_size=8),
    drop_last_newline=st.booleans(),
    chunk_size=st.integers(1, 64),
    zero_based=st.booleans(),
    n_features=st.none() | st.integers(0, 12),
)
def test_agrees_with_naive_reader(lines, drop_last_newline, chunk_size, zero_based, n_features):
    content = b"".join(lines)
    if drop_last_newline:
        content = content.removesuffix(b"\n")
    options = {"zero_based": zero_based, "n_features": n_features}
    try:
        expected = naive_read(content, **options)
    except NaiveError as naive_error:
        with pytest.raises(SVMLightFormatError) as caught:
            parse_in_chunks(content, chunk_size, **options).finish()
        expected_token = naive_error.token
        if expected_token is not None:
            expected_token = expected_token.decode("utf-8", "backslashreplace")
        assert (caught.value.line, caught.value.token) == (naive_error.line or None, expected_token)
        return
    parser = parse_in_chunks(content, chunk_size, **options)
    ds = parser.finish()
    indptr = np.cumsum([0] + [len(indices) for indices, _ in expected.rows])
    X = sp.csr_matrix(
        (
            np.array([v for _, values in expected.rows for v in values], dtype=np.float64),
            np.array([i for indices, _ in expected.rows for i in indices], dtype=np.int64),
            indptr,
        ),
        shape=(len(expected.rows), expected.n_features),
    )
    assert_same_dataset(
        ds, Dataset(X, expected.labels, qid=expected.qid, sample_weight=expected.cost)
    )
    assert (None if parser.sid is None else parser.sid.tolist()) == expected.sid


# -- caps -----------------------------------------------------------------------------------------


def test_parser_caps_name_what_was_exceeded():
    """Each cap stops the parse with SVMLightLimitError naming it; the text cap counts the
    decompressed bytes, before a piece is parsed."""
    import bz2 as bz2_module

    import solvers

    text = b"1 1:1 2:2\n-1 3:1\n" * 1000
    cases = [({"max_text_bytes": 1000}, "text_bytes"), ({"max_rows": 10}, "rows"),
             ({"max_entries": 100}, "entries"), ({"max_features": 2}, "features")]
    for caps, limit in cases:
        parser = solvers.SVMLightStreamParser(piece_size=4096, **caps)
        with pytest.raises(solvers.SVMLightLimitError) as raised:
            parser.feed(bz2_module.compress(text))
            parser.finish()
        assert raised.value.limit == limit and raised.value.actual > raised.value.cap
        with pytest.raises(RuntimeError):
            parser.feed(b"1 1:1\n")  # a parser that hit a cap is finished
    within = solvers.SVMLightStreamParser(max_text_bytes=len(text), max_rows=2000,
                                          max_entries=3000, max_features=3)
    within.feed(text)
    assert within.finish().n_samples == 2000 and within.text_bytes == len(text)
