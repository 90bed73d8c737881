"""`python -m pipeline hub serve | token | trust` (pipeline/commands/hub.py)."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

from pipeline.cli import main
from hubtesting import REPO_ROOT, ServerProcess, subprocess_env


def _serve_once(root):
    """Start `hub serve` without --token, make one request, stop it; returns
    (the token line on stdout or "", stderr)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipeline", "hub", "serve", "--root", str(root), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(),
        cwd=REPO_ROOT,
    )
    try:
        endpoint = proc.stdout.readline().strip().split("=", 1)[1]  # HF_ENDPOINT=... comes first
        httpx.get(f"{endpoint}/api/whoami-v2")
    finally:
        proc.terminate()
        out, err = proc.stdout.read(), proc.stderr.read()  # read() also drains what readline() buffered
        proc.wait(timeout=30)
    token_lines = [line for line in out.splitlines() if line.startswith("PIPELINE_HUB_TOKEN=")]
    return (token_lines[0] if token_lines else ""), err


def test_help_explains_hf_endpoint(capsys):
    for argv in (["hub", "--help"], ["hub", "serve", "--help"]):
        try:
            main(argv)
        except SystemExit as exc:
            assert exc.code == 0
        out = capsys.readouterr().out
        # Xet is served: nothing else for a client to set.
        assert "HF_ENDPOINT" in out and "HF_HUB_DISABLE_XET" not in out
    with pytest.raises(SystemExit):  # a token on the command line is gone
        main(["hub", "serve", "--token", "hf_visible_to_every_local_user_123"])
    assert "--token" in capsys.readouterr().err


def test_admin_token_is_created_once_and_printed_once(tmp_path):
    root = tmp_path / "hub"
    token_line, err = _serve_once(root)
    assert token_line.startswith("PIPELINE_HUB_TOKEN=hf_")
    token = token_line.split("=", 1)[1]
    assert token not in (root / "auth" / "tokens.json").read_text()
    assert "GET /api/whoami-v2 401" in err  # each request is logged on stderr
    again, _ = _serve_once(root)
    assert again == ""  # never shown a second time
    with ServerProcess(root, token=token) as server:  # and it still works
        me = httpx.get(f"{server.endpoint}/api/whoami-v2", headers={"Authorization": f"Bearer {token}"}).json()
        assert me["name"] == "admin"


def test_one_server_per_root(tmp_path):
    with ServerProcess(tmp_path / "hub", token="hf_one_server_per_root_token_1"):
        out = subprocess.run(
            [sys.executable, "-m", "pipeline", "hub", "serve", "--root", str(tmp_path / "hub"), "--port", "0"],
            capture_output=True,
            text=True,
            env=subprocess_env(),
            cwd=REPO_ROOT,
            timeout=60,
        )
    assert out.returncode == 11 and "hub-root-busy" in out.stderr and "Traceback" not in out.stderr


def test_token_and_trust_commands(tmp_path, capsys):
    root = tmp_path / "hub"
    # A root no hub has served is refused (a typo must not start a second hub).
    assert main(["hub", "token", "--root", str(root), "--namespace", "org", "--scope", "read"]) == 11
    assert "hub-no-data" in capsys.readouterr().err and not root.exists()
    with ServerProcess(root, token="hf_token_trust_admin_token_12") as server:
        assert main(["hub", "token", "--root", str(root), "--namespace", "org", "--scope", "read"]) == 0
        token = capsys.readouterr().out.strip()
        assert main(["hub", "trust", "org", "--root", str(root)]) == 0
        assert "org" in capsys.readouterr().out
        me = httpx.get(f"{server.endpoint}/api/whoami-v2", headers={"Authorization": f"Bearer {token}"}).json()
        assert me["auth"]["accessToken"]["scopes"] == [{"namespace": "org", "scope": "read"}]
        overview = httpx.get(f"{server.endpoint}/api/organizations/org/overview").json()
        assert overview["trustedKernelPublisher"] is True
        # Revoking while the server runs takes effect at once.
        assert main(["hub", "trust", "org", "--revoke", "--root", str(root), "--json"]) == 0
        # Untrusted and without a public repository: only its own readers still see it.
        assert httpx.get(f"{server.endpoint}/api/organizations/org/overview").status_code == 404
        auth = {"Authorization": f"Bearer {token}"}
        mine = httpx.get(f"{server.endpoint}/api/organizations/org/overview", headers=auth)
        assert mine.json()["trustedKernelPublisher"] is False


def test_serve_reads_the_admin_token_from_a_file(tmp_path):
    token = "hf_token_from_a_file_0123456789"
    (tmp_path / "token").write_text(token + "\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipeline", "hub", "serve", "--root", str(tmp_path / "hub"), "--port", "0",
         "--token-file", str(tmp_path / "token")],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=subprocess_env(), cwd=REPO_ROOT,
    )  # fmt: skip
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("HF_ENDPOINT=")
        who = httpx.get(f"{line.split('=', 1)[1]}/api/whoami-v2", headers={"Authorization": f"Bearer {token}"})
        assert who.status_code == 200 and who.json()["auth"]["accessToken"]["admin"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    missing = subprocess.run(
        [sys.executable, "-m", "pipeline", "hub", "serve", "--root", str(tmp_path / "hub"), "--token-file",
         str(tmp_path / "nope")], capture_output=True, text=True, env=subprocess_env(), cwd=REPO_ROOT,
    )  # fmt: skip
    assert missing.returncode == 11 and "hub-token-file" in missing.stderr


def test_fsck_reports_damage_with_the_fix_and_exits_1(tmp_path, capsys):
    from pipeline.hub.commits import AddBlob, commit
    from pipeline.hub.paths import repo_id
    from pipeline.hub.registry import Storage

    root = tmp_path / "hub"
    storage = Storage(root)
    good = storage.create(repo_id("kernel", "org", "good"), private=False, author="a")
    commit(good, "main", [AddBlob("ok.txt", good.write_blob(b"fine"))], summary="ok")
    assert main(["hub", "fsck", "--root", str(root)]) == 0
    assert "is clean" in capsys.readouterr().err

    bad = storage.create(repo_id("kernel", "org", "bad"), private=False, author="a")
    # What an older hub let through: a path git and Windows take for .git.
    commit(bad, "main", [AddBlob(".GIT/config", bad.write_blob(b"x"))], summary="alias")
    head = bad.branch_head("main")
    obj = bad.dir / "objects" / head[:2] / head[2:]
    obj.unlink()  # and a head whose commit object is gone
    assert main(["hub", "fsck", "--root", str(root)]) == 1
    out = capsys.readouterr().out
    assert f"{bad.dir}: hub-repo-damaged: refs/heads/main points to commit {head}, which is incomplete" in out
    assert "fix: restore the repository from a backup; to drop it, `git -C" in out
    assert str(good.dir) not in out
    assert main(["hub", "fsck", "--root", str(tmp_path / "empty")]) == 11
