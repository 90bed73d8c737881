"""`hub serve | token | trust | fsck`: run and administer the embedded Kernel Hub."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from pipeline.console import Output
from pipeline.errors import HubError

DAMAGED = "hub-repo-damaged"  # the code of each line `hub fsck` reports

HELP = "the embedded Kernel Hub (hub serve)"
DESCRIPTION = """\
The embedded Kernel Hub: a server that the unmodified huggingface_hub client and
kernels.get_kernel use as if it were the Hugging Face Hub. Repositories are bare
git repositories under --root; large files go through Xet (hf_xet, content
stored once) or Git LFS; `git clone` works read-only.

Point a client at it:

    export HF_ENDPOINT=http://127.0.0.1:8000   # where huggingface_hub and kernels send requests
    export HF_TOKEN=hf_...                      # a token from this hub (writes, private repos)

commands:
  serve   run the server in the foreground (logs each request on stderr)
  token   create a read or write token for a namespace
  trust   mark a namespace as a trusted kernel publisher (trustedKernelPublisher)
  fsck    report repositories in a bad state, with the fix (exit 1 when any)
"""

SERVE_DESCRIPTION = """\
Serve the hub from --root until interrupted. On the first start an admin token
(write access to every namespace) is created and printed once, unless
PIPELINE_HUB_TOKEN or --token-file gives one (never on the command line, where
every local user could read it). Stdout gets shell-friendly lines when the
server is listening:

    HF_ENDPOINT=http://127.0.0.1:8000
    HUB_PAGES=http://127.0.0.1:8000/kernels   (the pages to read in a browser)
    PIPELINE_HUB_TOKEN=hf_...        (only when the token was just created)

