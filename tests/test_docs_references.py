"""The repository stands on its own: every ``*.md`` path it mentions exists, and nothing cites a document
a clone does not contain.

- a relative Markdown path in any tracked text file (a link target or a plain mention such as
  ``docs/bridge.md``) resolves against the file's folder or the repository root; URLs are not paths;
- none of the old external names appears (the team's notes outside the repository: their numbered
  decisions and items, their reference files, their folder); decisions are cited as
  ``docs/design.md DN``;
- every ``docs/design.md DN`` cited names a decision heading of docs/design.md, and every decision there
  says why and names at least one upstream source by URL.
"""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "design.md"

#: Names of documents outside the repository, spelt in pieces so this file does not match itself.
_EXTERNAL_DOCS = ("node" + "-apis", "dra" + "-api", "vendors", "real-node", "control-plane")
OLD_NAMES = re.compile(
    "|".join(
        [
            r"\bdesign\s+decisions?\b",
            r"\bdecisions?\s+\d",
            r"\bstyle(?:\.md)?\s+items?\b",
            r"\.\./" + "shared",
            r"\b" + "shared" + r"/reference\b",
            *(re.escape(name + ".md") for name in _EXTERNAL_DOCS),
            *(r"\b" + re.escape(name) + r"\b" for name in _EXTERNAL_DOCS[:2]),  # without .md too
            r"\bsections?\s+\d+\.\d+",  # a numbered section of a document a clone does not have
        ]
    ),
    re.IGNORECASE,
)
#: Files the repository's commands write, mentioned as their output, never tracked.
GENERATED = {"migration-report.md"}  # MIGRATION.md: ``dra-migrate report -o markdown > migration-report.md``
URL = re.compile(r"[a-z][a-z0-9+.-]*://[^\s)>\]'\"`]+", re.IGNORECASE)
#: A path ending in ``.md``: a run of path characters not glued to a longer word or path.
MD_PATH = re.compile(r"(?<![\w./<>*{}$-])[\w.-][\w./-]*\.md(?![\w-]|\.\w)")
CITATION = re.compile(r"docs/design\.md((?:(?:,\s*|\s+and\s+|\s+)D\d+\b)+)")
HEADING = re.compile(r"^## (D\d+)\. \S", re.MULTILINE)
#: A decision id wherever it stands (``docs/design.md D6``, ``(D8)``, a link's text).
DECISION_ID = re.compile(r"\bD\d+\b")
#: A Markdown link to a heading: ``[text](<file>.md#anchor)`` or ``[text](#anchor)``.
ANCHOR_LINK = re.compile(r"\]\(((?:[\w./-]+\.md)?)#([\w-]+)\)")


@cache
def tracked_text_files() -> tuple[Path, ...]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    files = []
    for name in listed.decode().split("\0"):
        path = ROOT / name
        if not name or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        files.append(path)
    return tuple(files)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _md_paths(text: str) -> list[str]:
    return MD_PATH.findall(URL.sub(" ", text))


def _resolves(path: Path, mention: str) -> bool:
    """Relative to the file or the root; a bare file name (``"bridge.md"`` joined in code) names a tracked file."""
    if mention in GENERATED or any((base / mention).exists() for base in (path.parent, ROOT)):
        return True
    return "/" not in mention and any(p.name == mention for p in tracked_text_files())


def _design_ids() -> set[str]:
    return set(HEADING.findall(_text(DESIGN)))


def test_the_tree_is_listed() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in tracked_text_files()}
    assert {"README.md", "docs/architecture.md", "pyproject.toml"} <= names


def test_every_relative_markdown_path_exists() -> None:
    dangling = [
        f"{path.relative_to(ROOT)}:{number}: {mention}"
        for path in tracked_text_files()
        for number, line in enumerate(_text(path).splitlines(), 1)
        for mention in _md_paths(line)
        if not _resolves(path, mention)
    ]
    assert dangling == []


def test_no_file_cites_documents_outside_the_repository() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in tracked_text_files()
        for number, line in enumerate(_text(path).splitlines(), 1)
        if OLD_NAMES.search(line)
    ]
    assert found == []


def test_every_cited_decision_exists_in_docs_design() -> None:
    known = _design_ids()
    missing = [
        f"{path.relative_to(ROOT)}: {ident}"
        for path in tracked_text_files()
        for match in CITATION.finditer(" ".join(_text(path).split()))
        for ident in re.findall(r"D\d+", match.group(1))
        if ident not in known
    ]
    assert missing == []


