"""The embedded Kernel Hub: a Hugging Face Hub-compatible server that the
unmodified `huggingface_hub` client and `kernels.get_kernel` talk to.

    from pipeline.hub import EmbeddedHub
    with EmbeddedHub(root, trusted_namespaces=["my-org"]) as hub:
        hub.endpoint, hub.admin_token, hub.create_token("my-org", "read"), hub.client_env()

`python -m pipeline hub serve --root DIR` runs the same server in the foreground.

Modules (each imports only modules, never this package):

    errors, paths, jsonlimit, ranges   domain errors -> HTTP; validation of every client-supplied name;
                                       bounded JSON; Range headers
    lfs, objects                       content-addressed LFS store; git objects (gitdb), commit quarantine
    repository                         one repository: refs (branches, tags), trees, blobs
    commits                            the NDJSON commit payload and applying it as one git commit
    registry, recovery                 which repositories exist, create/delete, locks; repair at start, fsck
    xet_hash, xet_format, xet_store    Xet protocol 1.0: hashes, xorb/shard formats, the chunk store
    auth, content                      tokens, scopes, signed URLs; where a large file's bytes live
    app, http, context                 ASGI routing and error responses; reading requests; who may do what
    api_account, api_repos, api_write, transfer, downloads, xet_api, githttp    the endpoints
    routes, server                     the route table; running it (uvicorn, one server per root)
    catalog, card_html                 pages: what they show of a repository; the card as safe HTML
    pages, page_session, page_html     pages: the endpoints (/kernels, /kernels/{ns}/{name}...), the token
                                       cookie, templates (templates/) and security headers
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
