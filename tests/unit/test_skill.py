"""pipeline/skill.py: the agent skill, and proof that it teaches what `validate` enforces.

The defect tests (item 4 of the issue): a fresh project from `init` gets one
deliberate mistake of each kind agents make most; `validate` must name it with
the rule code, and the fix it prints must be the fix the skill's reference
gives for that code. Validate only: no build, so these are fast.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.init import render
from pipeline.project import validate
from pipeline.project.rules import load_rules
from pipeline.skill import AGENTS, MARKER, MISTAKES, SkillError, render_files, write_skill


@pytest.fixture(scope="module")
def skill_files() -> dict[str, str]:
    return render_files("claude")


def reference_fix(rules_md: str, code: str) -> str:
    """The fix the skill's references/rules.md gives for `code` (its 'Fix:' line)."""
    match = re.search(rf"^### `{re.escape(code)}` \((?:error|warning)\)\n\n.*?\n\nFix: (.*?)\n", rules_md, re.M | re.S)
    assert match, f"references/rules.md has no section for {code}"
    return match.group(1).strip()


# --- the files ------------------------------------------------------------------


def test_skill_md_is_short_and_ends_in_the_loop(skill_files):
    text = skill_files["SKILL.md"]
    words = len(text.split())
    assert 150 < words < 600, f"SKILL.md should be a few hundred tokens, has {words} words"
    assert text.startswith("---\nname: kernel-pipeline\ndescription: ")
    loop = text[text.index("## The loop"):]
    steps = [loop.index(f"python -m pipeline {verb}") for verb in ("validate", "build", "smoke", "bench")]
    assert steps == sorted(steps), "the loop must run validate -> build -> smoke -> bench"
    assert "fix" in loop.split("bench")[-1].lower()
    for ref in ("references/rules.md", "references/harness.md", "references/vectorized-loads.md",
                "references/gpus.md"):
        assert ref in text


def test_every_rule_of_the_validator_is_in_the_reference_with_its_hint(skill_files):
    rules_md = skill_files["references/rules.md"]
    rules = load_rules()
    assert f"{len(rules)} rules" in rules_md
    for code, rule in rules.items():
        assert reference_fix(rules_md, code) == rule.hint.strip()


def test_mistakes_table_uses_rule_codes_that_exist(skill_files):
    rules = load_rules()
    table = skill_files["references/rules.md"].split("## The mistakes agents make most")[1].split("## Every rule")[0]
    for _, code in MISTAKES:
        assert code in rules
        assert f"`{code}`" in table


def test_vectorized_loads_reference_holds_the_code_init_writes(tmp_path, skill_files):
    project = render("my-kernel", "elementwise", tmp_path / "my-kernel").root
    text = skill_files["references/vectorized-loads.md"]
    for rel in ("my_kernel_cuda/cuda_pack.cuh", "my_kernel_cuda/my_kernel.cu", "my_kernel_cpu/vec_io.h",
                "my_kernel_cpu/my_kernel_cpu.cpp"):
        assert (project / rel).read_text().rstrip() in text, rel
    for type_name in ("__nv_bfloat16", "__half", "float"):
        assert type_name in text


def test_harness_reference_is_the_harness_docstrings(skill_files):
    import inspect

    import pipeline.bench
    import pipeline.smoke

    text = skill_files["references/harness.md"]
    assert inspect.cleandoc(pipeline.smoke.__doc__) in text
    assert inspect.cleandoc(pipeline.bench.__doc__) in text


def test_gpu_reference_covers_the_four_gpus(skill_files):
    text = skill_files["references/gpus.md"]
    for gpu, cc in (("H100", "9.0"), ("H200", "9.0"), ("A100", "8.0"), ("T4", "7.5")):
        row = next(line for line in text.splitlines() if line.startswith(f"| {gpu}"))
        assert f"| {cc} |" in row


@pytest.mark.parametrize("agent", AGENTS)
def test_front_matter_per_agent(agent):
    text = render_files(agent)["SKILL.md"]
    if agent == "generic":
        assert text.startswith("# Writing kernels")
    else:
        assert text.startswith("---\nname: kernel-pipeline\n")
        assert ("allowed-tools" in text) == (agent == "claude")


