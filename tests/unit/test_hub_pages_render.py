"""The pages' rules that need no server: which URLs a card may keep, that its
HTML is escaped, how variant names read, and that the templates escape every
name, path and message they are given."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

from pipeline.hub.card_html import CardRenderer, RepoLinks, repo_path, strip_front_matter
from pipeline.hub.catalog import KernelSummary, Signature, describe
from pipeline.hub.page_html import CSP, environment, human_size, short_date

LINKS = RepoLinks(file=lambda p: f"/kernels/o/k/resolve/c0ffee/{p}", folder=lambda p: f"/kernels/o/k/tree/c0ffee/{p}")


def render(text: str) -> str:
    return CardRenderer().render(text, LINKS)


@pytest.mark.parametrize("url, path", [
    ("media/benchmark.png", "media/benchmark.png"),
    ("./media/a.png", "media/a.png"),
    ("/media/a.png", "media/a.png"),
    ("docs/../media/a.png", "media/a.png"),
    ("media/a%20b.png", "media/a b.png"),
    ("../outside.png", None),
    ("docs/../../outside.png", None),
    ("//evil.example/x.png", None),
    ("javascript:alert(1)", None),
    ("data:image/png;base64,AAAA", None),
    ("java%0Ascript:alert(1)", None),  # a control character once decoded
    ("a\\b.png", None),
    ("", None),
])
def test_repo_path_accepts_only_paths_inside_the_repository(url, path):
    assert repo_path(url) == path


@pytest.mark.parametrize("markdown", [
    "<script>alert(1)</script>",
    '<img src="x" onerror="alert(1)">',
    '<a href="javascript:alert(1)">x</a>',
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](<java&#10;script:alert(1)>)",
    "[x](vbscript:msgbox)",
    "[x](data:text/html,<script>alert(1)</script>)",
    "![x](javascript:alert(1))",
    '![x](x.png" onerror="alert(1))',
    "[x](file:///etc/passwd)",
])
def test_a_hostile_card_keeps_no_tag_attribute_or_scheme_that_runs(markdown):
    tags = elements(render(markdown))
    assert {tag for tag, _ in tags} <= {"p", "span", "strong", "em", "code"}, tags
    assert not [(tag, attrs) for tag, attrs in tags if attrs], tags


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.found.append((tag, dict(attrs)))


def elements(html: str) -> list[tuple[str, dict]]:
    """(tag, attributes) of every element, as a browser's parser sees them."""
    parser = _Elements()
    parser.feed(html)
    return parser.found


def test_links_and_images_point_into_the_repository_or_the_web():
    html = render("![plot](media/b.png \"t\") [notes](docs/NOTES.md#run) [dir](docs/) [web](https://example.org/a?b=\"c) [top](#how-to-use)")
    assert '<img src="/kernels/o/k/resolve/c0ffee/media/b.png" alt="plot" title="t" />' in html
    assert '<a href="/kernels/o/k/resolve/c0ffee/docs/NOTES.md#run">notes</a>' in html
    assert '<a href="/kernels/o/k/tree/c0ffee/docs">dir</a>' in html
    assert '<a href="https://example.org/a?b=%22c" rel="nofollow noopener noreferrer">web</a>' in html
    assert '<a href="#how-to-use">top</a>' in html


def test_a_refused_link_keeps_its_text_and_a_refused_image_its_alt():
    assert render("[**bold** text](vbscript:x)") == "<p>[<strong>bold</strong> text](vbscript:x)</p>\n"
    assert render("[climb](../../x)") == "<p>[climb](../../x)</p>\n"
    assert render("![in page](#top)") == "<p>[image: in page]</p>\n"
    assert render("![alt words](../x.png)") == "<p>![alt words](../x.png)</p>\n"


