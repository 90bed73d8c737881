"""The hub's pages in a real browser: Debian's chromium, headless, one session
for the whole module, driven over the DevTools protocol (tests/browser_support).

What a person sees is checked from the page itself (the DOM after load, images
decoded, what scripts did): the card's heading and benchmark image, the variant
table, that a hostile card runs nothing, that a private repository appears only
to a token that may read it. One screenshot per page type is saved under
$PIPELINE_SCREENSHOTS (default: pytest's tmp dir).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from browser_support import Browser, chromium_path
from hub_pages_support import (DEMO, HOSTILE, LOG_INDEX, MODEL, SECRET, SIGNED, V1_VARIANTS, V2_VARIANTS,
                               publish_examples)
from pipeline.hub import EmbeddedHub

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(chromium_path() is None,
                       reason="chromium is not installed (apt-get install chromium): the browser tests are skipped"),
]

# True when the page ran any script, or holds anything that could run one: a <script>, an on* attribute,
# a link or image whose URL is not http(s) (javascript:, data:, vbscript:...).
RAN_OR_COULD_RUN = """(() => {
  const bad = [];
  if (window.pwned !== undefined) bad.push('window.pwned=' + window.pwned);
  if (document.scripts.length) bad.push(document.scripts.length + ' script element(s)');
  for (const e of document.querySelectorAll('*'))
    for (const a of e.attributes) if (a.name.toLowerCase().startsWith('on')) bad.push(e.tagName + ' ' + a.name);
  for (const a of document.querySelectorAll('a[href]'))
    if (!['http:', 'https:'].includes(a.protocol)) bad.push('link ' + a.href);
  const scheme = (url) => { try { return new URL(url).protocol; } catch { return 'unresolvable'; } };
  for (const i of document.querySelectorAll('img, iframe, object, embed, svg'))
    if (i.tagName !== 'IMG' || !['http:', 'https:'].includes(scheme(i.src))) bad.push(i.tagName + ' ' + (i.src || ''));
  return bad;
})()"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    with EmbeddedHub(tmp_path_factory.mktemp("hub"), trusted_namespaces=["pages-org"]) as hub:
        yield publish_examples(hub.endpoint, hub.admin_token, hub.create_token)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with Browser.start(tmp_path_factory.mktemp("chromium") / "profile") as b:
        yield b


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    given = os.environ.get("PIPELINE_SCREENSHOTS")
    return Path(given) if given else tmp_path_factory.mktemp("screenshots")


def texts(browser: Browser, selector: str) -> list[str]:
    return browser.evaluate(f"[...document.querySelectorAll({selector!r})].map(e => e.textContent.trim())")


def test_listing_shows_each_kernel_with_publisher_version_and_variants(site, browser, shots):
    browser.goto(f"{site.endpoint}/kernels")
    rows = browser.evaluate("[...document.querySelectorAll('#kernels tbody tr')]"
                            ".map(r => [...r.cells].map(c => c.textContent.trim()))")
    assert [r[0] for r in rows] == [DEMO, HOSTILE]
    demo = rows[0]
    assert demo[1] == "pages-org trusted" and demo[2] == "v2" and demo[3] == str(len(V2_VARIANTS))
    browser.screenshot(shots / "listing.png")
    browser.goto(f"{site.endpoint}/kernels?q=HOST")
    assert texts(browser, "#kernels tbody td:first-child a") == [HOSTILE]


def refusals(browser: Browser) -> list[str]:
    """What the page's Content-Security-Policy refused (an inline style, a script...)."""
    return [e["params"]["entry"]["text"] for e in browser.events
            if e["method"] == "Log.entryAdded" and e["params"]["entry"].get("source") == "security"]


def test_kernel_page_renders_card_image_variants_and_usage(site, browser, shots):
    browser.events.clear()
    browser.goto(f"{site.endpoint}/kernels/{DEMO}")
    assert texts(browser, "#card h1") == ["Demo kernel"]
    assert browser.evaluate("getComputedStyle(document.querySelector('#card td:nth-child(2)')).textAlign") == "right"
    assert refusals(browser) == []  # the page itself needs nothing its policy refuses
    image = browser.evaluate("(() => { const i = document.querySelector('#card img');"
                             " return [i.complete, i.naturalWidth, i.naturalHeight, i.alt, i.src]; })()")
    assert image[0] and image[1] > 100 and image[2] > 100, f"the benchmark image did not render: {image}"
    assert image[3] == "Benchmark on the H200" and "/resolve/" in image[4] and image[4].endswith("/media/benchmark.png")
    assert texts(browser, ".badge.trusted") == ["Trusted publisher"]
    assert sorted(texts(browser, "#variants tbody td:first-child")) == sorted(V2_VARIANTS)
    cells = browser.evaluate("Object.fromEntries([...document.querySelectorAll('#variants tbody tr')]"
                             ".map(r => [r.cells[0].textContent.trim(), [...r.cells].slice(1).map(c => c.textContent.trim())]))")
    assert cells["torch213-cxx11-cu130-aarch64-linux"] == ["cuda", "torch 2.13", "13.0", "aarch64-linux", "unsigned"]
    assert cells["torch-cuda"][:2] == ["cuda", "torch (noarch: any version)"]
    assert cells[SIGNED][-1] == f"signed (Rekor {LOG_INDEX})"
    usage = " ".join(texts(browser, "pre.usage"))
    assert f"HF_ENDPOINT={site.endpoint}" in usage and f'get_kernel("{DEMO}", version=2)' in usage
    assert browser.evaluate(RAN_OR_COULD_RUN) == []
    browser.screenshot(shots / "kernel.png")
    browser.goto(f"{site.endpoint}/kernels/{DEMO}?version=1")
    assert sorted(texts(browser, "#variants tbody td:first-child")) == sorted(V1_VARIANTS)


