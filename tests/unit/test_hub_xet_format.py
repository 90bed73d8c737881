"""Xet hashes, xorb and shard formats and the CAS store's checks, without a
server (pipeline/hub/xet_hash.py, xet_format.py, xet_store.py)."""

from __future__ import annotations

import hashlib
import os
import struct

import lz4.frame
import pytest

from pipeline.hub.errors import BadRequest
from pipeline.hub.xet_format import (
    BOOKEND,
    FLAG_METADATA_EXT,
    FLAG_VERIFICATION,
    SHARD_TAG,
    XetCheckFailed,
    XetFormatError,
    dedup_shard,
    parse_shard,
    parse_xorb,
    ungroup4,
)
from pipeline.hub.xet_hash import (
    chunk_hash,
    file_hash,
    from_hex,
    keyed,
    merkle_root,
    to_hex,
    verification_hash,
    xorb_hash,
)
from pipeline.hub.xet_store import RepoXet, XetStore


def test_hash_strings_reverse_each_8_byte_group():
    raw = bytes(range(32))
    # The spec's example, whose printed string drops the "10" of the third group.
    assert to_hex(raw) == "07060504030201000f0e0d0c0b0a0908" "1716151413121110" "1f1e1d1c1b1a1918"
    assert from_hex(to_hex(raw)) == raw
    assert from_hex("AB" * 32) is None and from_hex("ab" * 31) is None


def test_a_small_file_hashes_as_hf_xet_hashes_it(tmp_path):
    hf_xet = pytest.importorskip("hf_xet")
    data = b"hello xet\n" * 100  # under 8 KiB: one chunk
    (tmp_path / "f").write_bytes(data)
    (info,) = hf_xet.hash_files([str(tmp_path / "f")])
    assert to_hex(file_hash([(chunk_hash(data), len(data))])) == info.hash


def test_merkle_root_of_one_node_is_the_node_and_order_matters():
    a, b = (chunk_hash(b"a"), 1), (chunk_hash(b"b"), 1)
    assert merkle_root([a]) == a[0]
    assert merkle_root([a, b]) != merkle_root([b, a])
    many = [(chunk_hash(str(i).encode()), i + 1) for i in range(1000)]
    assert merkle_root(many) == merkle_root(list(many)) and len(merkle_root(many)) == 32


def _chunk(data: bytes, scheme: int) -> bytes:
    payload = data
    if scheme == 1:
        payload = lz4.frame.compress(data)
    elif scheme == 2:
        grouped = b"".join(data[i::4] for i in range(4))
        payload = lz4.frame.compress(grouped)
    n, m = len(payload), len(data)
    return bytes([0, n & 255, n >> 8 & 255, n >> 16, scheme, m & 255, m >> 8 & 255, m >> 16]) + payload


def _xorb(chunks: list[tuple[bytes, int]]) -> tuple[bytes, bytes]:
    body = b"".join(_chunk(d, s) for d, s in chunks) + b"XETBLOB\x01" + os.urandom(40)  # a footer, ignored
    return body, xorb_hash([(chunk_hash(d), len(d)) for d, _ in chunks])


def test_parse_xorb_decodes_every_compression_scheme():
    datas = [os.urandom(9000), b"z" * 20000, bytes(range(256)) * 50 + b"xyz"]
    body, h = _xorb([(datas[0], 0), (datas[1], 1), (datas[2], 2)])
    chunks, end = parse_xorb(body)
    assert [c.hash for c in chunks] == [chunk_hash(d) for d in datas]
    assert [c.size for c in chunks] == [len(d) for d in datas] and body[end:].startswith(b"XETBLOB")
    assert ungroup4(b"".join(datas[2][i::4] for i in range(4))) == datas[2]


def test_a_corrupt_xorb_is_a_400():
    body, _ = _xorb([(b"q" * 10000, 1)])
    broken = body[:8] + b"\xff" * 20 + body[28:]
    with pytest.raises(XetFormatError):
        parse_xorb(broken)
    with pytest.raises(XetFormatError):
        parse_xorb(b"\x01" + body[1:])  # chunk header version
    assert issubclass(XetFormatError, BadRequest)


