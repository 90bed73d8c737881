"""The Xet storage protocol as the Hugging Face Hub serves it to hf_xet
(Xet protocol specification 1.0; CAS API v1):

    GET  /api/T/{repo}/xet-{read|write}-token[/{rev}]  Xet access token for one repository
    GET  /_xet/v1/reconstructions/{file}               file reconstruction (terms + signed fetch URLs), Range
    GET  /_xet/v1/chunks/default-merkledb/{chunk}      global dedup: a shard listing the xorb holding it
    HEAD|POST /_xet/v1/xorbs/default/{xorb}            xorb upload, verified against its hash
    POST /_xet/v1/shards                               shard upload: registers files after checking them
    GET  /_xet/data/{xorb}?range=&expires=&sig=        signed byte range of a stored xorb (206)
    *    /_xet/v2/...                                  501, so hf_xet falls back to v1

`casUrl` is `<hub>/_xet`. The access token is a signed (repository, scope,
expiry) triple, so the CAS needs no state of its own to check it.
"""

from __future__ import annotations

import base64
import logging
import secrets
from pathlib import Path
from urllib.parse import urlencode

import anyio
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response

import pipeline.hub.paths as paths
from pipeline.hub.context import Hub
from pipeline.hub.errors import BadRequest, Forbidden, NotImplementedByHub, PayloadTooLarge, RepoNotFound, Unauthorized
from pipeline.hub.http import base_url, invalid_params, read_body
from pipeline.hub.ranges import parse_range
from pipeline.hub.xet_format import MAX_SHARD, MAX_XORB, dedup_shard, parse_shard
from pipeline.hub.xet_hash import from_hex, to_hex
from pipeline.hub.xet_store import FileRecord, RepoXet

log = logging.getLogger("pipeline.hub")

TOKEN_TTL_S = 3600
URL_TTL_S = 3600
MAX_XORB_BODY = MAX_XORB + 4 * 1024 * 1024  # chunks plus xet-core's footer
_WRITE_BATCH = 1 << 20


def cas_url(hub: Hub, request: Request) -> str:
    """`<hub>/_xet/<store id>`: the id keeps hf_xet's per-URL caches of two stores apart."""
    return f"{base_url(request)}/_xet/{hub.xet.store_id}"


def same_store(hub: Hub, request: Request) -> None:
    """A CAS URL of another store (a Hub served earlier at this address) is refused."""
    store = request.path_params.get("store")
    if store and store != hub.xet.store_id:
        raise RepoNotFound("this CAS URL names another Hub's Xet store: ask the Hub for a new Xet token")


# -- tokens --------------------------------------------------------------------------------
async def xet_token(hub: Hub, request: Request) -> Response:
    rid = hub.api_rid(request)
    scope = request.path_params["scope"]
    if scope == "write":
        hub.open_write(request, rid)
    else:
        hub.open_read(request, rid)
    rev = request.path_params.get("rev")
    if rev and rev != "None":  # huggingface_hub sends "None" for a pull request it has not opened yet
        paths.revision(rev)
    expires, mac = hub.auth.sign("xet-token", str(rid), scope, ttl_s=TOKEN_TTL_S)
    encoded = base64.urlsafe_b64encode(str(rid).encode()).decode().rstrip("=")
    token = f"xet.{encoded}.{scope}.{expires}.{mac}"
    url = cas_url(hub, request)
    headers = {"X-Xet-Cas-Url": url, "X-Xet-Access-Token": token, "X-Xet-Token-Expiration": str(expires)}
    return JSONResponse({"accessToken": token, "exp": expires, "casUrl": url}, headers=headers)


def grant(hub: Hub, request: Request, need: str) -> RepoXet:
    """The repository a CAS request's Xet token was issued for; 401 without a
    valid token, 403 when a read token is used to write."""
    scheme, _, token = (request.headers.get("authorization") or "").partition(" ")
    parts = token.strip().split(".")
    if scheme.lower() != "bearer" or len(parts) != 5 or parts[0] != "xet":
        raise Unauthorized("a Xet access token is required: ask the hub for /xet-read-token or /xet-write-token")
    _, encoded, scope, expires, mac = parts
    try:
        rid_text = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        raise Unauthorized("malformed Xet access token") from None
    if not hub.auth.check_signature("xet-token", rid_text, scope, expires=expires, signature=mac):
        raise Unauthorized("Xet access token is invalid or expired: refresh it")
    if need == "write" and scope != "write":
        raise Forbidden("this Xet token is read-only: ask for /xet-write-token")
    type_, _, repo = rid_text.partition(":")
    rid = paths.parse_repo_id(type_, repo)
    if not hub.storage.exists(rid):
        raise RepoNotFound(f"Repository Not Found for {rid.type} {rid.id}")
    return RepoXet(hub.storage.repo_dir(rid))


def _hash_param(request: Request, name: str) -> bytes:
    invalid_params(request)
    h = from_hex(request.path_params[name])
    if h is None:
        raise BadRequest(f"{name} must be 64 lowercase hex digits")
    return h


# -- download ------------------------------------------------------------------------------
def _fetch_info(hub: Hub, request: Request, record: FileRecord, terms: list) -> dict:
    fetch: dict[str, list[dict]] = {}
    for t in terms:
        index = hub.xet.xorb_index(t.xorb) or []
        first, last = index[t.start], index[t.end - 1]
        lo, hi = first.offset, last.offset + last.stored - 1
        name = to_hex(t.xorb)
        expires, sig = hub.auth.sign("xet-data", name, f"{lo}-{hi}", ttl_s=URL_TTL_S)
        query = urlencode({"range": f"{lo}-{hi}", "expires": expires, "sig": sig})
        entry = {"range": {"start": t.start, "end": t.end}, "url": f"{cas_url(hub, request)}/data/{name}?{query}",
                 "url_range": {"start": lo, "end": hi}}  # fmt: skip
        if entry not in fetch.setdefault(name, []):
            fetch[name].append(entry)
    return fetch


