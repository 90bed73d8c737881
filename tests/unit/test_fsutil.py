"""fsutil: output paths are judged before any work, and output appears whole or not at all."""

from __future__ import annotations

import os

import pytest

from pipeline.errors import BuildError
from pipeline.fsutil import out_path_problem, require_out_path, staged_dir


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "dir").mkdir()
    return tmp_path


@pytest.mark.parametrize("rel, kind, code", [
    ("file.txt", "directory", "out-path-not-directory"),
    ("file.txt/sub", "directory", "out-path-not-directory"),
    ("file.txt/sub/deeper", "directory", "out-path-not-directory"),
    ("file.txt/x.json", "file", "out-path-not-directory"),
    ("dir", "file", "out-path-not-file"),
    ("dir", "directory", None),
    ("dir/new/deeper", "directory", None),
    ("dir/x.json", "file", None),
    ("file.txt", "file", None),
])
def test_out_path_problem(tree, rel, kind, code):
    problem = out_path_problem(tree / rel, kind, "--out")
    assert (problem[0] if problem else None) == code
    assert not (tree / "dir" / "new").exists()  # judging creates nothing


def test_the_message_names_the_file_in_the_way(tree):
    code, message = out_path_problem(tree / "file.txt" / "sub", "directory", "--dest")
    assert message == f"--dest: {tree / 'file.txt'} is a file, so nothing can be created inside it"


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_a_read_only_parent(tree):
    (tree / "dir").chmod(0o555)
    try:
        assert out_path_problem(tree / "dir" / "out", "directory")[0] == "out-path-not-writable"
    finally:
        (tree / "dir").chmod(0o755)


def test_require_out_path_raises_the_stage_error_with_path_and_hint(tree):
    with pytest.raises(BuildError) as err:
        require_out_path(tree / "file.txt", "directory", BuildError, "--out")
    assert err.value.code == "out-path-not-directory" and err.value.exit_code == 5
    assert err.value.path == str(tree / "file.txt") and "--out" in err.value.hint


def test_staged_dir_leaves_the_old_tree_on_error(tmp_path):
    final = tmp_path / "out"
    final.mkdir()
    (final / "old").write_text("kept")
    with pytest.raises(RuntimeError), staged_dir(final) as tmp:
        (tmp / "new").write_text("half")
        raise RuntimeError("stop")
    assert sorted(p.name for p in final.iterdir()) == ["old"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
