"""A kernel's case file is imported from its path; its failures become the stage's error."""

import pytest

from pipeline.casefile import load_case_list
from pipeline.errors import BenchError, SmokeError


def test_cases_are_returned_as_a_list(tmp_path):
    path = tmp_path / "cases.py"
    path.write_text("def smoke_cases():\n    yield {'name': 'a'}\n    yield {'name': 'b'}\n")
    assert load_case_list(path, "smoke_cases", error=SmokeError, code="smoke-cases-failed") == [{"name": "a"}, {"name": "b"}]


def test_a_broken_case_file_names_the_file_and_the_exception(tmp_path):
    path = tmp_path / "cases.py"
    path.write_text("import not_a_module_anywhere\n")
    with pytest.raises(BenchError) as info:
        load_case_list(path, "bench_cases", error=BenchError, code="bench-cases-failed")
    assert info.value.path == str(path) and info.value.code == "bench-cases-failed"
    assert "ModuleNotFoundError" in info.value.message


def test_a_missing_function_is_reported(tmp_path):
    path = tmp_path / "cases.py"
    path.write_text("X = 1\n")
    with pytest.raises(SmokeError, match="AttributeError"):
        load_case_list(path, "smoke_cases", error=SmokeError, code="smoke-cases-failed")
