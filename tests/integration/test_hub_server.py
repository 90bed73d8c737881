"""EmbeddedHub and the server's start-up (pipeline/hub/server.py)."""

from __future__ import annotations

import httpx
import pytest

from pipeline.errors import HubError
from pipeline.hub import EmbeddedHub, client_env


def _whoami(hub: EmbeddedHub, token: str) -> int:
    return httpx.get(f"{hub.endpoint}/api/whoami-v2", headers={"Authorization": f"Bearer {token}"}).status_code


def test_embedded_hub_session_token_is_revoked_at_stop(tmp_path):
    with EmbeddedHub(tmp_path, trusted_namespaces=["org"]) as hub:
        assert hub.endpoint.startswith("http://127.0.0.1:") and hub.port > 0
        token = hub.admin_token
        assert _whoami(hub, token) == 200
        assert hub.client_env() == {"HF_ENDPOINT": hub.endpoint}
        reader = hub.create_token("org", "read")
        assert _whoami(hub, reader) == 200
        overview = httpx.get(f"{hub.endpoint}/api/organizations/org/overview").json()
        assert overview["trustedKernelPublisher"] is True
    with EmbeddedHub(tmp_path) as again:  # same root, new session
        assert again.admin_token != token
        assert _whoami(again, token) == 401
        assert _whoami(again, reader) == 200  # tokens made for others stay


def test_given_admin_token_is_kept(tmp_path):
    token = "hf_given_token_for_embedded_hub_1"
    with EmbeddedHub(tmp_path, admin_token=token) as hub:
        assert hub.admin_token == token and _whoami(hub, token) == 200
    with EmbeddedHub(tmp_path) as hub:
        assert _whoami(hub, token) == 200


def test_one_hub_per_root(tmp_path):
    with EmbeddedHub(tmp_path):
        with pytest.raises(HubError) as err:
            EmbeddedHub(tmp_path).start()
        assert err.value.code == "hub-root-busy"
    EmbeddedHub(tmp_path).start().stop()  # released at stop


def test_client_env():
    assert client_env("http://h:1") == {"HF_ENDPOINT": "http://h:1"}
