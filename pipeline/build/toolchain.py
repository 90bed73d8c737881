"""Compilers, ninja, CUDA: found once, versions recorded, one clear sentence when missing.

Nothing here imports torch (2+ s): the cache check of a no-op rebuild must
stay fast. The compile step imports `torch.utils.cpp_extension` itself.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from pipeline.errors import BuildError


def _first_line(cmd: list[str]) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0] if text else ""


def find_cxx() -> str:
    """The C++ compiler: $CXX, else c++ (what torch.utils.cpp_extension uses on Linux)."""
    wanted = os.environ.get("CXX") or "c++"
    found = shutil.which(wanted)
    if not found:
        raise BuildError(f"no C++ compiler found (looked for {wanted!r} on PATH)", code="compiler-missing",
                         hint="install one (apt-get install g++) or point CXX at it")
    return found


@functools.lru_cache(maxsize=None)
def compiler_version(path: str) -> str:
    return _first_line([path, "--version"])


def find_ninja() -> str:
    found = shutil.which("ninja")
    if found:
        return found
    try:
        import ninja  # the PyPI package ships the binary

        candidate = Path(ninja.BIN_DIR) / "ninja"
        if candidate.is_file():
            return str(candidate)
    except (ImportError, AttributeError):
        pass
    candidate = Path(sys.executable).parent / "ninja"
    if candidate.is_file():
        return str(candidate)
    raise BuildError("ninja is not installed", code="ninja-missing", hint="pip install ninja")


def find_cuda_home() -> Path | None:
    for var in ("CUDA_HOME", "CUDA_PATH"):
        value = os.environ.get(var)
        if value and Path(value, "bin", "nvcc").exists():
            return Path(value)
    nvcc = shutil.which("nvcc")
    if nvcc:
        return Path(nvcc).resolve().parent.parent
    if Path("/usr/local/cuda/bin/nvcc").exists():
        return Path("/usr/local/cuda")
    return None


def find_nvcc() -> str:
    home = find_cuda_home()
    if home is None:
        raise BuildError("nvcc (the CUDA compiler) was not found", code="nvcc-missing",
                         hint="install the CUDA toolkit and set CUDA_HOME (e.g. CUDA_HOME=/usr/local/cuda)")
    return str(home / "bin" / "nvcc")


@functools.lru_cache(maxsize=None)
def nvcc_version(nvcc: str) -> str:
    """'13.0.88' from `nvcc --version` ('... release 13.0, V13.0.88')."""
    try:
        text = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildError(f"cannot run {nvcc}: {exc}", code="nvcc-missing") from None
    match = re.search(r"V(\d+\.\d+(?:\.\d+)?)", text) or re.search(r"release (\d+\.\d+)", text)
    if not match:
        raise BuildError(f"cannot read the version of {nvcc}", code="nvcc-missing")
    return match.group(1)


@functools.lru_cache(maxsize=None)
def nvcc_archs(nvcc: str) -> frozenset[int]:
    """The virtual architectures nvcc can compile for (75, 80, 90, 100, ...)."""
    try:
        text = subprocess.run([nvcc, "--list-gpu-arch"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(int(m) for m in re.findall(r"compute_(\d+)", text))


def visible_gpu_capabilities() -> tuple[str, ...]:
    """Compute capabilities of the GPUs `nvidia-smi` sees ('9.0'), without torch."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return ()
    try:
        done = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    if done.returncode != 0:
        return ()
    caps = [line.strip() for line in done.stdout.splitlines() if re.fullmatch(r"\d+\.\d+", line.strip())]
    return tuple(sorted(set(caps)))


# Builds are byte-identical wherever the checkout lives: absolute paths the
# compiler would embed (__FILE__ in TORCH_CHECK messages, the symbol table's
# file names) are rewritten, and __DATE__/__TIME__ read SOURCE_DATE_EPOCH.
DEFAULT_SOURCE_DATE_EPOCH = "0"


def prefix_map_flags(maps: dict[Path, str]) -> list[str]:
    """`-ffile-prefix-map=OLD=NEW` for g++ and clang (it implies the debug and
    macro maps). GCC tries the last one given first, so the longest (most
    specific) prefix goes last."""
    ordered = sorted(((str(Path(old)), new) for old, new in maps.items()), key=lambda m: len(m[0]))
    return [f"-ffile-prefix-map={old}={new}" for old, new in ordered]


