"""The local build links libstdc++ as a shared library, and refuses a kernel
that carries its own copy (seen on an H200 image: the copy crashed the first
time a TORCH_CHECK formatted a number)."""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from pipeline.build import toolchain
from pipeline.errors import BuildError

GXX = shutil.which("g++")


def _fake_gxx(tmp_path: Path, dev_link: str, runtime: str) -> str:
    """A stand-in g++ that answers --version and -print-file-name like one
    whose libstdc++-dev symlink is missing."""
    script = tmp_path / "g++"
    script.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        '  --version) echo "g++ (Fake) 13.3.0" ;;\n'
        f'  -print-file-name=libstdc++.so) echo "{dev_link}" ;;\n'
        f'  -print-file-name=libstdc++.so.6) echo "{runtime}" ;;\n'
        "esac\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    toolchain.shared_libstdcxx_args.cache_clear()
    toolchain.compiler_version.cache_clear()
    return str(script)


def test_libstdcxx_is_kept_even_under_as_needed(tmp_path):
    dev = tmp_path / "libstdc++.so"
    dev.write_bytes(b"")
    args = toolchain.shared_libstdcxx_args(_fake_gxx(tmp_path, str(dev), "libstdc++.so.6"))
    assert args == ("-Wl,--push-state,--no-as-needed", "-lstdc++", "-Wl,--pop-state")


def test_missing_dev_symlink_links_the_runtime_library_by_path(tmp_path):
    runtime = tmp_path / "libstdc++.so.6"
    runtime.write_bytes(b"")
    args = toolchain.shared_libstdcxx_args(_fake_gxx(tmp_path, "libstdc++.so", str(runtime)))
    assert args == ("-Wl,--push-state,--no-as-needed", str(runtime.resolve()), "-Wl,--pop-state")


def test_no_shared_libstdcxx_anywhere_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(toolchain, "_LIBSTDCXX_RUNTIME_DIRS", ())
    with pytest.raises(BuildError) as info:
        toolchain.shared_libstdcxx_args(_fake_gxx(tmp_path, "libstdc++.so", "libstdc++.so.6"))
    assert info.value.code == "libstdcxx-static"
    assert "libstdc++-13-dev" in info.value.hint


@pytest.mark.skipif(GXX is None or shutil.which("nm") is None, reason="needs g++ and nm")
@pytest.mark.parametrize("static", [False, True])
def test_a_private_copy_of_libstdcxx_is_detected(tmp_path, static):
    src = tmp_path / "k.cpp"
    src.write_text('#include <sstream>\n#include <string>\n'
                   'extern "C" int fmt(long v) { std::ostringstream s; s << v; return (int)s.str().size(); }\n')
    lib = tmp_path / "k.so"
    cmd = [GXX, "-shared", "-fPIC", "-O1", str(src), "-o", str(lib)] + (["-static-libstdc++"] if static else [])
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"this g++ cannot link that way: {done.stderr[-300:]}")
    assert toolchain.private_libstdcxx(lib) is static


def test_the_real_compiler_here_links_the_shared_library():
    if GXX is None:
        pytest.skip("no g++")
    toolchain.shared_libstdcxx_args.cache_clear()
    toolchain.compiler_version.cache_clear()
    args = toolchain.shared_libstdcxx_args(GXX)
    assert args[0] == "-Wl,--push-state,--no-as-needed" and args[-1] == "-Wl,--pop-state"
    assert args[1] == "-lstdc++" or args[1].endswith("libstdc++.so.6")


@pytest.mark.skipif(GXX is None or shutil.which("readelf") is None, reason="needs g++ and readelf")
def test_as_needed_link_keeps_libstdcxx_with_our_arguments(tmp_path):
    """A library whose C++ references are all inline would lose libstdc++ under
    --as-needed; the kernel must still name it."""
    src = tmp_path / "k.cpp"
    src.write_text('extern "C" int f(int v) { return v + 1; }\n')
    toolchain.shared_libstdcxx_args.cache_clear()
    toolchain.compiler_version.cache_clear()

    def needed(extra):
        lib = tmp_path / "k.so"
        subprocess.run([GXX, "-shared", "-fPIC", str(src), "-Wl,--as-needed", *extra, "-o", str(lib)], check=True)
        return subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True).stdout

    assert "libstdc++" not in needed([])
    assert "libstdc++.so.6" in needed(list(toolchain.shared_libstdcxx_args(GXX)))
