"""Which build backend runs when the user names none.

`nix` only when it can work: `nix` is installed and a binary cache answers
(kernel-builder's toolchains come from huggingface.cachix.org; building them
from source takes hours). Otherwise `local`. The choice carries its reason,
so the command can say why it built the way it did.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass

from pipeline.errors import BuildError

BACKENDS = ("local", "nix")
ENV_VAR = "PIPELINE_BUILD_BACKEND"
CACHE_PROBE_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class BackendChoice:
    name: str  # "local" or "nix"
    reason: str

    def to_json(self) -> dict:
        return {"backend": self.name, "reason": self.reason}


def nix_substituters() -> tuple[str, ...]:
    """The binary caches nix is configured with (`nix show-config substituters`)."""
    nix = shutil.which("nix")
    if nix is None:
        return ()
    for cmd in ([nix, "--extra-experimental-features", "nix-command", "config", "show", "substituters"],
                [nix, "--extra-experimental-features", "nix-command", "show-config"]):
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode != 0:
            continue
        text = proc.stdout.strip()
        if "substituters =" in text:  # show-config prints every setting
            text = next((line.split("=", 1)[1] for line in text.splitlines()
                         if line.startswith("substituters =")), "")
        return tuple(s for s in text.split() if s.startswith(("http://", "https://")))
    return ()


def cache_answers(url: str, timeout: float = CACHE_PROBE_TIMEOUT_S) -> bool:
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/nix-cache-info", timeout=timeout) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError, ValueError):
        return False


def choose_backend(requested: str | None = None, env: dict | None = None) -> BackendChoice:
    """`requested` (a backend name or "auto"/None) -> the backend and why."""
    env = os.environ if env is None else env
    if requested and requested != "auto":
        if requested not in BACKENDS:
            raise BuildError(f"unknown build backend {requested!r}", code="build-backend-unknown",
                             hint=f"choose one of: {', '.join(BACKENDS)}")
        return BackendChoice(requested, "--backend")
    from_env = env.get(ENV_VAR, "")
    if from_env and from_env != "auto":
        if from_env not in BACKENDS:
            raise BuildError(f"{ENV_VAR}={from_env!r} is not a build backend", code="build-backend-unknown",
                             hint=f"set it to one of: {', '.join(BACKENDS)}")
        return BackendChoice(from_env, ENV_VAR)
    if shutil.which("nix") is None:
        return BackendChoice("local", "nix is not installed")
    caches = nix_substituters()
    reachable = next((c for c in caches if cache_answers(c)), None)
    if reachable is None:
        shown = ", ".join(caches) if caches else "none configured"
        return BackendChoice("local", f"nix is installed but no binary cache answers ({shown}); "
                                      "use --backend nix to build the toolchain from source")
    return BackendChoice("nix", f"nix is installed and {reachable} answers")
