"""Reading Markdown as the docs tests need it: fenced code blocks with the marker comment that
says how a block is checked, relative links, and GitHub's heading anchors. No Markdown library:
the repository's own files are the only input, and their syntax is the plain subset below."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

MARKER = re.compile(r"^<!--\s*readme-test:\s*([\w-]+)\s*-->$")
FENCE = re.compile(r"^```(\S*)\s*$")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True)
class Block:
    """A fenced code block: its language, the marker right above its fence (None: run it), its
    text and the line its fence opens on (1-based, for messages)."""
    lang: str
    marker: str | None
    text: str
    line: int

    def where(self, path: Path) -> str:
        return f"{path.name}:{self.line} ({self.lang} block)"


def code_blocks(text: str) -> list[Block]:
    """Every fenced block, in order. A fence that never closes is an error, not a lost block."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        prev = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.match(prev.strip())
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
        if end is None:
            raise ValueError(f"line {i + 1}: a code fence that never closes")
        blocks.append(Block(m.group(1), marker.group(1) if marker else None, "\n".join(lines[i + 1:end]) + "\n",
                            i + 1))
        i = end + 1
    return blocks


def prose(text: str) -> str:
    """The text outside fenced blocks and inline code, where links and headings live."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(out)


def links(text: str) -> list[str]:
    """The targets of the Markdown links in the prose (images aside)."""
    return LINK.findall(prose(text))


def anchors(text: str) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces to '-',
    a repeated heading numbered -1, -2, ..."""
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else HEADING.match(line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).replace("`", "").lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out