async def reconstruction(hub: Hub, request: Request) -> Response:
    repo = grant(hub, request, "read")
    h = _hash_param(request, "file")
    record = hub.xet.file_record(h) if repo.has_file(h) else None
    if record is None:
        raise RepoNotFound(f"file {to_hex(h)} is not stored in this repository")
    wanted = parse_range(request.headers.get("range"), record.size) if record.size else None
    start, end = (wanted.start, wanted.end) if wanted else (0, record.size)
    terms, position, offset = [], 0, 0
    for t in record.terms:
        if position < end and position + t.size > start:
            if not terms:
                offset = start - position
            terms.append(t)
        position += t.size
    body = {
        "offset_into_first_range": offset,
        "terms": [{"hash": to_hex(t.xorb), "unpacked_length": t.size, "range": {"start": t.start, "end": t.end}}
                  for t in terms],  # fmt: skip
        "fetch_info": _fetch_info(hub, request, record, terms),
    }
    return JSONResponse(body)


async def xorb_data(hub: Hub, request: Request) -> Response:
    h = _hash_param(request, "xorb")
    q = request.query_params
    signed = q.get("range", "")
    expires, sig = q.get("expires", ""), q.get("sig", "")
    if not hub.auth.check_signature("xet-data", to_hex(h), signed, expires=expires, signature=sig):
        raise Unauthorized("xorb URL is not valid (bad or expired signature): ask for the reconstruction again")
    lo, _, hi = signed.partition("-")
    path = hub.xet.xorb_path(h)
    size = path.stat().st_size
    wanted = parse_range(request.headers.get("range"), size)
    if wanted is None or wanted.start < int(lo) or wanted.end > int(hi) + 1:
        raise Forbidden(f"this URL grants bytes={signed} of the xorb: send that Range header")

    # FileResponse answers the (checked) Range header itself, streaming from disk.
    return FileResponse(path, media_type="application/octet-stream", headers={"Accept-Ranges": "bytes"})


async def dedup_query(hub: Hub, request: Request) -> Response:
    repo = grant(hub, request, "read")
    if request.path_params.get("prefix") not in ("default-merkledb", "default"):  # hf_xet 1.8 sends "default"
        raise BadRequest("the global dedup prefix is 'default-merkledb'")
    chunk = _hash_param(request, "chunk")
    xorb = hub.xet.xorb_of_chunk(chunk)
    # Only xorbs this repository's files use: dedup never reveals other repositories' content.
    if xorb is None or not repo.has_xorb(xorb):
        raise RepoNotFound("chunk not known for deduplication")
    index = hub.xet.xorb_index(xorb) or []
    body = dedup_shard(xorb, index, hub.xet.xorb_path(xorb).stat().st_size, secrets.token_bytes(32))
    return Response(body, media_type="application/octet-stream")


# -- upload --------------------------------------------------------------------------------
async def xorb_head(hub: Hub, request: Request) -> Response:
    grant(hub, request, "read")
    h = _hash_param(request, "xorb")
    return Response(status_code=200 if hub.xet.has_xorb(h) else 404)


async def xorb_upload(hub: Hub, request: Request) -> Response:
    grant(hub, request, "write")
    if request.path_params.get("prefix") != "default":
        raise BadRequest("the only xorb prefix is 'default'")
    h = _hash_param(request, "xorb")
    tmp = hub.xet.new_tmp()
    try:
        size = await _receive(request, tmp)
    except BaseException:
        tmp.unlink(missing_ok=True)  # client gone, too large, disk full: nothing stays
        raise
    inserted = await anyio.to_thread.run_sync(hub.xet.put_xorb_file, h, tmp)
    log.info("xet: xorb %s (%d bytes) %s", to_hex(h)[:12], size, "stored" if inserted else "already stored")
    return JSONResponse({"was_inserted": inserted})


async def _receive(request: Request, path: Path) -> int:
    """Stream a request body into `path` (a xorb is up to 64 MiB: not held in memory)."""
    size, pending, pending_len = 0, [], 0
    with open(path, "wb") as f:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_XORB_BODY:
                raise PayloadTooLarge(f"a xorb is larger than {MAX_XORB_BODY} bytes")
            pending.append(chunk)
            pending_len += len(chunk)
            if pending_len >= _WRITE_BATCH:  # one thread hop per MiB, not per network read
                block, pending, pending_len = b"".join(pending), [], 0
                await anyio.to_thread.run_sync(f.write, block)
        if pending:
            await anyio.to_thread.run_sync(f.write, b"".join(pending))
    return size


async def shard_upload(hub: Hub, request: Request) -> Response:
    repo = grant(hub, request, "write")
    shard = parse_shard(await read_body(request, MAX_SHARD))
    new = await anyio.to_thread.run_sync(hub.xet.register, shard, repo)
    log.info("xet: shard with %d file(s), %d new", len(shard.files), new)
    return JSONResponse({"result": 1 if new else 0})


async def not_v1(hub: Hub, request: Request) -> Response:
    raise NotImplementedByHub("this CAS speaks the v1 API (Xet protocol 1.0)")
