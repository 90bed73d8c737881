"""The hub's pages over HTTP (the browser tests are in test_hub_pages_browser.py):
status codes, security headers, escaping in the HTML itself, who sees a
private repository, the sign-in cookie, and that the API is unchanged."""

from __future__ import annotations

import httpx
import pytest

from hubtesting import ServerProcess
from hub_pages_support import DEMO, HOSTILE, HOSTILE_FILE, MODEL, SECRET, publish_examples
from pipeline.hub import EmbeddedHub
from pipeline.hub.context import TOKEN_COOKIE

PAGES = ["/kernels", f"/kernels/{DEMO}", f"/kernels/{DEMO}/tree/v2", f"/kernels/{DEMO}/tree/v2/build",
         f"/kernels/{DEMO}/commits/main", f"/{MODEL}", f"/{MODEL}/tree/main", f"/{MODEL}/commits/main", "/_hub/token"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    with EmbeddedHub(tmp_path_factory.mktemp("hub"), trusted_namespaces=["pages-org"]) as hub:
        published = publish_examples(hub.endpoint, hub.admin_token, hub.create_token)
        yield hub, published


@pytest.fixture
def client(site):
    hub, _ = site
    with httpx.Client(base_url=hub.endpoint, follow_redirects=False, timeout=30) as c:
        yield c


@pytest.mark.parametrize("path", PAGES)
def test_every_page_is_html_with_a_policy_that_allows_no_script(client, path):
    r = client.get(path)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    csp = r.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script" not in csp and "frame-ancestors 'none'" in csp
    assert r.headers["x-content-type-options"] == "nosniff" and r.headers["cache-control"] == "no-store"
    assert "<script" not in r.text


def test_home_leads_to_the_listing_and_the_stylesheet_is_served(client):
    assert client.get("/").headers["location"] == "/kernels"
    css = client.get("/_hub/hub.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css") and "table.list" in css.text


def test_names_paths_and_messages_are_escaped_in_the_html(client):
    tree = client.get(f"/kernels/{HOSTILE}/tree/v1/build").text
    assert HOSTILE_FILE not in tree and "&lt;img src=x onerror=window.pwned=&#39;file-name&#39;&gt;.txt" in tree
    history = client.get(f"/kernels/{HOSTILE}/commits/main").text
    assert "<script>window.pwned" not in history and "&lt;script&gt;window.pwned=&#39;commit&#39;&lt;/script&gt;" in history
    card = client.get(f"/kernels/{HOSTILE}").text
    assert "<script>" not in card and "<svg" not in card and "&lt;svg onload=" in card
    assert not any(f'{attr}="{scheme}' in card.lower() for attr in ("href", "src") for scheme in ("javascript", "data", "vbscript"))


def test_refusals_are_html_pages_with_the_api_status(client):
    cases = {
        f"/kernels/{DEMO}?version=9": 404,  # no branch v9
        f"/kernels/{DEMO}?version=x": 400,
        f"/kernels/{DEMO}/tree/no-such-branch": 404,
        f"/kernels/{DEMO}/tree/main/no/such/folder": 404,
        f"/kernels/{DEMO}/tree/main/..%2F..%2Fauth": 400,
        f"/kernels/{DEMO}/commits/main?p=x": 400,
        "/kernels/pages-org/absent": 404,
        "/kernels/pages-org/bad%0Aname": 400,
    }
    for path, status in cases.items():
        r = client.get(path)
        assert (r.status_code, r.headers["content-type"].split(";")[0]) == (status, "text/html"), path
        assert "Content-Security-Policy" in r.headers


def test_a_file_in_the_tree_leads_to_its_download(client):
    r = client.get(f"/kernels/{DEMO}/tree/main/media/benchmark.png")
    assert r.status_code == 303 and r.headers["location"] == f"/kernels/{DEMO}/resolve/main/media/benchmark.png"
    assert client.get(r.headers["location"]).content[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_api_still_answers_json(client):
    assert client.get(f"/api/kernels/{DEMO}").json()["id"] == DEMO
    missing = client.get("/api/kernels/pages-org/absent")
    assert missing.status_code == 404 and missing.headers["x-error-code"] == "RepoNotFound"
    assert client.get("/api/whoami-v2").status_code == 401


def test_a_private_repository_is_absent_without_a_token_that_reads_it(site, client):
    hub, published = site
    other = hub.create_token("pages-org", "write")  # a token, but not for hidden-org
    for headers in ({}, {"Authorization": f"Bearer {other}"}):
        assert SECRET not in client.get("/kernels", headers=headers).text
        for path in (f"/kernels/{SECRET}", f"/kernels/{SECRET}/tree/main", f"/kernels/{SECRET}/commits/main",
                     f"/kernels/{SECRET}/resolve/main/media/secret.png"):
            assert client.get(path, headers=headers).status_code == 404, path
    reader = {"Authorization": f"Bearer {published.read_token}"}
    assert SECRET in client.get("/kernels", headers=reader).text
    assert client.get(f"/kernels/{SECRET}", headers=reader).status_code == 200


def test_signing_in_keeps_the_token_in_an_httponly_strict_cookie(site, client):
    hub, published = site
    r = client.post("/_hub/token", data={"token": published.read_token})
    assert r.status_code == 303 and r.headers["location"] == "/kernels"
    cookie = r.headers["set-cookie"].lower()
    assert f"{TOKEN_COOKIE}=" in cookie and "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
    assert SECRET in client.get("/kernels").text  # the client sends the cookie back
    assert client.get(f"/kernels/{SECRET}/resolve/main/media/secret.png").status_code == 200  # the card's image too
    out = client.post("/_hub/logout")
    assert out.status_code == 303 and TOKEN_COOKIE not in client.cookies
    assert SECRET not in client.get("/kernels").text


def test_sign_in_refuses_unknown_tokens_and_other_sites(site, client):
    hub, published = site
    assert client.post("/_hub/token", data={"token": "hf_not_a_token_of_this_hub"}).status_code == 401
    forged = client.post("/_hub/token", data={"token": published.read_token}, headers={"Origin": "http://evil.example"})
    assert forged.status_code == 403 and "set-cookie" not in forged.headers
    assert client.post("/_hub/logout", headers={"Origin": "http://evil.example"}).status_code == 403


def test_the_cookie_never_authorises_a_write(site, client):
    hub, _ = site
    client.cookies.set(TOKEN_COOKIE, hub.admin_token)  # even the admin token, as a cookie
    assert client.get("/api/whoami-v2").status_code == 401
    r = client.post("/api/repos/create", json={"type": "kernel", "name": "csrf", "organization": "pages-org"})
    assert r.status_code == 401
    assert client.get("/api/kernels/pages-org/csrf").status_code == 404


def test_hub_serve_prints_the_listing_page_next_to_hf_endpoint(tmp_path):
    server = ServerProcess(tmp_path / "hub", token="hf_pages_serve_test_token_0123").start()
    try:
        assert server.proc.stdout.readline().strip() == f"HUB_PAGES={server.endpoint}/kernels"
        r = httpx.get(f"{server.endpoint}/kernels", timeout=30)
        assert r.status_code == 200 and "No kernel is published here yet" in r.text
    finally:
        server.stop()


def test_the_hub_socket_gets_tcp_nodelay_on_each_connection():
    """Without TCP_NODELAY every reply on a kept-alive connection waits ~40 ms for
    the client's delayed ACK (benchmarks/hub_pages.py measured 45 ms for a 3 kB
    stylesheet); asyncio sets it only on sockets created with proto IPPROTO_TCP."""
    import asyncio
    import socket

    from pipeline.hub.server import bind

    async def accepted_nodelay() -> int:
        listener = bind("127.0.0.1", 0)
        seen: asyncio.Future = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport) -> None:
                seen.set_result(transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
        try:
            return await asyncio.wait_for(seen, 10)
        finally:
            writer.close()
            server.close()

    assert asyncio.run(accepted_nodelay()) == 1
