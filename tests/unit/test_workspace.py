"""pipeline.workspace: the top-level build.toml with its [workspace] table."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline import toml
from pipeline.errors import WorkspaceError
from pipeline.workspace import find_workspace, load_workspace

REPO = Path(__file__).resolve().parents[2]

MATRIX = """
[workspace.matrix]
torch = ["2.12", "2.13"]
cuda = ["12.6", "13.0"]
archs = ["x86_64", "aarch64"]
backends = ["cuda", "cpu"]

[workspace.matrix.ci]
torch = ["2.13"]
archs = ["x86_64"]
"""


def make_kernel(root: Path, name: str) -> Path:
    path = root / "kernels-src" / name
    path.mkdir(parents=True)
    (path / "build.toml").write_text(f'[general]\nname = "{name}"\n')
    return path


def write(root: Path, body: str) -> Path:
    path = root / "build.toml"
    path.write_text(body)
    return path


def error_of(root: Path) -> WorkspaceError:
    with pytest.raises(WorkspaceError) as info:
        load_workspace(root)
    return info.value


def test_good_workspace(tmp_path):
    for name in ("b-kernel", "a-kernel"):
        make_kernel(tmp_path, name)
    (tmp_path / "kernels-src" / "not-a-kernel").mkdir()
    write(tmp_path, '[workspace]\nkernels = ["kernels-src/*"]\nnamespace = "my-org"\n' + MATRIX)
    ws = load_workspace(tmp_path)
    assert ws.kernel_names == ("a-kernel", "b-kernel")  # sorted, folders without build.toml skipped
    assert ws.namespace == "my-org"
    assert ws.matrix.torch == ("2.12", "2.13") and ws.matrix.backends == ("cuda", "cpu")
    # The CI policy overrides what it names and inherits the rest.
    assert ws.ci_matrix.torch == ("2.13",) and ws.ci_matrix.archs == ("x86_64",)
    assert ws.ci_matrix.cuda == ws.matrix.cuda and ws.ci_matrix.backends == ws.matrix.backends
    assert ws.kernel("a-kernel") == ws.root / "kernels-src" / "a-kernel"


def test_unknown_kernel_name_suggests_the_close_one(tmp_path):
    make_kernel(tmp_path, "rmsnorm")
    write(tmp_path, '[workspace]\nkernels = ["kernels-src/*"]\nnamespace = "org"\n' + MATRIX)
    err = error_of_kernel(load_workspace(tmp_path), "rmsnrom")
    assert err.code == "kernel-not-found" and "did you mean 'rmsnorm'?" in err.hint


def error_of_kernel(ws, name: str) -> WorkspaceError:
    with pytest.raises(WorkspaceError) as info:
        ws.kernel(name)
    return info.value


def test_repository_workspace_file_loads():
    ws = load_workspace(REPO)
    data = toml.loads((REPO / "build.toml").read_text())
    assert ws.namespace == data["workspace"]["namespace"]
    assert ws.matrix.torch == tuple(data["workspace"]["matrix"]["torch"])
    assert all((p / "build.toml").is_file() for p in ws.kernel_paths)
    assert find_workspace(REPO / "pipeline") == REPO


def test_malformed_toml_names_the_line(tmp_path):
    write(tmp_path, '[workspace]\nkernels = ["kernels-src/*"\nnamespace = "org"\n')
    err = error_of(tmp_path)
    assert err.code == "workspace-toml-invalid" and err.line == 3
    assert err.path == str(tmp_path / "build.toml")


def test_binary_file_is_a_clear_error(tmp_path):
    (tmp_path / "build.toml").write_bytes(b"\x00\xff\xfe garbage")
    assert error_of(tmp_path).code == "workspace-toml-invalid"


def test_unknown_key_did_you_mean(tmp_path):
    write(tmp_path, '[workspace]\nkernels = []\nnamespce = "org"\n' + MATRIX)
    err = error_of(tmp_path)
    assert err.code == "workspace-key-unknown" and err.line == 3
    assert "did you mean 'namespace'?" in err.hint


def test_unknown_matrix_key_did_you_mean(tmp_path):
    write(tmp_path, '[workspace]\nkernels = []\nnamespace = "org"\n' + MATRIX.replace("archs = [\"x86_64\", \"aarch64\"]",
                                                                                 "arch = [\"x86_64\"]"))
    err = error_of(tmp_path)
    assert err.code == "workspace-key-unknown" and "did you mean 'archs'?" in err.hint
    assert err.line == toml.key_line((tmp_path / "build.toml").read_text(), "arch", "workspace.matrix")


def test_missing_namespace(tmp_path):
    write(tmp_path, '[workspace]\nkernels = []\n' + MATRIX)
    err = error_of(tmp_path)
    assert err.code == "workspace-namespace-invalid" and "namespace" in err.message


def test_missing_workspace_table_and_file(tmp_path):
    assert error_of(tmp_path).code == "workspace-missing"
    write(tmp_path, '[general]\nname = "relu"\n')
    err = error_of(tmp_path)
    assert err.code == "workspace-missing" and "kernel project" in err.hint


def test_kernel_path_leaving_the_workspace(tmp_path):
    write(tmp_path, '[workspace]\nkernels = ["../elsewhere/*"]\nnamespace = "org"\n' + MATRIX)
    assert error_of(tmp_path).code == "workspace-path-outside"


def test_unknown_backend_in_policy(tmp_path):
    write(tmp_path, '[workspace]\nkernels = []\nnamespace = "org"\n' + MATRIX.replace('"cuda", "cpu"]', '"cuda", "opencl"]'))
    assert error_of(tmp_path).code == "workspace-backend-unknown"


def test_typo_in_ci_subtable_is_reported(tmp_path):
    from pipeline.errors import WorkspaceError
    from pipeline.workspace import load_workspace

    (tmp_path / "build.toml").write_text(
        '[workspace]\nkernels = []\nnamespace = "org"\n'
        '[workspace.matrix]\ntorch = ["2.13"]\ncuda = ["13.0"]\narchs = ["x86_64"]\nbackends = ["cpu"]\n'
        '[workspace.matrix.ci]\ntorhc = ["2.13"]\n'
    )
    with pytest.raises(WorkspaceError) as info:
        load_workspace(tmp_path)
    assert "torhc" in info.value.message and "torch" in info.value.hint
    assert info.value.line == 10


def test_ci_must_be_a_table(tmp_path):
    from pipeline.errors import WorkspaceError
    from pipeline.workspace import load_workspace

    (tmp_path / "build.toml").write_text(
        '[workspace]\nkernels = []\nnamespace = "org"\n'
        '[workspace.matrix]\ntorch = ["2.13"]\ncuda = ["13.0"]\narchs = ["x86_64"]\nbackends = ["cpu"]\nci = "x"\n'
    )
    with pytest.raises(WorkspaceError) as info:
        load_workspace(tmp_path)
    assert "must be a table" in info.value.message