Clients: HF_ENDPOINT=<that url> HF_TOKEN=<token> python ...
"""


def _default_root() -> Path:
    from pipeline.hub import default_root

    return default_root()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="hub_command", metavar="COMMAND")
    _add_serve(sub)
    _add_admin(sub)
    parser.set_defaults(_hub_parser=parser)


def _add_serve(sub) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    # allow_abbrev=False: `--token X` must not pass for `--token-file X` (a token on the command line).
    serve = sub.add_parser(
        "serve", help="run the hub server", description=SERVE_DESCRIPTION, formatter_class=fmt, allow_abbrev=False
    )
    serve.add_argument(
        "--root",
        type=Path,
        default=None,
        help="data directory (default: $XDG_DATA_HOME/kernel-pipeline/hub, i.e. ~/.local/share/kernel-pipeline/hub)",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    serve.add_argument("--port", type=int, default=8000, help="port (0 = any free port; default: %(default)s)")
    serve.add_argument(
        "--token-file",
        type=Path,
        default=None,
        metavar="PATH",
        help="read the admin token from PATH (default: $PIPELINE_HUB_TOKEN, else created on first start)",
    )
    serve.add_argument(
        "--trust",
        action="append",
        default=[],
        metavar="NAMESPACE",
        help="mark NAMESPACE as a trusted kernel publisher (repeatable)",
    )
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    serve.add_argument(
        "--json", action="store_true", help="print the endpoint (and a new admin token) as one JSON line"
    )


def _add_admin(sub) -> None:
    token = sub.add_parser(
        "token",
        help="create a token",
        description="Create a token with read or write scope "
        "on one namespace ('*' = all). The token is printed once; only its hash is stored.",
    )
    token.add_argument("--root", type=Path, default=None, help="data directory of the hub")
    token.add_argument("--namespace", required=True, help="namespace the token may use, or '*'")
    token.add_argument("--scope", choices=["read", "write"], default="write")
    token.add_argument("--user", default=None, help="user name the token acts as (default: the namespace)")
    token.add_argument("--json", action="store_true")

    trust = sub.add_parser(
        "trust",
        help="mark a namespace as a trusted kernel publisher",
        description="kernels.get_kernel loads kernels without trust_remote_code only from "
        "namespaces whose organization overview says trustedKernelPublisher: true.",
    )
    trust.add_argument("namespace")
    trust.add_argument("--root", type=Path, default=None, help="data directory of the hub")
    trust.add_argument("--revoke", action="store_true", help="remove the trust instead")
    trust.add_argument("--json", action="store_true")

    fsck = sub.add_parser(
        "fsck",
        help="check every repository",
        description="Check every repository under --root: refs pointing to incomplete commits, LFS or Xet "
        "content that is not stored, paths the hub refuses, and `git fsck`. Prints each problem with its fix; "
        "exits 1 when there is any. Reads only (a running server is fine).",
    )
    fsck.add_argument("--root", type=Path, default=None, help="data directory of the hub")
    fsck.add_argument("--json", action="store_true")


def run(args: argparse.Namespace, output: Output) -> int:
    # The hub (uvicorn, starlette, gitpython) loads only for `hub`: every CLI verb imports this module.
    from pipeline.hub.auth import AuthStore

    command = getattr(args, "hub_command", None)
    if command is None:
        args._hub_parser.print_help()
        return 2
    root = (args.root or _default_root()).expanduser()
    try:
        if command == "serve":
            return _serve(args, root, output)
        if command == "fsck":
            return _fsck(root, output)
        _require_data(root)  # a token or trust entry made at a typo would belong to no hub
        return _administer(args, command, AuthStore(root), output)
    except OSError as exc:
        raise HubError(
            f"cannot use {root}: {exc.strerror or exc}", hint="give a writable --root", path=str(root)
        ) from None


def _administer(args: argparse.Namespace, command: str, auth, output: Output) -> int:
    if command == "token":
        token = auth.create_token(args.namespace, args.scope, user=args.user)
        if output.json_mode:
            output.emit_json({"token": token, "namespace": args.namespace, "scope": args.scope})
        else:
            output.result(token)
            output.info(f"{args.scope} token for namespace '{args.namespace}' (shown once; only its hash is kept)")
        return 0
    if command == "trust":
        auth.set_trusted(args.namespace, not args.revoke)
        trusted = sorted(auth.trusted_namespaces())
        if output.json_mode:
            output.emit_json({"trusted": trusted})
        else:
            output.result(f"trusted kernel publishers: {', '.join(trusted) or '(none)'}")
        return 0
    return 2


def _require_data(root: Path) -> None:
    if not (root / "repos").is_dir():
        raise HubError(f"{root} holds no hub data", path=str(root), code="hub-no-data",
                       hint="give the --root the server uses (`hub serve --root DIR` creates it on first start)")


def _fsck(root: Path, output: Output) -> int:
    from pipeline.hub.recovery import fsck_root

    _require_data(root)
    problems = fsck_root(root)
    if output.json_mode:
        output.emit_json({"root": str(root), "problems": [vars(p) for p in problems]})
    else:
        for p in problems:
            output.result(f"{p.repo}: {DAMAGED}: {p.problem}")
            output.result(f"  fix: {p.fix}")
        output.info(f"hub fsck: {len(problems)} problem(s) in {root}" if problems else f"hub fsck: {root} is clean")
    return 1 if problems else 0


def _admin_token(args: argparse.Namespace) -> str | None:
    if args.token_file is not None:
        try:
            token = args.token_file.expanduser().read_text().strip()
        except OSError as exc:
            raise HubError(
                f"cannot read the token file {args.token_file}: {exc.strerror}",
                hint="give a readable file holding one token",
                code="hub-token-file",
                path=str(args.token_file),
            ) from None
        if not token:
            raise HubError(f"{args.token_file} is empty", hint="write the admin token into it", code="hub-token-file")
        return token
    return os.environ.get("PIPELINE_HUB_TOKEN") or None


def _serve(args: argparse.Namespace, root: Path, output: Output) -> int:
    from pipeline.hub.server import serve

    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )

    def on_ready(endpoint: str, prepared) -> None:
        if output.json_mode:
            output.emit_json(
                {
                    "endpoint": endpoint,
                    "pages": f"{endpoint}/kernels",
                    "root": str(root),
                    "admin_token": prepared.admin_token if prepared.admin_token_created else None,
                }
            )
        else:
            print(f"HF_ENDPOINT={endpoint}", flush=True)
            print(f"HUB_PAGES={endpoint}/kernels", flush=True)
            if prepared.admin_token_created:
                print(f"PIPELINE_HUB_TOKEN={prepared.admin_token}", flush=True)
        output.info(f"hub: serving {root} at {endpoint}")
        if prepared.admin_token_created:
            output.info("hub: a new admin token was created and printed above; it is not shown again")
        output.info(f"hub: clients: HF_ENDPOINT={endpoint} HF_TOKEN=<token>")
        output.info(f"hub: in a browser: {endpoint}/kernels (public repositories; sign in there with a token for private ones)")
        if args.host not in ("127.0.0.1", "localhost", "::1"):
            output.info("hub: warning: plain HTTP on a non-loopback address; put TLS in front of it")

    serve(
        root,
        host=args.host,
        port=args.port,
        admin_token=_admin_token(args),
        trusted_namespaces=args.trust,
        on_ready=on_ready,
    )
    return 0
