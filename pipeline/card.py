"""The kernel card: `README.md` on the Hub repository's `main` branch.

A kernel project's own `CARD.md` is its card template, as with kernel-builder
(`kernel-builder/src/card.rs`): it is rendered with the same variables
(`repo_id`, `version`, `functions`, `layers`, `has_benchmark`, `upstream`,
`source`, `license`). The pipeline's part follows it, from
`pipeline/templates/card/generated.md.j2`: what smoke verified per op (the
contract, how it was bound, cases, dtypes, shapes, seeds per case), its
warnings (weak project cases, delegation to PyTorch, declined inputs), an
"untested" mark for ops published with `--allow-untested`, the published
variants with their torch/backend/platform/archs, the benchmark table when
results exist, and provenance (including a `--force`). Seeds are counted, not
listed: they change every run, and the card must not. A project without CARD.md gets
`README.md.j2`, which has the Hub's front matter (`library_name: kernels`,
`license`) and a usage section. No timestamps: publishing an unchanged bundle
renders the same bytes and makes no commit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2
from kernels.variants import parse_variant

from pipeline import __version__
from pipeline.bench import markdown_table
from pipeline.bundle import Bundle, VariantBundle, describe_variant, exported_functions, exported_layers
from pipeline.consumers import default_consumers
from pipeline.errors import Problem, PublishError
from pipeline.smoke.report import OpCoverage

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.upload.plan import CardMaker
    from pipeline.workspace import Kernel

TEMPLATE_DIR = Path(__file__).parent / "templates" / "card"
TEMPLATE = "README.md.j2"
GENERATED = "generated.md.j2"
PROJECT_TEMPLATE = "CARD.md"


@dataclass(frozen=True)
class CardVariant:
    name: str
    framework: str | None
    target: str | None
    platform: str | None
    archs: tuple[str, ...] = ()
    kernel_id: str | None = None
    backend: str | None = None


@dataclass(frozen=True)
class Card:
    repo_id: str
    name: str
    version: int
    license: str | None
    functions: tuple[str, ...]
    variants: tuple[CardVariant, ...]
    description: str | None = None
    benchmark_table: str | None = None
    kernel_commit: str | None = None
    dirty: bool = False
    builders: tuple[str, ...] = ()
    checks: tuple[str, ...] = ()
    forced: tuple[str, ...] = ()
    layers: tuple[str, ...] = ()
    has_benchmark: bool = False
    template: str | None = None  # the project's CARD.md, if it has one
    coverage: tuple[OpCoverage, ...] = ()  # what smoke verified, per op
    warnings: tuple[Problem, ...] = ()  # smoke's warnings (weak cases, delegation, declined inputs)
    untested: tuple[str, ...] = ()  # ops published with --allow-untested
    signatures: tuple[str, ...] = ()  # one line per signed variant (who signed it)
    pipeline_version: str = field(default=__version__)
    trusted: bool | None = None  # the namespace is a trusted publisher (False: users pass trust_remote_code=True)
    consumers: tuple[str, ...] = ()  # the kernels/huggingface_hub releases verify loads it with
    model_table: str | None = None  # recorded model-check figures (benchmarks/results/model-*.json)

    @property
    def backends(self) -> tuple[str, ...]:
        return tuple(sorted({v.backend for v in self.variants if v.backend}))


def variant_from_bundle(v: VariantBundle) -> CardVariant:
    return CardVariant(name=v.name, framework=v.framework, target=v.target, platform=v.platform,
                       archs=tuple(v.archs), kernel_id=v.kernel_id, backend=v.backend)


def variant_from_name(name: str, metadata: dict | None = None) -> CardVariant:
    """A variant already on the Hub: described from its name (kernels' parser)
    and, when we have it, its metadata.json."""
    try:
        framework, target, platform = describe_variant(parse_variant(name))
    except ValueError:
        framework = target = platform = None
    metadata = metadata or {}
    backend = (metadata.get("backend") or {})
    return CardVariant(name=name, framework=framework, target=target, platform=platform,
                       archs=tuple(backend.get("archs") or ()), kernel_id=metadata.get("id"),
                       backend=str(backend.get("type", "")).lower() or None)


def _environment(loader: jinja2.BaseLoader) -> jinja2.Environment:
    # trim_blocks as kernel-builder's minijinja environment; lstrip_blocks so
    # indented tags leave no stray spaces.
    return jinja2.Environment(loader=loader, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                              undefined=jinja2.ChainableUndefined, autoescape=False)


def _context(card: Card) -> dict:
    return dict(
        repo_id=card.repo_id, namespace=card.repo_id.split("/")[0], name=card.name, version=card.version,
        license=(card.license or "").lower() or None, functions=list(card.functions) or None,
        layers=list(card.layers) or None, has_benchmark=card.has_benchmark, upstream=None, source=None,
        variants=sorted(card.variants, key=lambda v: v.name), description=card.description,
        benchmark_table=card.benchmark_table, kernel_commit=card.kernel_commit, dirty=card.dirty,
        builders=list(card.builders), checks=list(card.checks), forced=list(card.forced),
        pipeline_version=card.pipeline_version, backends=list(card.backends),
        has_benchmark_section=False, signatures=list(card.signatures), trusted=card.trusted,
        consumers=list(card.consumers),
        model_table=card.model_table, coverage=list(card.coverage), untested=list(card.untested),
        warnings=[w for w in card.warnings if w.severity == "warning"],
        # The arguments of the get_kernel call users type: the published repository, and
        # trust_remote_code=True where its namespace is not a trusted publisher.
        load_args=f'"{card.repo_id}", version={card.version}' + (", trust_remote_code=True" if card.trusted is False
                                                                  else ""),
    )


def render_card(card: Card) -> str:
    ours = _environment(jinja2.FileSystemLoader(str(TEMPLATE_DIR)))
    context = _context(card)
    if card.template is None:
        text = ours.get_template(TEMPLATE).render(**context)
    else:
        try:
            project_text = _environment(jinja2.BaseLoader()).from_string(card.template).render(**context)
        except jinja2.TemplateError as exc:
            raise PublishError(f"the kernel's CARD.md does not render: {exc}", code="card-template-invalid", path=PROJECT_TEMPLATE,
                               line=getattr(exc, "lineno", None),
                               hint="it is a jinja template with kernel-builder's variables") from None
        context["has_benchmark_section"] = "## Benchmark" in project_text
        text = project_text.rstrip() + "\n\n" + ours.get_template(GENERATED).render(**context)
    # One blank line at most between blocks, one newline at the end.
    lines: list[str] = []
    for line in text.splitlines():
        if line.strip() == "" and lines and lines[-1].strip() == "":
            continue
        lines.append(line.rstrip())
    return "\n".join(lines).strip() + "\n"


def project_template(project_root: Path | None) -> str | None:
    if project_root is None:
        return None
    path = Path(project_root) / PROJECT_TEMPLATE
    return path.read_text(encoding="utf-8") if path.is_file() else None


MODEL_RESULTS = "model-*.json"  # `verify --model ... --json` output, recorded in benchmarks/results/


def benchmark_table(project_root: Path | None) -> str | None:
    """The Markdown table of the kernel's published benchmark results, if any
    (RMSNORM's `pipeline.bench.markdown_table`)."""
    if project_root is None:
        return None
    results_dir = Path(project_root) / "benchmarks" / "results"
    # One device's records together, its primary record (`h200.json`) before its other dtypes
    # (`h200-float16.json`): name order alone would put every `-float16` before the bf16 table.
    results = sorted(set(results_dir.glob("*.json")) - set(results_dir.glob(MODEL_RESULTS)),
                     key=lambda p: (p.stem.split("-")[0], "-" in p.stem, p.stem)) if results_dir.is_dir() else []
    if not results:
        return None
    tables = []
    for path in results:
        try:
            table = markdown_table(path)
        except Exception:  # a malformed results file must not stop a publish; the card just omits it
            continue
        if table and table.strip():
            tables.append(table.strip())
    return "\n\n".join(tables) or None


def model_table(project_root: Path | None) -> str | None:
    """The recorded model-check figures (`benchmarks/results/model-*.json`, as
    `verify --model NAME --json` writes them) as one Markdown table, if any."""
    results_dir = Path(project_root) / "benchmarks" / "results" if project_root is not None else None
    rows, commands = [], []
    for path in sorted(results_dir.glob(MODEL_RESULTS)) if results_dir is not None and results_dir.is_dir() else ():
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            models = doc.get("models") or []
            found = [_model_row(m, c) for m in models for c in m.get("cases") or ()]
        except (ValueError, AttributeError, KeyError, TypeError):  # a malformed file must not stop a publish
            continue
        rows += found
        # A recorded run says how it was made (the recorder adds `command`, as bench records carry theirs).
        if found and isinstance(doc.get("command"), str):
            commands.append(f"Measured with `{doc['command']}`" + (f" ({doc['created']})." if doc.get("created") else "."))
    if not rows:
        return None
    head = ("| model | device | consumer | tokens | modules swapped | forward before -> after (ms) | speedup "
            "| error vs float32: stock -> kernel |\n| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    return "\n".join([head, *rows]) + "".join(f"\n\n{c}" for c in commands)


def _model_row(m: dict, c: dict) -> str:
    cfg = m.get("config") or {}
    model = f"{m['model']} ({cfg.get('layers')} layers, hidden {cfg.get('hidden')}, {cfg.get('dtype')})"
    return (f"| {model} | {m.get('device_name') or m.get('device')} | {m.get('consumer')} | {c['tokens']} | "
            f"{c['replaced']} | {c['stock_ms']:.2f} -> {c['kernel_ms']:.2f} | {c['stock_ms'] / c['kernel_ms']:.2f}x | "
            f"{c['stock_error']:.4f} -> {c['kernel_error']:.4f} |")


@dataclass(frozen=True)
class CardInputs:
    """Everything the card says that does not depend on the Hub: read once from
    the bundle and the resolved kernel, before the upload is planned."""

    name: str
    version: int
    license: str | None
    functions: tuple[str, ...]
    layers: tuple[str, ...]
    local: dict  # variant name -> CardVariant, for the bundle's variants
    kernel_commit: str | None
    dirty: bool
    builders: tuple[str, ...]
    checks: tuple[str, ...]
    forced: tuple[str, ...]
    benchmark_table: str | None
    template: str | None
    has_benchmark: bool
    description: str | None = None
    consumers: tuple[str, ...] = ()
    model_table: str | None = None
    coverage: tuple[OpCoverage, ...] = ()
    warnings: tuple[Problem, ...] = ()
    untested: tuple[str, ...] = ()
    signatures: tuple[str, ...] = ()


def card_inputs(bundle: Bundle, kernel: "Kernel | None", version: int, *, checks: tuple[str, ...] = (),
                forced: tuple[str, ...] = (), description: str | None = None, coverage: tuple = (),
                warnings: tuple = (), untested: tuple[str, ...] = (), signatures: tuple[str, ...] = ()) -> CardInputs:
    functions: tuple[str, ...] = ()
    layers: tuple[str, ...] = ()
    for v in bundle.variants:
        functions, layers = exported_functions(v), exported_layers(v)
        if functions:
            break
    provenance = next((v.provenance for v in bundle.variants if v.provenance), {})
    root = kernel.root if kernel is not None else None
    return CardInputs(
        name=bundle.name or (kernel.name if kernel else ""), version=version,
        license=next((v.license for v in bundle.variants if v.license), None),
        functions=functions, layers=layers, local={v.name: variant_from_bundle(v) for v in bundle.variants},
        kernel_commit=provenance.get("kernel_commit"), dirty=bool(provenance.get("dirty")),
        builders=tuple(sorted({v.provenance["kernel_builder"] for v in bundle.variants
                               if v.provenance.get("kernel_builder")})),
        checks=checks, forced=forced, benchmark_table=benchmark_table(root), template=project_template(root),
        has_benchmark=bool(kernel is not None and kernel.benchmarks_dir is not None), description=description,
        consumers=tuple(c.label for c in default_consumers()), model_table=model_table(root),
        coverage=tuple(coverage), warnings=tuple(warnings), untested=tuple(untested), signatures=tuple(signatures),
    )


def card_maker(inputs: CardInputs, repo_id: str, *, newer_published: bool,
               trusted: bool | None = None) -> "CardMaker":
    """The card for the variants a branch will hold (None: a newer version owns main's card).
    `trusted`: whether the namespace is a trusted publisher on the target Hub."""
    def card_for(names: list[str], kept_metadata: dict) -> str | None:
        if newer_published:
            return None
        variants = tuple(inputs.local.get(n) or variant_from_name(n, kept_metadata.get(n)) for n in names)
        return render_card(Card(
            repo_id=repo_id, name=inputs.name or repo_id.split("/")[1], version=inputs.version,
            license=inputs.license, functions=inputs.functions, variants=variants, description=inputs.description,
            benchmark_table=inputs.benchmark_table, kernel_commit=inputs.kernel_commit, dirty=inputs.dirty,
            builders=inputs.builders, checks=inputs.checks, forced=inputs.forced, layers=inputs.layers,
            template=inputs.template, has_benchmark=inputs.has_benchmark, trusted=trusted,
            consumers=inputs.consumers, model_table=inputs.model_table, coverage=inputs.coverage,
            warnings=inputs.warnings, untested=inputs.untested, signatures=inputs.signatures,
        ))

    return card_for