def test_every_decision_id_anywhere_names_a_decision_of_docs_design() -> None:
    """Also the ids cited without the file's name, in a link's text or a list of them."""
    known = _design_ids()
    unknown = [
        f"{path.relative_to(ROOT)}:{number}: {ident}"
        for path in tracked_text_files()
        for number, line in enumerate(_text(path).splitlines(), 1)
        for ident in DECISION_ID.findall(line)
        if ident not in known
    ]
    assert unknown == []


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", _text(path), re.MULTILINE)}


def _broken_anchors(path: Path) -> list[str]:
    """The links of Markdown file ``path`` to a heading that its target file (itself for ``#x``) lacks."""
    out = []
    for target, anchor in ANCHOR_LINK.findall(_text(path)):
        linked = path.parent / target if target else path
        if linked.is_file() and anchor not in _anchors(linked):
            out.append(f"{target or path.name}#{anchor}")
    return out


def test_every_markdown_link_to_a_heading_finds_it() -> None:
    broken = [
        f"{path.relative_to(ROOT)}: {link}"
        for path in tracked_text_files()
        if path.suffix == ".md"
        for link in _broken_anchors(path)
    ]
    assert broken == []


def test_a_link_to_a_missing_heading_is_found(tmp_path: Path) -> None:
    other, page = "other" + ".md", "page" + ".md"  # in pieces: this file's own paths are checked too
    (tmp_path / other).write_text("# Title\n\n## D6. Node-by-node hand-over\n")
    (tmp_path / page).write_text(
        f"## Here\n[ok]({other}#d6-node-by-node-hand-over) [self](#here) [bad]({other}#d98-nope) [gone](#nowhere)\n"
    )
    assert _broken_anchors(tmp_path / page) == [f"{other}#d98-nope", f"{page}#nowhere"]


def test_a_heading_anchor_is_githubs() -> None:
    assert (
        _slug("D6. Node-by-node hand-over, one allocator per node")
        == "d6-node-by-node-hand-over-one-allocator-per-node"
    )
    assert _slug("`dra-migrate report`") == "dra-migrate-report"


def test_decisions_are_numbered_in_order_each_with_a_reason_and_an_upstream_url() -> None:
    text = _text(DESIGN)
    sections = re.split(r"^(?=## D\d+\. )", text, flags=re.MULTILINE)[1:]
    ids = [m.group(1) for m in map(HEADING.match, sections) if m]
    assert ids == [f"D{n}" for n in range(1, len(ids) + 1)]
    assert len(ids) >= 11
    for section in sections:
        body = section.split("\n## ", 1)[0]
        assert "**Why**" in body, section.splitlines()[0]
        assert re.search(r"https://\S+", body), section.splitlines()[0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see [the bridge](docs/bridge.md#modes) and MIGRATION.md", ["docs/bridge.md", "MIGRATION.md"]),
        ("https://github.com/kubernetes/enhancements/blob/master/README.md only", []),
        ("charts/dra-bridge/README.md, then `docs/capacity.md`.", ["charts/dra-bridge/README.md", "docs/capacity.md"]),
        ("a file.mdx and notes.md.gz are not Markdown paths", []),
    ],
    ids=["link-and-plain", "url", "nested-and-quoted", "other-extensions"],
)
def test_markdown_paths_are_found_in_links_and_plain_mentions(text: str, expected: list[str]) -> None:
    assert _md_paths(text) == expected


#: Spelt in pieces, like the names themselves, so that this file does not match itself.
_OLD_EXAMPLES = {
    "decision": "(design decis" + "ion 6)",
    "decisions": "Design decis" + "ions 5, 11",
    "bare-decision": "design.md decis" + "ion 4",
    "style-md-item": "style" + ".md " + "item 13",
    "style-item": "style " + "item 4",
    "reference-file": "vendors" + ".md 1.5",
    "shared-folder": "../" + "shared" + "/reference/x",
    "bare-reference-name": "the node" + "-apis notes",
    "numbered-section": "(sec" + "tion 2.5 point 3)",
}


@pytest.mark.parametrize("line", list(_OLD_EXAMPLES.values()), ids=list(_OLD_EXAMPLES))
def test_old_external_names_are_recognised(line: str) -> None:
    assert OLD_NAMES.search(line)


def test_a_citation_lists_every_decision_it_names() -> None:
    text = "docs/design.md D5, D11 and docs/design.md D6"
    assert [re.findall(r"D\d+", m.group(1)) for m in CITATION.finditer(text)] == [["D5", "D11"], ["D6"]]
