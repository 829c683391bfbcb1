"""The README's Python examples run as written (in a temporary directory, so that the files
they write land there, not in the repository), and print what their comments promise."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from shared_data import DATA_DIR

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", README.read_text(), flags=re.M | re.S)


def promised_outputs(code: str) -> list[str]:
    """The figures a block's comments promise for what it prints (``# 0.8494...``)."""
    return re.findall(r"print\(.*#\s*([0-9][0-9.]*[0-9])\.\.\.\s*$", code, flags=re.M)


@pytest.mark.slow
def test_the_readme_examples_run_and_print_what_they_say(tmp_path, monkeypatch):
    blocks = python_blocks()
    assert blocks, "no Python example in the README"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__readme__"}
    for number, code in enumerate(blocks, start=1):
        # the examples read data/NAME.xz relative to a clone's root; they run in tmp_path
        runnable = code.replace('"data/', f'"{DATA_DIR}/')
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(runnable, f"README.md python block {number}", "exec"), namespace)
        for figure in promised_outputs(code):
            assert figure in printed.getvalue(), (number, figure, printed.getvalue()[:2000])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a9a.liblinear", "a9a.onnx"]
