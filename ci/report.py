"""Run one pipeline verb with --json, keep its report, and put a table of it in the job summary.

    python ci/report.py --save out/check.json check out/rmsnorm --no-matrix
    python ci/report.py --render check out/check.json     # only render a saved report

The verb's own exit status is this script's exit status, so a failing check
still fails the step, after its table reached the summary. The tables are
rendered from the verbs' JSON documents; the bench table comes from
`pipeline.bench.markdown_table`, the same one the kernel card shows.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

_MAX_ROWS = 200  # job summaries are limited to 1 MiB; a table this long is already unreadable


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(rows: list[dict], columns: list[str]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    for row in rows[:_MAX_ROWS]:
        lines.append("| " + " | ".join(_cell(row.get(c)) for c in columns) + " |")
    if len(rows) > _MAX_ROWS:
        lines.append(f"\n… {len(rows) - _MAX_ROWS} more row(s) in the saved report")
    return lines


def _problems(document: dict) -> list[str]:
    problems = document.get("problems") or []
    if not problems:
        return []
    lines = ["", "<details><summary>" + f"{len(problems)} problem(s)" + "</summary>", "", "```"]
    for p in problems[:_MAX_ROWS]:
        if isinstance(p, dict):
            where = ":".join(str(p[k]) for k in ("path", "line") if p.get(k) not in (None, ""))
            lines.append(f"{where}: {p.get('severity', 'error')} {p.get('code', '')}: {p.get('message', '')}".strip())
        else:
            lines.append(str(p))
    lines += ["```", "</details>"]
    return lines


def render_check(document: dict) -> str:
    title = f"{document.get('name') or '?'} v{document.get('version') if document.get('version') is not None else '?'}"
    status = "passed" if document.get("ok") else "FAILED"
    problem_paths = [(p.get("path") or "", p.get("severity", "error")) for p in document.get("problems") or []
                     if isinstance(p, dict)]
    rows = []
    for v in document.get("variants") or []:
        errors = sum(1 for path, severity in problem_paths if severity == "error" and v.get("name") in Path(path).parts)
        rows.append({**v, "files": len(v.get("files") or []), "status": "ok" if not errors else f"{errors} error(s)"})
    lines = [f"### check: {title}: {status}", "", f"`{document.get('root', '')}`", ""]
    lines += _table(rows, ["name", "framework", "target", "platform", "files", "status"])
    coverage = document.get("coverage") or {}
    if coverage.get("expected") is not None:
        lines += ["", f"Matrix coverage: {len(coverage.get('covered') or [])}/{len(coverage['expected'])} variant(s)."]
        lines += [f"- missing: `{name}`" for name in coverage.get("missing") or []]
        lines += [f"- not in the matrix: `{name}`" for name in coverage.get("extra") or []]
    return "\n".join(lines + _problems(document)) + "\n"


def render_smoke(document: dict) -> str:
    """One row per case and check: how many seeds passed, the worst error against its bound."""
    status = "passed" if document.get("passed") else "FAILED"
    grouped: dict[tuple[str, str], dict] = {}
    for r in document.get("results") or []:
        row = grouped.setdefault((r.get("name", ""), r.get("check", "")), {
            "case": r.get("name", ""), "check": r.get("check", ""), "runs": 0, "passed": 0,
            "worst error": None, "bound": r.get("bound"), "message": ""})
        row["runs"] += 1
        row["passed"] += 1 if r.get("passed") else 0
        if r.get("error") is not None and (row["worst error"] is None or r["error"] > row["worst error"]):
            row["worst error"] = r["error"]
        if not r.get("passed") and not row["message"]:
            row["message"] = (r.get("message") or "")[:200]
    rows = [{**row, "passed": f"{row['passed']}/{row['runs']}"} for row in grouped.values()]
    counts = document.get("counts") or {}
    lines = [f"### smoke: {document.get('kernel') or '?'} `{document.get('variant') or '?'}` on "
             f"{document.get('device') or '?'}: {status}", "",
             f"{counts.get('total', len(document.get('results') or [])) - counts.get('failed', 0)}"
             f"/{counts.get('total', len(document.get('results') or []))} checks passed.", ""]
    lines += _table(rows, ["case", "check", "passed", "worst error", "bound", "message"])
    return "\n".join(lines) + "\n"


def render_bench(document: dict) -> str:
    lines = [f"### bench: {document.get('kernel') or document.get('name') or ''}".rstrip(), ""]
    try:
        from pipeline.bench import markdown_table  # the kernel card's own table
    except ImportError:
        markdown_table = None
    if markdown_table is not None:
        try:
            return "\n".join(lines) + "\n" + markdown_table(document).rstrip() + "\n"
        except Exception as exc:  # the report is still worth showing: fall back to the generic table
            lines.append(f"(bench table unavailable: {exc})")
    return "\n".join(lines) + "\n" + render_generic("bench", document)


def render_generic(verb: str, document) -> str:
    """Any other verb: its status, its scalar fields, and its first list of records as a table."""
    if not isinstance(document, dict):
        return f"### {verb}\n\n```\n{json.dumps(document, indent=2)[:4000]}\n```\n"
    status = ""
    for key in ("ok", "passed", "verified"):
        if isinstance(document.get(key), bool):
            status = ": passed" if document[key] else ": FAILED"
            break
    lines = [f"### {verb}{status}", ""]
    scalars = {k: v for k, v in document.items() if isinstance(v, (str, int, float)) and not isinstance(v, bool)}
    lines += [f"- {k}: `{_cell(v)}`" for k, v in scalars.items()]
    for key, value in document.items():
        if key != "problems" and isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            columns: list[str] = []
            for record in value:
                columns += [c for c, v in record.items() if c not in columns and not isinstance(v, dict)]
            lines += ["", f"**{key}**", ""] + _table(value, columns)
            break
    return "\n".join(lines + _problems(document)) + "\n"


def render_error(verb: str, document: dict) -> str:
    """A PipelineError the verb printed instead of its report (`error`, `code`, `hint`, `problems`)."""
    lines = [f"### {verb}: FAILED", "", f"{document.get('code', '')}: {document['error']}".lstrip(": ")]
    if document.get("hint"):
        lines += ["", f"hint: {document['hint']}"]
    return "\n".join(lines + _problems(document)) + "\n"


def render(verb: str, document) -> str:
    if isinstance(document, dict) and "error" in document and "exit_code" in document:
        return render_error(verb, document)
    if verb == "check" and isinstance(document, dict):
        return render_check(document)
    if verb == "smoke" and isinstance(document, dict):
        return render_smoke(document)
    if verb == "bench" and isinstance(document, dict):
        return render_bench(document)
    return render_generic(verb, document)


def append_summary(text: str) -> None:
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(text + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save", type=Path, help="write the verb's JSON report here")
    parser.add_argument("--render", nargs=2, metavar=("VERB", "REPORT"), help="render a saved report and stop")
    parser.add_argument("verb", nargs="?")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)

    if args.render:
        verb, saved = args.render[0], Path(args.render[1])
        text = render(verb, json.loads(saved.read_text(encoding="utf-8")))
        print(text)
        append_summary(text)
        return 0
    if not args.verb:
        parser.error("give a pipeline verb, or --render VERB REPORT")

    cmd = [sys.executable, "-m", "pipeline", args.verb, *args.args, "--json"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)  # stderr (progress, problems) goes to the log
    try:
        document = json.loads(proc.stdout)
    except json.JSONDecodeError:
        sys.stdout.write(proc.stdout)
        print(f"::error title=pipeline {args.verb}::no JSON report (exit status {proc.returncode})")
        return proc.returncode or 1
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        args.save.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    text = render(args.verb, document)
    print(text)
    append_summary(text)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