def _shard(files: list[tuple[bytes, list[tuple[bytes, int, int, int, bytes]], bytes]]) -> bytes:
    out = bytearray(struct.pack("<32sQQ", SHARD_TAG, 2, 0))
    for fh, terms, sha in files:
        out += struct.pack("<32sII8s", fh, FLAG_VERIFICATION | FLAG_METADATA_EXT, len(terms), bytes(8))
        for xorb, size, start, end, _ in terms:
            out += struct.pack("<32sIIII", xorb, 0, size, start, end)
        for *_, check in terms:
            out += check + bytes(16)
        out += sha + bytes(16)
    return bytes(out + BOOKEND + BOOKEND)


def _shard_sha(data: bytes) -> bytes:
    # A shard carries the sha256 like a xet hash: its string form is the hex digest.
    return from_hex(hashlib.sha256(data).hexdigest())


@pytest.fixture
def stored(tmp_path):
    store = XetStore(tmp_path)
    datas = [os.urandom(20000), os.urandom(30000), os.urandom(5000)]
    body, xh = _xorb([(d, 1) for d in datas])
    assert store.put_xorb(xh, body) is True and store.put_xorb(xh, body) is False
    return store, xh, datas, tmp_path


def _file(xh: bytes, datas: list[bytes], start: int, end: int) -> tuple[bytes, list, bytes]:
    used = datas[start:end]
    check = verification_hash([chunk_hash(d) for d in used])
    fh = file_hash([(chunk_hash(d), len(d)) for d in used])
    return fh, [(xh, sum(map(len, used)), start, end, check)], _shard_sha(b"".join(used))


def test_a_verified_file_is_registered_and_reads_back(stored):
    store, xh, datas, root = stored
    repo = RepoXet(root / "repo.git")
    fh, terms, sha = _file(xh, datas, 1, 3)
    assert store.register(parse_shard(_shard([(fh, terms, sha)])), repo) == 1
    record = store.file_record(fh)
    assert record.sha256 == hashlib.sha256(datas[1] + datas[2]).hexdigest()
    assert b"".join(store.read_file(record)) == datas[1] + datas[2]
    assert b"".join(store.read_file(record, 29990, 30010)) == (datas[1] + datas[2])[29990:30010]
    assert repo.has_file(fh) and repo.has_xorb(xh) and repo.file_by_sha256(record.sha256) == fh
    assert store.xorb_of_chunk(chunk_hash(datas[1])) == xh  # a file's first chunk is found by global dedup


def test_a_xorb_whose_chunks_do_not_hash_to_its_name_is_refused(tmp_path):
    body, _ = _xorb([(b"a" * 9000, 1)])
    with pytest.raises(XetCheckFailed):  # a 400, as the spec says
        XetStore(tmp_path).put_xorb(bytes(32), body)


@pytest.mark.parametrize("damage", ["verification", "file hash", "sha256", "missing xorb", "range", "size"])
def test_a_shard_that_does_not_check_out_registers_nothing(stored, damage):
    store, xh, datas, root = stored
    fh, [(x, size, start, end, check)], sha = _file(xh, datas, 0, 2)
    if damage == "verification":
        check = bytes(32)
    elif damage == "file hash":
        fh = bytes(32)
    elif damage == "sha256":
        sha = _shard_sha(b"something else")
    elif damage == "missing xorb":
        x = bytes(32)
    elif damage == "range":
        end = 9
    elif damage == "size":
        size += 1
    repo = RepoXet(root / "repo.git")
    with pytest.raises(BadRequest):
        store.register(parse_shard(_shard([(fh, [(x, size, start, end, check)], sha)])), repo)
    assert store.file_record(fh) is None and not repo.has_file(fh)


def test_a_dedup_answer_is_a_shard_with_keyed_chunk_hashes(stored):
    store, xh, datas, _ = stored
    key = os.urandom(32)
    body = dedup_shard(xh, store.xorb_index(xh), 123, key)
    shard = parse_shard(body)
    assert shard.files == () and shard.xorbs[0].hash == xh
    assert [h for h, _ in shard.xorbs[0].chunks] == [keyed(chunk_hash(d), key) for d in datas]
    footer = body[-200:]
    assert struct.unpack_from("<Q", footer)[0] == 1 and footer[72:104] == key
    assert struct.unpack_from("<Q", footer, 192)[0] == len(body) - 200  # footer_offset