def host_compiler_flags(flags: list[str]) -> list[str]:
    """The same flags for nvcc, which hands them to its host compiler."""
    return [part for flag in flags for part in ("-Xcompiler", flag)]


def source_date_epoch(env: dict | None = None) -> str:
    """SOURCE_DATE_EPOCH as set by the caller (reproducible-builds.org), else a fixed 0."""
    env = os.environ if env is None else env
    value = env.get("SOURCE_DATE_EPOCH", "")
    return value if value.isdigit() else DEFAULT_SOURCE_DATE_EPOCH


def python_version() -> str:
    return ".".join(map(str, sys.version_info[:3]))


LIBSTDCXX_HINT = ("install the libstdc++ development package of your g++ (e.g. libstdc++-13-dev), "
                  "or point CXX at a compiler that has one")

# Where a distribution ships the runtime libstdc++ (the shared object that
# g++'s own `libstdc++.so` development link points at).
_LIBSTDCXX_RUNTIME_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                           "/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/lib64")


@functools.lru_cache(maxsize=None)
def shared_libstdcxx_args(cxx: str) -> tuple[str, ...]:
    """Link arguments that make the kernel depend on the shared libstdc++.

    Two ways a g++ link leaves libstdc++.so.6 out of a kernel's NEEDED list:
    `--as-needed` (Ubuntu's default) drops it when the references it would
    satisfy are resolved elsewhere first, and a missing libstdc++-N-dev
    symlink makes the linker take `libstdc++.a`. Either way the kernel's C++
    runtime is not the process's: on the H200 image (Ubuntu 24.04, g++ 13)
    such a kernel crashed (SIGSEGV in a stream insert) the first time a
    TORCH_CHECK formatted a number. So libstdc++ is always linked, and by path
    when g++ has no `libstdc++.so` of its own. Empty for clang."""
    if "clang" in compiler_version(cxx).lower():
        return ()
    keep = ("-Wl,--push-state,--no-as-needed",)
    dev_link = _first_line([cxx, "-print-file-name=libstdc++.so"])
    if os.path.isabs(dev_link) and Path(dev_link).is_file():
        return (*keep, "-lstdc++", "-Wl,--pop-state")
    runtime = _first_line([cxx, "-print-file-name=libstdc++.so.6"])
    candidates = [runtime] + [f"{d}/libstdc++.so.6" for d in _LIBSTDCXX_RUNTIME_DIRS]
    for candidate in candidates:
        if os.path.isabs(candidate) and Path(candidate).is_file():
            return (*keep, str(Path(candidate).resolve()), "-Wl,--pop-state")
    raise BuildError(f"{cxx} would link libstdc++ statically into the kernel: it has no shared libstdc++ "
                     "(libstdc++.so) to link against", code="libstdcxx-static",
                     hint=LIBSTDCXX_HINT)


# Defined only by libstdc++ itself (explicit instantiations included): a kernel
# that defines one carries its own copy of (part of) the C++ runtime.
_LIBSTDCXX_OWN_SYMBOLS = ("_ZNSt8ios_base4InitC1Ev", "_ZNSt6locale7classicEv", "_ZNSo9_M_insertIlEERSoT_",
                          "_ZNSt7num_putIcSt19ostreambuf_iteratorIcSt11char_traitsIcEEE2idE")


def private_libstdcxx(library: Path) -> bool | None:
    """Whether a linked shared library holds its own copy of libstdc++
    (None when binutils' nm is not there to tell)."""
    nm = shutil.which("nm")
    if nm is None:
        return None
    names: set[str] = set()
    for table in (["--defined-only"], ["-D", "--defined-only"]):  # the full table, and the exported one
        try:
            done = subprocess.run([nm, *table, str(library)], capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode == 0:
            names |= {line.split()[-1] for line in done.stdout.splitlines() if line.strip()}
    return any(symbol in names for symbol in _LIBSTDCXX_OWN_SYMBOLS)