def test_front_matter_is_metadata_not_content_and_headings_get_anchors():
    card = "---\nlibrary_name: kernels\ntags:\n- kernels\n---\n\n# My kernel\n\n## How to use `it`\n"
    assert strip_front_matter(card).lstrip().startswith("# My kernel")
    html = render(card)
    assert "library_name" not in html
    assert '<h1 id="my-kernel">My kernel</h1>' in html and '<h2 id="how-to-use-it">' in html


def test_column_alignment_is_a_class_not_an_inline_style():
    # The policy allows no inline style: an aligned column would log a violation per cell.
    html = render("| a | b | c |\n|:--|--:|:-:|\n| 1 | 2 | 3 |\n")
    assert 'style=' not in html
    assert '<th class="align-left">a</th>' in html and '<td class="align-right">2</td>' in html
    assert '<td class="align-center">3</td>' in html


def test_tables_and_code_render():
    html = render("| a | b |\n| --- | --- |\n| 1 | 2 |\n\n```python\nx = '<b>'\n```\n")
    assert "<table>" in html and "<td>2</td>" in html
    assert "<code class=\"language-python\">x = '&lt;b&gt;'" in html


@pytest.mark.parametrize("name, expected", [
    ("torch212-cxx11-cu126-x86_64-linux", ("cuda", "torch 2.12", "12.6", "x86_64-linux")),
    ("torch213-cxx11-rocm71-x86_64-linux", ("rocm", "torch 2.13", "7.1", "x86_64-linux")),
    ("torch213-cxx11-cpu-aarch64-linux", ("cpu", "torch 2.13", "", "aarch64-linux")),
    ("torch213-metal-aarch64-darwin", ("metal", "torch 2.13", "", "aarch64-darwin")),
    ("torch-cuda", ("cuda", "torch (noarch: any version)", "", "any")),
    ("not-a-variant", ("?", "?", "", "?")),
])
def test_variant_names_read_as_kernels_parses_them(name, expected):
    assert describe(name) == expected


def test_signature_status_in_words():
    assert Signature("signed", 7).text.startswith("Sigstore bundle present, Rekor log index 7")
    assert "not verified" in Signature("signed").text
    assert Signature("unsigned").text == "no signature"


def test_sizes_and_dates():
    assert [human_size(n) for n in (0, 999, 1000, 200_000, 3_500_000_000)] == ["0 B", "999 B", "1.0 kB", "200.0 kB", "3.5 GB"]
    assert short_date("2026-05-01T12:34:56Z") == "2026-05-01 12:34 UTC"
    assert short_date("garbage") == "garbage"


def test_templates_escape_every_value():
    hostile = "<img src=x onerror=alert(1)>"
    kernel = KernelSummary(namespace="o", name="k", private=False, trusted=True, latest=1, variants=2, updated=hostile)
    html = environment().get_template("listing.html").render(viewer=hostile, kernels=[kernel], total=1, query=hostile)
    assert hostile not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_the_policy_allows_no_script():
    directives = dict(d.split(" ", 1) for d in CSP.split("; "))
    assert directives["default-src"] == "'none'" and "script-src" not in directives
    assert directives["frame-ancestors"] == "'none'" and directives["base-uri"] == "'none'"


class _Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def result(self, line: str) -> None:
        self.lines.append(line)


def test_publish_to_the_embedded_hub_ends_with_the_kernel_page():
    from types import SimpleNamespace

    from pipeline.commands.publish import _print
    from pipeline.target import Target

    for embedded, last in ((True, "  http://127.0.0.1:8123/kernels/my-org/rmsnorm"), (False, "  variants: v")):
        target = (Target("embedded", "http://127.0.0.1:8123", "t", hub_root=Path("/data/hub"), hub_port=8123)
                  if embedded else Target("HF_ENDPOINT", "http://hub.example", "t"))
        pub = SimpleNamespace(target=target, dry_run=False, changed=False, repo_id="my-org/rmsnorm", version=1,
                              commits=[], variants=["v"], forced=[], verify=None)
        out = _Lines()
        _print(pub, out)
        assert out.lines[-1] == last
