"""Account-level endpoints: whoami, an organization's overview (what
`kernels` reads trustedKernelPublisher from) and the README front matter check."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

import pipeline.hub.paths as paths
from pipeline.hub.auth import Principal
from pipeline.hub.context import Hub
from pipeline.hub.errors import InvalidToken, RepoNotFound, Unauthorized
from pipeline.hub.http import invalid_params, json_body


def _whoami_body(who: Principal) -> dict:
    namespaces = sorted({ns for ns, _ in who.scopes if ns != "*"})
    role = "write" if any(s == "write" for _, s in who.scopes) else "read"
    return {
        "type": "user",
        "id": who.user,
        "name": who.user,
        "fullname": who.user,
        "email": None,
        "emailVerified": False,
        "isPro": False,
        "canPay": False,
        "orgs": [{"type": "org", "name": ns, "fullname": ns, "roleInOrg": who.scope_for(ns)} for ns in namespaces],
        "auth": {
            "type": "access_token",
            "accessToken": {
                "displayName": who.token_name,
                "role": role,
                "scopes": [{"namespace": ns, "scope": sc} for ns, sc in who.scopes],
                "admin": who.admin,
            },
        },
    }


async def whoami(hub: Hub, request: Request) -> Response:
    who = hub.principal(request)
    if who is None:
        raise InvalidToken("Invalid credentials in Authorization header")
    if who.anonymous:
        raise Unauthorized("Authorization header is required to call whoami")
    return JSONResponse(_whoami_body(who))


async def organization_overview(hub: Hub, request: Request) -> Response:
    invalid_params(request)
    ns = paths.name_part(request.path_params["ns"], "organization")
    trusted = ns in hub.auth.trusted_namespaces()
    # A namespace exists for others only through what they may see: its trust
    # flag or a public repository. Its own readers see it whatever it holds.
    known = trusted or hub.reader(request).can_read(ns) or hub.storage.has_public(ns)
    if not known:
        raise RepoNotFound(f"Organization {ns} not found")
    return JSONResponse(
        {
            "name": ns,
            "fullname": ns,
            "avatarUrl": "",
            "type": "org",
            "isVerified": False,
            "trustedKernelPublisher": trusted,
        }
    )


def front_matter_errors(content: str) -> list[dict]:
    if not content.startswith("---"):
        return []
    end = content.find("\n---", 3)
    if end < 0:
        return [{"message": "README.md front matter is not closed with '---'"}]
    try:
        import yaml  # optional: only this check needs it

        data = yaml.safe_load(content[3:end])
    except Exception as exc:  # yaml.YAMLError and friends
        return [{"message": f"README.md front matter is not valid YAML: {exc}"}]
    if data is not None and not isinstance(data, dict):
        return [{"message": "README.md front matter must be a YAML mapping"}]
    return []


async def validate_yaml(hub: Hub, request: Request) -> Response:
    body = await json_body(request)
    content = body.get("content", "") if isinstance(body, dict) else ""
    errors = front_matter_errors(content) if isinstance(content, str) else []
    return JSONResponse({"errors": errors, "warnings": []}, status_code=400 if errors else 200)
