"""Paths in what a project publishes (the kernel card, `benchmarks.md`, the commands
records keep): relative to the project, never the machine that made them.

A record made on a rented GPU says `python -m pipeline bench /tmp/build-rmsnorm ...
--out /root/out/h200.json`: the machine's directories mean nothing to a reader of the
card, and they change with every machine, so the card would too. A path under a known
root (the workspace, the kernel project, the bundle) becomes relative to it; any other
path becomes a placeholder: a positional path the verb's metavar (`BUILD_DIR`), an
option's value (an output) its file name, a path in prose its file name.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Mapping

# An absolute path of two or more segments (one segment, "/s", is as often a unit or "and/or"):
# Unix (`/tmp/x`, not the `/` inside a URL or a word), Windows (`C:\x`, `C:/x`, `\\server\share`).
_UNIX = r"(?<![\w.:/~<>$-])/(?:[\w.+@%=-]+/)+(?:[\w.+@%=-]*[\w+@%=-])?"
_WINDOWS = r"(?<![\w])[A-Za-z]:[\\/][^\s`'\"|)*]*|(?<![\w\\])\\\\[\w.$-]+\\[^\s`'\"|)*]*"
ABSOLUTE_PATH = re.compile(f"{_UNIX}|{_WINDOWS}")

# What a positional path of a verb stands for when it is outside the project (its metavar).
POSITIONAL = {"bench": "BUILD_DIR", "smoke": "BUILD_DIR", "check": "BUILD_DIR"}

Roots = Mapping[Path, str]  # a root directory -> what paths under it are written under ("" for as-is)


def absolute_paths(text: str) -> list[str]:
    """Every absolute filesystem path (Unix or Windows) in `text`, in order."""
    return ABSOLUTE_PATH.findall(text)


def is_absolute(token: str) -> bool:
    return PurePosixPath(token).is_absolute() or PureWindowsPath(token).is_absolute() or token.startswith("\\\\")


def _under(path: str, roots: Roots) -> str | None:
    """`path` relative to the deepest root holding it (under that root's prefix), or None."""
    try:
        resolved = Path(path)
    except ValueError:
        return None
    for root, prefix in sorted(roots.items(), key=lambda item: -len(Path(item[0]).parts)):
        try:
            rel = resolved.relative_to(Path(root))
        except ValueError:
            continue
        return str(PurePosixPath(prefix) / PurePosixPath(*rel.parts)) if (prefix or rel.parts) else "."
    return None


def _name(path: str) -> str:
    windows = PureWindowsPath(path)
    return (windows.name if "\\" in path or windows.drive else PurePosixPath(path).name) or "PATH"


def portable_path(path: str, roots: Roots = {}, *, placeholder: str | None = None) -> str:
    """`path` relative to a root that holds it, else `placeholder`, else its file name."""
    return _under(path, roots) or placeholder or _name(path)


def portable_text(text: str, roots: Roots = {}) -> str:
    """`text` with every absolute path made portable (prose: warnings, check results)."""
    return ABSOLUTE_PATH.sub(lambda m: portable_path(m.group(0), roots), text)


def portable_command(command: str | list[str], roots: Roots = {}) -> str:
    """A recorded command line (a string, or its argv) with no absolute path: paths under a
    root relative to it, an option's value outside them its file name (outputs: `--out
    h200.json`), a positional path outside them the verb's metavar (`bench BUILD_DIR`)."""
    if isinstance(command, str):
        try:
            # shlex drops backslashes, so a command with Windows paths is treated as prose.
            argv = shlex.split(command) if "\\" not in command else None
        except ValueError:  # unbalanced quotes: treat it as prose
            argv = None
        if argv is None:
            return portable_text(command, roots)
    else:
        argv = list(command)
    verb = next((a for a in argv if a in POSITIONAL), None)
    out: list[str] = []
    for i, token in enumerate(argv):
        option, eq, value = token.partition("=") if token.startswith("--") else ("", "", token)
        if eq and is_absolute(value):
            out.append(f"{option}={portable_path(value, roots)}")
        elif is_absolute(token):
            after_option = i > 0 and argv[i - 1].startswith("-") and "=" not in argv[i - 1]
            placeholder = None if after_option else POSITIONAL.get(verb or "", "PATH")
            out.append(portable_path(token, roots, placeholder=placeholder))
        else:
            out.append(portable_text(token, roots))
    return " ".join(shlex.quote(a) if a and not _plain(a) else a for a in out)


def _plain(token: str) -> bool:
    return re.fullmatch(r"[\w@%+=:,./-]+", token) is not None
