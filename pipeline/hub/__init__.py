"""The embedded Kernel Hub: a Hugging Face Hub-compatible server that the
unmodified `huggingface_hub` client and `kernels.get_kernel` talk to.

    from pipeline.hub import EmbeddedHub
    with EmbeddedHub(root, trusted_namespaces=["my-org"]) as hub:
        hub.endpoint, hub.admin_token, hub.create_token("my-org", "read"), hub.client_env()

`python -m pipeline hub serve --root DIR` runs the same server in the foreground.

Modules (each imports only the ones above it; none imports this package):

    errors, paths          domain errors -> HTTP; validation of every client-supplied name
    lfs, objects           content-addressed LFS store; git objects (gitdb) of one repository
    repository             one repository: refs, trees, blobs
    commits                the NDJSON commit payload and applying it as one git commit
    registry, recovery     which repositories exist, create/delete, locks; repair after a crash
    auth                   tokens, scopes, trusted namespaces, signed URLs
    app, http, context     ASGI routing and error responses; reading requests; who may do what
    api_account, api_repos, api_write, transfer    the endpoints
    routes, server         the route table; running it (uvicorn, one server per root)
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
