"""One kernel-builder pin: every kernel flake's flake.lock locks the root flake.lock's kernel-builder.

The root `flake.lock` is the only place the kernel-builder revision is chosen
(`nix flake lock --update-input kernel-builder`, or written offline from a
mirrored commit). Every kernel project's `flake.nix` has one input,
`kernel-builder`, so its lock is the root lock's kernel-builder node and every
node that node reaches, under a root whose only input is kernel-builder: what
`nix flake lock` would write for it, byte for byte (nodes named and ordered as
Nix names them, two-space JSON, sorted keys, final newline). Nix then accepts
it as current under `--no-update-lock-file` and never writes a lock into the
tree during a build.

`write_locks(root)` writes them; `check_locks(root)` verifies, offline, that
every kernel lock is exactly that derived lock, that each kernel's flake.nix
asks for the input the root locks, that git tracks each lock (an untracked lock
is invisible to a flake, so Nix would create another and dirty the tree), and
that `pipeline/data/variants.toml` was read at the pinned revision.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline import toml
from pipeline.errors import BuildError, Problem
from pipeline.fsutil import atomic_write_text
from pipeline.workspace import find_workspace, load_workspace

LOCK_FILE = "flake.lock"
INPUT = "kernel-builder"
VARIANTS_TABLE = Path(__file__).resolve().parent / "data" / "variants.toml"
_HINT = "run `python -m pipeline lock` and commit every kernels-src/*/flake.lock"


@dataclass(frozen=True)
class Pin:
    """The kernel-builder input a lock file pins: its `locked` attributes."""

    path: Path
    locked: dict[str, Any]
    line: int | None  # of its rev (or narHash), for path:line problems

    @property
    def rev(self) -> str:
        return str(self.locked.get("rev", ""))

    @property
    def owner(self) -> str:
        return str(self.locked.get("owner", ""))

    @property
    def repo(self) -> str:
        return str(self.locked.get("repo", ""))

    @property
    def nar_hash(self) -> str:
        return str(self.locked.get("narHash", ""))

    @property
    def short(self) -> str:
        return self.rev[:7] if self.rev else self.nar_hash[:19]

    @property
    def source(self) -> str:
        if self.locked.get("type") == "github":
            return f"{self.owner}/{self.repo}"
        return str(self.locked.get("path") or self.locked.get("url") or self.locked.get("type", "?"))


@dataclass(frozen=True)
class LockWrite:
    path: Path
    action: str  # "created" | "updated" | "unchanged"


def dump_lock(lock: dict[str, Any]) -> str:
    """A lock as Nix writes it: nlohmann's dump(2) of sorted keys, and a newline."""
    return json.dumps(lock, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _resolve_follows(nodes: dict, root: str, path: list[str]) -> str | None:
    """The node a `follows` path (input names from the root) ends at."""
    current = root
    for name in path:
        target = nodes.get(current, {}).get("inputs", {}).get(name)
        if isinstance(target, list):
            target = _resolve_follows(nodes, root, target)
        if not isinstance(target, str) or target not in nodes:
            return None
        current = target
    return current


def _renamed(nodes: dict, new_root_inputs: dict[str, Any]) -> dict[str, Any]:
    """Re-key the graph as Nix's LockFile::toJSON does: depth first from the
    root in sorted input order, a node keyed by the first input name that
    reaches it, `_2`, `_3`... on a clash. `follows` lists are kept as they are."""
    keys: dict[str, str] = {}  # old node key -> new key
    out: dict[str, Any] = {}

    def visit(old: str, name: str, node: dict) -> str:
        if old in keys:
            return keys[old]
        key, n = name, 2
        while key in out:
            key, n = f"{name}_{n}", n + 1
        keys[old] = key
        out[key] = {}  # reserve the key before the children take theirs
        entry = {k: v for k, v in node.items() if k != "inputs"}
        if node.get("inputs"):
            entry["inputs"] = {
                input_name: target if isinstance(target, list) else visit(target, input_name, nodes[target])
                for input_name, target in sorted(node["inputs"].items())
            }
        out[key] = entry
        return key

    visit("\0root", "root", {"inputs": new_root_inputs})
    return out


def derive_kernel_lock(root_lock: dict[str, Any], source: Path) -> dict[str, Any]:
    """The lock a kernel flake with the single input `kernel-builder` gets from the root lock."""
    nodes = root_lock.get("nodes")
    root_name = root_lock.get("root", "root")
    if not isinstance(nodes, dict) or root_name not in nodes:
        raise BuildError("the root flake.lock has no node graph", code="lock-malformed", path=str(source),
                         hint="regenerate it with `nix flake lock`")
    target = nodes[root_name].get("inputs", {}).get(INPUT)
    if not isinstance(target, str) or target not in nodes:
        raise BuildError(f"the root flake.lock has no locked `{INPUT}` input", code="lock-malformed",
                         path=str(source), hint="the workspace flake.nix must have inputs.kernel-builder.url")
    renamed = _renamed(nodes, {INPUT: target})
    for key, node in renamed.items():
        for name, follows in (node.get("inputs") or {}).items():
            if isinstance(follows, list) and _resolve_follows(renamed, "root", follows) is None:
                raise BuildError(
                    f"node {key!r} input {name!r} follows {'/'.join(follows)}, which a kernel flake does not have",
                    code="lock-follows-outside", path=str(source),
                    hint="the root flake must not override kernel-builder's own inputs: kernel flakes cannot "
                         "mirror such a lock")
    return {"nodes": renamed, "root": "root", "version": root_lock.get("version", 7)}


def _line_of(text: str, needle: str, after: str | None = None) -> int | None:
    start = text.find(after) if after else 0
    index = text.find(needle, max(start, 0))
    return text.count("\n", 0, index) + 1 if index >= 0 else None


def read_pin(path: Path, text: str, lock: dict[str, Any]) -> Pin:
    nodes = lock.get("nodes") or {}
    target = (nodes.get(lock.get("root", "root")) or {}).get("inputs", {}).get(INPUT)
    locked = (nodes.get(target) or {}).get("locked") if isinstance(target, str) else None
    if not isinstance(locked, dict):
        raise BuildError(f"{path.name} locks no `{INPUT}` input", code="lock-malformed", path=str(path),
                         hint=_HINT)
    field = "rev" if "rev" in locked else "narHash"
    return Pin(path=path, locked=dict(locked),
               line=_line_of(text, f'"{field}": "{locked.get(field, "")}"', after=f'"{target}": {{'))


def load_lock(path: Path) -> tuple[str, dict[str, Any]]:
    """The lock's text and JSON; a malformed one is a BuildError at its line."""
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
    except FileNotFoundError:
        raise BuildError(f"{path.name} does not exist", code="lock-missing", path=str(path), hint=_HINT) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        raise BuildError(f"{path.name} is not JSON: {exc}", code="lock-malformed", path=str(path), line=line,
                         hint=_HINT) from None
    if not isinstance(data, dict):
        raise BuildError(f"{path.name} is not a JSON object", code="lock-malformed", path=str(path), hint=_HINT)
    return text, data


def root_pin(root: Path) -> tuple[Pin, dict[str, Any]]:
    """The workspace's kernel-builder pin; refused without a NAR hash (a GitHub input also needs its
    full revision). Other input types appear only in tests and local overrides (a path: stand-in)."""
    path = root / LOCK_FILE
    if not path.is_file():
        raise BuildError("the workspace has no flake.lock", code="lock-root-missing", path=str(path),
                         hint="lock the workspace flake once: `nix flake lock` (needs GitHub), then commit it")
    text, data = load_lock(path)
    pin = read_pin(path, text, data)
    github = pin.locked.get("type") == "github"
    if not pin.nar_hash.startswith("sha256-") or (github and not re.fullmatch(r"[0-9a-f]{40}", pin.rev)):
        raise BuildError(f"the root flake.lock does not pin `{INPUT}` to a revision with a NAR hash",
                         code="lock-unpinned", path=str(path), line=pin.line,
                         hint="`nix flake lock --update-input kernel-builder` writes rev and narHash")
    return pin, data


def original_url(node: dict[str, Any]) -> str | None:
    """The flake reference an input's `original` stands for, as flake.nix writes it (github and path
    inputs; None for other types, whose URL forms are not compared)."""
    original = node.get("original") or {}
    if original.get("type") == "path" and set(original) == {"type", "path"}:
        return f"path:{original['path']}"
    if original.get("type") != "github":
        return None
    suffix = original.get("ref") or original.get("rev")
    return f"github:{original.get('owner')}/{original.get('repo')}" + (f"/{suffix}" if suffix else "")


def pinned_url(lock: dict[str, Any]) -> str | None:
    """The reference the lock's kernel-builder input was locked from (what flake.nix must say)."""
    nodes = lock["nodes"]
    return original_url(nodes[nodes[lock.get("root", "root")]["inputs"][INPUT]])


def flake_input_url(flake_nix: Path) -> tuple[str | None, int | None]:
    """`inputs.kernel-builder.url` of a flake.nix, and its line (a textual read: flake.nix is Nix, not data)."""
    try:
        text = flake_nix.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None, None
    match = re.search(rf'{re.escape(INPUT)}(?:\.url\s*=|\s*=\s*\{{[^}}]*?url\s*=)\s*"([^"]+)"', text)
    if match is None:
        return None, None
    return match.group(1), text.count("\n", 0, match.start(1)) + 1


def _git_tracks(path: Path) -> bool | None:
    """Whether git tracks `path` (None outside a git work tree or without git)."""
    try:
        done = subprocess.run(["git", "ls-files", "--error-unmatch", "--", path.name], cwd=path.parent,
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode == 0:
        return True
    return False if "did not match" in done.stderr else None


def _check_kernel(kernel: Path, root: Path, root_pin_: Pin, expected: str, url: str | None) -> list[Problem]:
    path = kernel / LOCK_FILE
    rel = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
    problems: list[Problem] = []
    flake_url, flake_line = flake_input_url(kernel / "flake.nix")
    if url is not None and flake_url is not None and flake_url != url:
        problems.append(Problem(str((kernel / "flake.nix").relative_to(root)), flake_line, "flake-input-differs",
                                f"inputs.{INPUT}.url is {flake_url!r} but the root flake.lock locks {url!r}",
                                hint=f'write `{INPUT}.url = "{url}";` as the workspace flake.nix does'))
    try:
        text, data = load_lock(path)
        pin = read_pin(path, text, data)
    except BuildError as exc:
        return problems + [Problem(rel, exc.line, exc.code, exc.message, hint=exc.hint)]
    if (pin.rev, pin.nar_hash) != (root_pin_.rev, root_pin_.nar_hash):
        problems.append(Problem(rel, pin.line, "lock-mismatch",
                                f"pins kernel-builder {pin.short or '(nothing)'} but the root flake.lock pins "
                                f"{root_pin_.short}", hint=_HINT))
    elif text != expected:
        problems.append(Problem(rel, _first_difference(text, expected), "lock-differs",
                                f"pins kernel-builder {pin.short} but is not the lock derived from the root "
                                "flake.lock (another input or the layout differs)", hint=_HINT))
    if _git_tracks(path) is False:
        problems.append(Problem(rel, None, "lock-untracked",
                                "git does not track this lock: a flake cannot see it, so nix would write "
                                "another and dirty the tree", hint=f"git add {rel} && git commit"))
    return problems


def _first_difference(text: str, expected: str) -> int:
    for number, (a, b) in enumerate(zip(text.splitlines(), expected.splitlines()), 1):
        if a != b:
            return number
    return min(len(text.splitlines()), len(expected.splitlines())) + 1


def check_variants_table(pin: Pin, table: Path = VARIANTS_TABLE) -> list[Problem]:
    """pipeline/data/variants.toml must have been read at the revision the root pins."""
    text = toml.read_text(table)
    source = toml.loads(text).get("source", {})
    read_at = str(source.get("read-at", ""))
    where = str(table.relative_to(table.parents[2])) if len(table.parents) > 2 else str(table)
    repository = str(source.get("repository", "")).rstrip("/")
    if pin.locked.get("type") != "github":
        return [Problem(where, toml.key_line(text, "repository", "source"), "variants-pin-differs",
                        f"the variant table was read from {repository} but flake.lock pins a "
                        f"{pin.locked.get('type')} input ({pin.source})")]
    problems = []
    if read_at != pin.rev:
        problems.append(Problem(where, toml.key_line(text, "read-at", "source"), "variants-pin-differs",
                                f"the variant table was read at {read_at[:7] or '(none)'} but flake.lock pins "
                                f"kernel-builder {pin.short}: the matrix would list variants the builder may "
                                "not have", hint="refresh [source] and the lists from nix-builder/"
                                "build-variants.json at the pinned revision (see the file's header)"))
    if repository != f"https://github.com/{pin.owner}/{pin.repo}":
        problems.append(Problem(where, toml.key_line(text, "repository", "source"), "variants-pin-differs",
                                f"the variant table comes from {repository!r}, not the pinned "
                                f"github.com/{pin.owner}/{pin.repo}"))
    return problems


def check_locks(root: Path, *, table: Path = VARIANTS_TABLE) -> list[Problem]:
    """Every problem with the workspace's one pin, offline; [] when all locks agree."""
    root = Path(root).resolve()
    try:
        pin, root_lock = root_pin(root)
        expected = dump_lock(derive_kernel_lock(root_lock, root / LOCK_FILE))
    except BuildError as exc:
        return [Problem(exc.path or LOCK_FILE, exc.line, exc.code, exc.message, hint=exc.hint)]
    url = pinned_url(root_lock)
    problems: list[Problem] = []
    for kernel in load_workspace(root).kernel_paths:
        problems += _check_kernel(Path(kernel).resolve(), root, pin, expected, url)
    return problems + check_variants_table(pin, table)


def write_locks(root: Path) -> list[LockWrite]:
    """Write every kernel's flake.lock from the root lock; refuse a kernel whose flake.nix asks for another input."""
    root = Path(root).resolve()
    _, root_lock = root_pin(root)
    expected = dump_lock(derive_kernel_lock(root_lock, root / LOCK_FILE))
    url = pinned_url(root_lock)
    kernels = [Path(k).resolve() for k in load_workspace(root).kernel_paths]
    for kernel in kernels:
        flake_url, line = flake_input_url(kernel / "flake.nix")
        if url is not None and flake_url != url:
            raise BuildError(f"inputs.{INPUT}.url is {flake_url!r}, not the {url!r} the root flake.lock locks",
                             code="flake-input-differs", path=str(kernel / "flake.nix"), line=line,
                             hint=f'write `{INPUT}.url = "{url}";` (one kernel-builder for the workspace)')
    writes = []
    for kernel in kernels:
        path = kernel / LOCK_FILE
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current != expected:
            atomic_write_text(path, expected)
        writes.append(LockWrite(path, "unchanged" if current == expected else
                                "created" if current is None else "updated"))
    return writes


def check_kernel_lock(kernel: Path) -> list[Problem]:
    """What a nix build of one kernel must refuse: its lock missing, malformed, untracked, or (in a
    workspace that lists it) not exactly the lock derived from the workspace's pin."""
    kernel = Path(kernel).resolve()
    ws_root = find_workspace(kernel)
    if ws_root is not None and kernel in {Path(k).resolve() for k in load_workspace(ws_root).kernel_paths}:
        try:
            pin, root_lock = root_pin(ws_root)
            expected = dump_lock(derive_kernel_lock(root_lock, ws_root / LOCK_FILE))
        except BuildError as exc:
            return [Problem(exc.path or LOCK_FILE, exc.line, exc.code, exc.message, hint=exc.hint)]
        return _check_kernel(kernel, ws_root, pin, expected, pinned_url(root_lock))
    path = kernel / LOCK_FILE
    try:
        text, data = load_lock(path)
        read_pin(path, text, data)
    except BuildError as exc:
        hint = "lock it once (`nix flake lock`, needs the inputs) and commit flake.lock"
        return [Problem(str(path), exc.line, exc.code, exc.message, hint=hint)]
    if _git_tracks(path) is False:
        return [Problem(str(path), None, "lock-untracked", "git does not track this lock: a flake cannot see "
                        "it, so nix would write another and dirty the tree", hint=f"git add {path.name}")]
    return []
