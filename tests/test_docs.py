"""The design document is the repository's own, ``docs/design.md``, and every reference to it
holds: no file points at another design document or at a section it does not have, and the
README's "What is here" links to it."""

from __future__ import annotations

import os
import posixpath
import re
import subprocess
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
NAME = "design" + ".md"  # spelled in pieces: this file is scanned too
DESIGN = f"docs/{NAME}"

# A path that ends in the design document's file name, from the first character a path holds.
_REFERENCE = re.compile(r"[\w./-]*\bdesign\.md")
_NUMBER = r"\d+(?:\.\d+)*"
_NUMBERS = rf"{_NUMBER}(?:(?:\s*,\s*|\s+and\s+|\s+or\s+|\s*-\s*){_NUMBER})*"
# "... docs/design.md`` section 2.4", "docs/design.md, sections 2.1 and 2.4": the section
# right after a reference, past closing quotes, a possessive, punctuation, a line break and
# comment marks.
_SECTION_AFTER = re.compile(
    rf"""^[`'"*\])]*(?:'s)?[\s,:;(#*]*sections?\s+({_NUMBERS})""")
# "section 2 of ``docs/design.md``": the section right before it.
_SECTION_BEFORE = re.compile(rf"""sections?\s+({_NUMBERS})\s+of\s+[`'"*\[(]*$""")
_ANCHOR = re.compile(r"^#([\w-]+)")
_HEADING = re.compile(r"^(#{2,6})\s+(\d+(?:\.\d+)*)\.?\s+(.*)$", re.M)


def repository_files() -> list[str]:
    """The repository's files (tracked, and new ones not ignored), relative, '/'-separated;
    without git, every file outside hidden directories, caches and virtual environments."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPOSITORY, capture_output=True, timeout=60, check=True).stdout
        return sorted({name for name in listed.decode().split("\0") if name})
    except (OSError, subprocess.SubprocessError):
        pass
    found = []
    for directory, subdirectories, files in os.walk(REPOSITORY):
        subdirectories[:] = [
            d for d in subdirectories
            if not (d.startswith(".") and d not in (".ci", ".github"))
            and d not in ("__pycache__", "node_modules") and not d.endswith(".egg-info")
            and not (Path(directory) / d / "pyvenv.cfg").exists()]
        relative = Path(directory).relative_to(REPOSITORY)
        found += [(relative / name).as_posix() for name in files]
    return sorted(found)


def design_sections(text: str) -> set[str]:
    """The section numbers of the design document's numbered headings."""
    return {number for _, number, _ in _HEADING.findall(text)}


def heading_anchors(text: str) -> set[str]:
    """The anchors a Markdown renderer gives the headings (GitHub's rule)."""
    headings = re.findall(r"^#{1,6}\s+(.*?)\s*$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def reference_problems(path: str, text: str, sections: set[str],
                       anchors: set[str]) -> list[str]:
    """Every reference of ``text`` (the file ``path``) to a design document that is not the
    repository's, or to a section or an anchor the document does not have."""
    problems = []
    for match in _REFERENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        where = f"{path}:{line}"
        target = match.group(0)
        resolved = {posixpath.normpath(target),
                    posixpath.normpath(posixpath.join(posixpath.dirname(path), target))}
        if target.startswith("/") or DESIGN not in resolved:
            problems.append(f"{where}: {target!r} is not {DESIGN}")
            continue
        after = text[match.end():match.end() + 200]
        before = text[max(0, match.start() - 200):match.start()]
        cited = []
        for found in (_SECTION_AFTER.match(after), _SECTION_BEFORE.search(before)):
            if found is not None:
                cited += re.findall(_NUMBER, found.group(1))
        problems += [f"{where}: {DESIGN} has no section {number}" for number in cited
                     if number not in sections]
        anchor = _ANCHOR.match(after)
        if anchor is not None and anchor.group(1) not in anchors:
            problems.append(f"{where}: {DESIGN} has no heading #{anchor.group(1)}")
    return problems


def _design_text() -> str:
    return (REPOSITORY / DESIGN).read_text()


def test_every_reference_is_to_the_repositorys_design_document_and_its_sections():
    text = _design_text()
    sections, anchors = design_sections(text), heading_anchors(text)
    problems = []
    checked = 0
    for name in repository_files():
        try:
            raw = (REPOSITORY / name).read_bytes()
        except OSError:  # a listed file since deleted, a dangling link
            continue
        if NAME.encode() not in raw:
            continue
        try:
            content = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue  # not text (a compressed dataset whose bytes happen to hold the name)
        checked += 1
        problems += reference_problems(name, content, sections, anchors)
    assert checked > 0, "no file refers to the design document: the scan found nothing"
    assert not problems, "\n".join(problems)


def test_the_reference_check_catches_what_it_must():
    sections = {"2", "2.1", "3"}
    anchors = {"21-margins"}
    name = NAME
    good = [
        f"(``docs/{name}`` section 2.1)",
        f"section 2 of ``docs/{name}``",
        f"# docs/{name}\n# section 3: the layers",
        f"the objective of docs/{name}'s problem",
        f"docs/{name}, sections 2 and 3",
    ]
    for text in good:
        assert reference_problems("solvers/x.py", text, sections, anchors) == [], text
    assert reference_problems("docs/x.md", f"[it]({name}#21-margins) section 2.1", sections,
                              anchors) == []
    assert reference_problems("README.md", f"[it](docs/{name})", sections, anchors) == []
    bad = {
        f"(``{name}`` section 2)": "is not",
        f"/work/shared/{name}": "is not",
        f"the problem of ``docs/{name}`` section 4": "no section 4",
        f"section 2.2 of ``docs/{name}``": "no section 2.2",
        f"docs/{name}, sections 2 and 5": "no section 5",
        f"[it](docs/{name}#9-nothing)": "no heading",
    }
    for text, complaint in bad.items():
        found = reference_problems("solvers/x.py", text, sections, anchors)
        assert len(found) == 1 and complaint in found[0], (text, found)


def test_the_design_sections_are_numbered_in_order():
    """Sections 1, 2, ... and within section N, N.1, N.2, ...: a number is never skipped or
    reused, so a citation cannot fall into a gap or name two sections."""
    numbers = [number for _, number, _ in _HEADING.findall(_design_text())]
    assert numbers, f"{DESIGN} has no numbered section"
    expected_next: dict[tuple[int, ...], int] = {}
    for number in numbers:
        parts = tuple(int(part) for part in number.split("."))
        parent = parts[:-1]
        assert parent == () or parent in expected_next, f"section {number} has no parent"
        assert parts[-1] == expected_next.get(parent, 1), f"section {number} out of order"
        expected_next[parent] = parts[-1] + 1
        expected_next.setdefault(parts, 1)


def test_the_readme_links_the_design_document_where_it_lists_what_is_here():
    readme = (REPOSITORY / "README.md").read_text()
    start = readme.index("\n## What is here")
    end = readme.find("\n## ", start + 1)
    assert f"]({DESIGN})" in readme[start:end if end != -1 else None]
