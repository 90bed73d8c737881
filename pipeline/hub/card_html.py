"""A repository card (README.md, untrusted: anyone with write access wrote it)
as HTML that is safe to put in a page.

Safe by construction, not by filtering HTML afterwards: markdown-it parses
CommonMark with raw HTML off, so `<script>` or `<img onerror=...>` in the card
is text, escaped by the renderer like every other text and attribute. A link or
image keeps its URL only when it is http(s), a fragment (`#usage`), or a path in
the repository (`media/benchmark.png`, `./docs/x.md`, `/media/x.png` from its
root): those become URLs of this hub built here, so no other scheme
(`javascript:`, `data:`, `vbscript:`, ...) can reach an `href` or a `src`. A link
refused is rendered as its text; an image refused as its alt text.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

from markdown_it import MarkdownIt
from markdown_it.token import Token

# A YAML front matter block as the Hub's cards begin with (metadata, not content).
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n.*?\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_WEB = re.compile(r"https?://[^\s/?#\\]", re.I)
_ALIGN = re.compile(r"text-align:(left|center|right)")


@dataclass(frozen=True)
class RepoLinks:
    """Where a repository-relative path of the card points: `file(path)` for a
    file's bytes (images, links to files), `folder(path)` for a folder's page."""

    file: Callable[[str], str]
    folder: Callable[[str], str]


def strip_front_matter(text: str) -> str:
    return _FRONT_MATTER.sub("", text, count=1)


def repo_path(url: str) -> str | None:
    """The repository path a scheme-less URL names (None if it names none:
    another scheme, another host, a path that climbs out of the repository)."""
    if any(c.isspace() or ord(c) < 0x20 for c in url) or "\\" in url or url.startswith("//"):
        return None
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not parts.path:
        return None
    path = posixpath.normpath(unquote(parts.path).lstrip("/"))
    if path in ("", ".", "..") or path.startswith("../") or any(ord(c) < 0x20 or c == "\\" for c in path):
        return None
    return path


def _link_target(url: str, links: RepoLinks, *, image: bool) -> str | None:
    """The URL the page may use for `url`, or None to drop it."""
    if _WEB.match(url):
        return url
    if url.startswith("#") and not image:
        return "#" + quote(unquote(url[1:]), safe="-_.~")
    path = repo_path(url)
    if path is None:
        return None
    if image:
        return links.file(path)
    parts = urlsplit(url)
    target = links.folder(path) if parts.path.endswith("/") else links.file(path)
    return f"{target}#{quote(unquote(parts.fragment), safe='-_.~')}" if parts.fragment else target


def _allowed(url: str) -> bool:
    # Checked at parse time too, so that a refused link stays plain text.
    stripped = url.strip()
    return bool(_WEB.match(stripped)) or stripped.startswith("#") or repo_path(stripped) is not None


class CardRenderer:
    """One markdown-it parser with the policy above; reusable across requests."""

    def __init__(self) -> None:
        md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
        md.enable(["table", "strikethrough"])
        md.validateLink = _allowed  # type: ignore[method-assign]
        self._md = md

    def render(self, text: str, links: RepoLinks) -> str:
        tokens = self._md.parse(strip_front_matter(text))
        self._rewrite(tokens, links)
        return self._md.renderer.render(tokens, self._md.options, {})

    def _rewrite(self, tokens: list[Token], links: RepoLinks) -> None:
        for i, token in enumerate(tokens):
            if token.children:
                self._rewrite(token.children, links)
            if token.type in ("th_open", "td_open") and "style" in token.attrs:
                # A column's alignment comes as style="text-align:right"; the pages' policy allows no
                # inline style, so it becomes a class of the stylesheet.
                align = _ALIGN.fullmatch(str(token.attrs["style"]))
                token.attrs = {"class": f"align-{align.group(1)}"} if align else {}
            elif token.type == "heading_open" and i + 1 < len(tokens):
                slug = _slug(tokens[i + 1].content)
                if slug:
                    token.attrs = {"id": slug}
            elif token.type == "link_open":
                target = _link_target(str(token.attrs.get("href", "")), links, image=False)
                if target is None:
                    token.tag, token.attrs = "span", {}
                    _close_as_span(tokens, i)
                else:
                    token.attrs = {"href": target}
                    if not target.startswith(("/", "#")):
                        token.attrs["rel"] = "nofollow noopener noreferrer"
            elif token.type == "image":
                target = _link_target(str(token.attrs.get("src", "")), links, image=True)
                if target is None:
                    alt = token.content or ""
                    tokens[i] = Token("text", "", 0, content=f"[image: {alt}]" if alt else "[image]")
                else:
                    title = token.attrs.get("title")
                    # alt is rendered from the token's children; title and src are all that is kept
                    token.attrs = {"src": target, "alt": ""}
                    if title:
                        token.attrs["title"] = str(title)


def _slug(text: str) -> str:
    """A heading's anchor as GitHub and the Hub make it: lower case, spaces to '-'."""
    words = re.sub(r"[^\w\- ]", "", text.strip().lower(), flags=re.UNICODE)
    return words.replace(" ", "-")[:80]


def _close_as_span(tokens: list[Token], opened: int) -> None:
    depth = 0
    for token in tokens[opened + 1 :]:
        if token.type == "link_open":
            depth += 1
        elif token.type == "link_close":
            if depth == 0:
                token.tag = "span"
                return
            depth -= 1