def test_write_skill_replaces_its_own_copy_and_refuses_others(tmp_path):
    result = write_skill(tmp_path, "claude")
    assert (result.root / "SKILL.md").read_text().rstrip().endswith(MARKER)
    assert sorted(p.relative_to(result.root).as_posix() for p in result.root.rglob("*") if p.is_file()) == \
        sorted(result.files)
    (result.root / "SKILL.md").write_text("stale\n" + MARKER)
    write_skill(tmp_path, "codex")  # ours: replaced whole
    assert (result.root / "SKILL.md").read_text().startswith("---\nname: kernel-pipeline")

    foreign = tmp_path / "other"
    (foreign / "kernel-pipeline").mkdir(parents=True)
    (foreign / "kernel-pipeline" / "notes.md").write_text("mine")
    with pytest.raises(SkillError) as err:
        write_skill(foreign, "claude")
    assert err.value.code == "dest-not-ours"
    assert (foreign / "kernel-pipeline" / "notes.md").read_text() == "mine"


def test_cli_json(tmp_path, capsys):
    assert main(["skill", "--dest", str(tmp_path), "--for", "generic", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["agent"] == "generic" and doc["rules"] == len(load_rules())
    assert Path(doc["root"], "references", "rules.md").is_file()


# --- item 4: each common mistake, named by validate with the skill's fix --------


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{path} no longer contains {old!r}: the template changed"
    path.write_text(text.replace(old, new, 1))


def _underscore_name(root: Path) -> None:
    _edit(root / "build.toml", 'name = "my-kernel"', 'name = "my_kernel"')


def _unlisted_header(root: Path) -> None:
    (root / "my_kernel_cuda" / "helpers.cuh").write_text("#pragma once\n")
    _edit(root / "my_kernel_cuda" / "my_kernel.cu", '#include "cuda_pack.cuh"',
          '#include "cuda_pack.cuh"\n#include "helpers.cuh"')


def _absolute_import(root: Path) -> None:
    _edit(root / "torch-ext" / "my_kernel" / "__init__.py", "from ._ops import add_op_namespace_prefix, ops",
          "from my_kernel._ops import add_op_namespace_prefix, ops")


def _no_namespace_prefix(root: Path) -> None:
    _edit(root / "torch-ext" / "my_kernel" / "__init__.py",
          '@torch.library.register_fake(add_op_namespace_prefix("my_kernel"))',
          '@torch.library.register_fake("my_kernel::my_kernel")')


def _plain_torch_library(root: Path) -> None:
    _edit(root / "torch-ext" / "torch_binding.cpp", "TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops)",
          "TORCH_LIBRARY(my_kernel, ops)")


DEFECTS = [
    ("underscore name", _underscore_name, "name-invalid", "build.toml"),
    ("unlisted header", _unlisted_header, "header-unlisted", "my_kernel_cuda/my_kernel.cu"),
    ("absolute import", _absolute_import, "import-self-absolute", "torch-ext/my_kernel/__init__.py"),
    ("missing add_op_namespace_prefix", _no_namespace_prefix, "op-namespace-prefix-missing",
     "torch-ext/my_kernel/__init__.py"),
    ("plain TORCH_LIBRARY", _plain_torch_library, "torch-library-not-expand", "torch-ext/torch_binding.cpp"),
]


@pytest.mark.parametrize("template", ["elementwise", "rowwise"])
def test_fresh_project_has_no_problems(tmp_path, template):
    report = validate(render("my-kernel", template, tmp_path / "my-kernel").root)
    assert report.problems == ()


@pytest.mark.parametrize("label, defect, code, where", DEFECTS, ids=[d[0] for d in DEFECTS])
def test_validate_names_each_defect_with_the_skills_fix(tmp_path, skill_files, label, defect, code, where):
    root = render("my-kernel", "elementwise", tmp_path / "my-kernel").root
    defect(root)
    report = validate(root)
    assert [p.code for p in report.problems] == [code], [p.format() for p in report.problems]
    problem = report.problems[0]
    assert problem.is_error and not report.ok
    assert problem.path.endswith(where) and problem.line, problem.format()
    fix = reference_fix(skill_files["references/rules.md"], code)
    # validate prints a specific fix, then the rule's hint (first letter capitalised).
    assert fix[1:] in problem.hint and problem.hint.rstrip().endswith(fix[1:]), (problem.hint, fix)
    assert fix[1:] in problem.format()
