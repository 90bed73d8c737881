"""The content-addressed LFS store (pipeline/hub/lfs.py)."""

from __future__ import annotations

import hashlib
import os

import anyio
import pytest

from pipeline.hub import lfs
from pipeline.hub.errors import BadRequest, ChecksumMismatch, PayloadTooLarge


async def _chunks(data: bytes, size: int = 70_000, fail_after: int | None = None):
    for i in range(0, len(data), size):
        if fail_after is not None and i >= fail_after:
            raise ConnectionResetError("client went away")
        yield data[i : i + size]


def _ingest(store, oid, size, chunks):
    return anyio.run(store.ingest, oid, size, chunks)


def test_ingest_streams_and_verifies(tmp_path):
    store = lfs.LfsStore(tmp_path)
    data = os.urandom(3_000_000)
    oid = hashlib.sha256(data).hexdigest()
    assert _ingest(store, oid, len(data), _chunks(data))
    assert store.has(oid, len(data)) and store.path(oid).read_bytes() == data
    assert store.path(oid).relative_to(tmp_path).parts[:4] == ("lfs", "objects", oid[:2], oid[2:4])
    assert list(store.tmp.iterdir()) == []


@pytest.mark.parametrize(
    "mutate,error",
    [
        (lambda d: d[:-1] + bytes([d[-1] ^ 1]), ChecksumMismatch),  # same size, other bytes
        (lambda d: d[:-10], BadRequest),  # short
        (lambda d: d + b"extra", PayloadTooLarge),  # long
    ],
)
def test_bad_uploads_leave_nothing(tmp_path, mutate, error):
    store = lfs.LfsStore(tmp_path)
    data = os.urandom(200_000)
    oid = hashlib.sha256(data).hexdigest()
    with pytest.raises(error):
        _ingest(store, oid, len(data), _chunks(mutate(data)))
    assert not store.has(oid)
    assert list(store.tmp.iterdir()) == []


def test_interrupted_upload_leaves_nothing(tmp_path):
    store = lfs.LfsStore(tmp_path)
    data = os.urandom(2_500_000)
    oid = hashlib.sha256(data).hexdigest()
    with pytest.raises(ConnectionResetError):
        _ingest(store, oid, len(data), _chunks(data, fail_after=1_500_000))
    assert not store.has(oid) and list(store.tmp.iterdir()) == []
    assert _ingest(store, oid, len(data), _chunks(data))  # the retry succeeds


def test_clean_tmp_removes_leftovers(tmp_path):
    store = lfs.LfsStore(tmp_path)
    store.tmp.mkdir(parents=True)
    (store.tmp / "abc.123").write_bytes(b"half an upload")
    assert store.clean_tmp() == 1 and list(store.tmp.iterdir()) == []


def test_pointer_round_trip():
    oid = "a" * 64
    blob = lfs.pointer(oid, 123)
    assert blob == b"version https://git-lfs.github.com/spec/v1\noid sha256:" + oid.encode() + b"\nsize 123\n"
    assert lfs.parse_pointer(blob) == (oid, 123)
    assert lfs.parse_pointer(blob + b"x") is None
    assert lfs.parse_pointer(b"hello") is None
