"""The embedded Kernel Hub: a Hugging Face Hub-compatible server that the
unmodified `huggingface_hub` client and `kernels.get_kernel` talk to.

    from pipeline.hub import EmbeddedHub
    with EmbeddedHub(root, trusted_namespaces=["my-org"]) as hub:
        hub.endpoint, hub.admin_token, hub.create_token("my-org", "read"), hub.client_env()

`python -m pipeline hub serve --root DIR` runs the same server in the foreground.
Modules: app (ASGI app, routing, access log), routes (the API), transfer (Git
LFS uploads and /resolve downloads), storage (bare
git repositories), lfs (content-addressed LFS store), auth (tokens, scopes,
trusted namespaces), errors (domain error -> HTTP status + X-Error-Code),
paths (validation of every client-supplied name), server (running it).
"""

from __future__ import annotations

import os
from pathlib import Path

from pipeline.hub.auth import AuthStore
from pipeline.hub.server import EmbeddedHub, client_env, serve


def default_root() -> Path:
    """Where the embedded hub keeps its data when no --root is given."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "kernel-pipeline" / "hub"


__all__ = ["AuthStore", "EmbeddedHub", "client_env", "default_root", "serve"]
