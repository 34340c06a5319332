"""Every relative link in README.md and docs/*.md leads somewhere: the file exists and, for a
link into a Markdown page, the heading its #anchor names does too. Every page in docs/ is
listed by docs/index.md, so that none is an orphan."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.docs.markdown import anchors, links

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _relative(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target)   # http:, https:, mailto: ... are not checked here


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path):
    broken = []
    for target in links(page.read_text()):
        if not _relative(target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text()):
            broken.append(f"{target}: {dest.name} has no heading #{anchor}")
    assert not broken, f"{page.relative_to(ROOT)}: broken links:\n  " + "\n  ".join(broken)


def test_index_lists_every_page():
    listed = {t.partition("#")[0] for t in links((ROOT / "docs" / "index.md").read_text())}
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert not pages - listed, f"docs/index.md does not list {sorted(pages - listed)}"


def test_checker_sees_a_broken_link(tmp_path):
    """The parser finds links and headings as GitHub does, so the test above can fail."""
    text = "# A `code` heading, here\n\n[x](other.md#a-code-heading-here) `[not](a link)` ![img](i.png)\n"
    assert links(text) == ["other.md#a-code-heading-here"]
    assert anchors(text) == {"a-code-heading-here"}
