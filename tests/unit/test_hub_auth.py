"""Tokens, scopes, trusted namespaces and signed URLs (pipeline/hub/auth.py)."""

from __future__ import annotations

import json

import pytest

from pipeline.hub.auth import ANONYMOUS, AuthStore, check_read, check_write
from pipeline.hub.errors import BadRequest, Forbidden, InvalidToken, RepoNotFound, Unauthorized


def test_tokens_are_stored_as_hashes_only(tmp_path):
    auth = AuthStore(tmp_path)
    token = auth.create_token("org", "write")
    stored = (tmp_path / "auth" / "tokens.json").read_text()
    assert token not in stored
    assert json.loads(stored)["tokens"][0]["scopes"] == [["org", "write"]]
    assert (tmp_path / "auth" / "tokens.json").stat().st_mode & 0o077 == 0


def test_scopes_per_namespace(tmp_path):
    auth = AuthStore(tmp_path)
    writer = auth.authenticate("Bearer " + auth.create_token("org", "write"))
    reader = auth.authenticate("Bearer " + auth.create_token("org", "read", user="bob"))
    admin = auth.authenticate("Bearer " + auth.create_token("*", "write"))
    assert writer.can_write("org") and not writer.can_write("other") and not writer.can_read("other")
    assert reader.can_read("org") and not reader.can_write("org") and reader.user == "bob"
    assert admin.can_write("anything")
    assert auth.authenticate(None) is ANONYMOUS
    assert auth.authenticate("Bearer hf_not_a_token_of_this_hub") is None
    assert auth.authenticate("Basic abc") is None


def test_another_process_sees_new_tokens(tmp_path):
    server_view = AuthStore(tmp_path)
    assert server_view.authenticate("Bearer x" * 3) is None
    token = AuthStore(tmp_path).create_token("org", "read")  # e.g. `hub token create`
    assert server_view.authenticate(f"Bearer {token}").can_read("org")
    assert AuthStore(tmp_path).revoke(token)
    assert server_view.authenticate(f"Bearer {token}") is None


def test_admin_token_created_once_or_taken_as_given(tmp_path):
    auth = AuthStore(tmp_path)
    token, created = auth.ensure_admin(None)
    assert created and auth.authenticate(f"Bearer {token}").admin
    assert auth.ensure_admin(None) == ("", False)  # never printed again
    given = "hf_given_admin_token_123456"
    assert auth.ensure_admin(given) == (given, False)
    assert auth.authenticate(f"Bearer {given}").can_write("x")


def test_bad_scope_and_namespace(tmp_path):
    auth = AuthStore(tmp_path)
    with pytest.raises(BadRequest):
        auth.create_token("org", "admin")
    with pytest.raises(BadRequest):
        auth.create_token("../x", "read")


def test_trusted_namespaces(tmp_path):
    auth = AuthStore(tmp_path)
    auth.set_trusted("kernels-community")
    assert AuthStore(tmp_path).trusted_namespaces() == {"kernels-community"}
    auth.set_trusted("kernels-community", False)
    assert auth.trusted_namespaces() == frozenset()


def test_decisions(tmp_path):
    auth = AuthStore(tmp_path)
    reader = auth.authenticate("Bearer " + auth.create_token("org", "read"))
    check_read(ANONYMOUS, "org", private=False, what="x")
    with pytest.raises(RepoNotFound):
        check_read(ANONYMOUS, "org", private=True, what="x")
    check_read(reader, "org", private=True, what="x")
    with pytest.raises(InvalidToken):
        check_write(None, "org", private=False, what="x")
    with pytest.raises(Unauthorized):
        check_write(ANONYMOUS, "org", private=False, what="x")
    with pytest.raises(Forbidden):
        check_write(reader, "org", private=True, what="x")
    with pytest.raises(RepoNotFound):  # private and not yours: invisible, even to a writer elsewhere
        check_write(reader, "other", private=True, what="x")


def test_signed_urls(tmp_path):
    auth = AuthStore(tmp_path)
    expires, sig = auth.sign("kernel:org/k", "a" * 64, "10")
    assert auth.check_signature("kernel:org/k", "a" * 64, "10", expires=str(expires), signature=sig)
    assert not auth.check_signature("kernel:org/k", "a" * 64, "11", expires=str(expires), signature=sig)
    assert not auth.check_signature("kernel:org/k2", "a" * 64, "10", expires=str(expires), signature=sig)
    assert not auth.check_signature("kernel:org/k", "a" * 64, "10", expires="1", signature=sig)
    # The key survives a restart: URLs handed out before it stay valid.
    assert AuthStore(tmp_path).check_signature("kernel:org/k", "a" * 64, "10", expires=str(expires), signature=sig)