def test_tree_page_lists_files_with_sizes_marks_and_downloads(site, browser, shots):
    browser.goto(f"{site.endpoint}/kernels/{DEMO}/tree/v2/build/{V1_VARIANTS[1]}")
    rows = browser.evaluate("[...document.querySelectorAll('#files tbody tr')]"
                            ".map(r => [...r.cells].map(c => c.textContent.trim()))")
    by_name = {r[0]: r for r in rows}
    assert set(by_name) == {"..", "__init__.py", "metadata.json", "metadata.json.sigstore", "_demo_0a1b2c3.abi3.so"}
    so = by_name["_demo_0a1b2c3.abi3.so"]
    assert so[1] == "200.0 kB" and so[2] in ("Xet", "LFS") and so[3] == "download"
    assert by_name["__init__.py"][2] == ""
    links = browser.evaluate("[...document.querySelectorAll('#files a[download]')].map(a => a.href)")
    assert f"{site.endpoint}/kernels/{DEMO}/resolve/v2/build/{V1_VARIANTS[1]}/metadata.json" in links
    browser.screenshot(shots / "tree.png")


def test_commits_page_lists_history(site, browser, shots):
    browser.goto(f"{site.endpoint}/kernels/{DEMO}/commits/main")
    assert texts(browser, "#commits .title") == ["Kernel card for pages-org/demo v2", "initial commit"]
    browser.screenshot(shots / "commits.png")


def test_model_repository_has_the_same_pages(site, browser):
    browser.goto(f"{site.endpoint}/{MODEL}")
    assert texts(browser, "#card h1") == ["Tiny model"]
    assert browser.evaluate("document.querySelector('#variants')") is None


def test_hostile_card_file_name_and_commit_message_run_nothing(site, browser, shots):
    assert browser.evaluate(RAN_OR_COULD_RUN) == []  # the page before: nothing yet
    # The check itself can fail: the same payloads in a page without escaping or CSP are caught.
    browser.goto("data:text/html,<script>window.pwned=1</script><img src=x onerror=window.pwned=2>"
                 "<a href='javascript:void(0)'>x</a>")
    assert len(browser.evaluate(RAN_OR_COULD_RUN)) >= 4
    for path in (f"/kernels/{HOSTILE}", f"/kernels/{HOSTILE}/tree/v1/build", f"/kernels/{HOSTILE}/commits/main"):
        browser.events.clear()
        browser.goto(site.endpoint + path)
        assert browser.evaluate(RAN_OR_COULD_RUN) == [], path
        ran = [e for e in browser.events if e["method"] != "Log.entryAdded"]
        assert ran == [], f"{path}: the page reported {ran}"
    body = browser.evaluate("document.body.innerText")
    assert "<script>window.pwned='commit'</script> title" in body  # shown as text
    browser.goto(f"{site.endpoint}/kernels/{HOSTILE}")
    card = browser.evaluate("document.querySelector('#card').innerText")
    assert '<script>window.pwned = "script tag"</script>' in card and "onerror=" in card
    assert browser.evaluate("[...document.querySelectorAll('#card a')].map(a => a.textContent)") == []
    browser.screenshot(shots / "hostile-card.png")


def test_private_repository_appears_only_with_a_token_that_reads_it(site, browser):
    def listed() -> list[str]:
        browser.goto(f"{site.endpoint}/kernels")
        return texts(browser, "#kernels tbody td:first-child a")

    assert SECRET not in listed()
    def page_text(repo: str) -> str:  # the 404 page, the name the viewer typed taken out
        browser.goto(f"{site.endpoint}/kernels/{repo}")
        assert texts(browser, "h1") == ["404"]
        return browser.evaluate("document.body.innerText").replace(repo, "NAME")

    assert page_text(SECRET) == page_text("hidden-org/no-such-kernel")  # private reads as absent
    browser.goto(f"{site.endpoint}/kernels/{SECRET}/tree/main/media")
    assert texts(browser, "h1") == ["404"]
    try:
        browser.goto(f"{site.endpoint}/_hub/token")
        browser.evaluate(f"document.querySelector('input[name=token]').value = {site.read_token!r};"
                         "document.querySelector('form.token').submit()")
        browser.wait_for("Page.loadEventFired")
        assert SECRET in texts(browser, "#kernels tbody td:first-child a")
        assert browser.evaluate("document.cookie") == ""  # HttpOnly: no script of the page can read the token
        browser.goto(f"{site.endpoint}/kernels/{SECRET}")
        assert texts(browser, "#card h1") == ["Secret kernel"]
        assert browser.evaluate("document.querySelector('#card img').naturalWidth") > 100  # its image, via the cookie
    finally:
        browser.call("Network.clearBrowserCookies")
    assert SECRET not in listed()
