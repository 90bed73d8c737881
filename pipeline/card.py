"""The kernel card: `README.md` on the Hub repository's `main` branch, and the files
it shows (`benchmarks.md`, `media/benchmark-<record>.png`).

A kernel project's own `CARD.md` is its card template, as with kernel-builder
(`kernel-builder/src/card.rs`): it is rendered with the same variables
(`repo_id`, `version`, `functions`, `layers`, `has_benchmark`, `upstream`,
`source`, `license`). The pipeline's part, `pipeline/templates/card/generated.md.j2`,
follows it, or stands where the template writes `{{ pipeline_sections }}`: the
performance summary (card_bench: one table per op and shape class, the plot, a link to
`benchmarks.md` with every record in full), the verification summary
(card_verification), the published variants, provenance (including a `--force`).
A project without CARD.md gets `README.md.j2`, which has the Hub's front matter
(`library_name: kernels`, `license`) and a usage section.

The card is read on the Hub as the kernel's page: it is kept short (tests hold it to
CARD_MAX_BYTES), it names no path of the machines that made it (portable_paths), and it
has no timestamps: publishing an unchanged bundle renders the same bytes and makes no commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2

from pipeline import __version__
from pipeline.bundle import Bundle, exported_functions, exported_layers
from pipeline.card_bench import PAGE, BenchSummary, bench_summary, model_table
from pipeline.card_variants import (CardVariant, signature_lines, variant_from_bundle,  # noqa: F401 (re-exported)
                                    variant_from_name, variant_groups)
from pipeline.card_verification import VerificationSummary, recorded_runs, verification_summary
from pipeline.consumers import default_consumers
from pipeline.errors import PublishError
from pipeline.portable_paths import Roots, portable_text

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.smoke.report import SmokeReport
    from pipeline.upload.plan import CardMaker
    from pipeline.workspace import Kernel

TEMPLATE_DIR = Path(__file__).parent / "templates" / "card"
TEMPLATE = "README.md.j2"
GENERATED = "generated.md.j2"
PROJECT_TEMPLATE = "CARD.md"
PLACEMENT = "pipeline_sections"  # where a CARD.md puts the pipeline's sections (default: after it)
# kernels-community's cards are 1-4 KB: the Hub shows the card as the kernel's page, and the
# full tables are one link away (benchmarks.md). The tests hold every kernel's card to this.
CARD_MAX_BYTES = 8 * 1024


@dataclass(frozen=True)
class Card:
    repo_id: str
    name: str
    version: int
    license: str | None
    functions: tuple[str, ...]
    variants: tuple[CardVariant, ...]
    description: str | None = None
    bench: BenchSummary | None = None  # the performance summary and what it shows (card_bench)
    kernel_commit: str | None = None
    dirty: bool = False
    builders: tuple[str, ...] = ()
    checks: tuple[str, ...] = ()
    forced: tuple[str, ...] = ()
    layers: tuple[str, ...] = ()
    has_benchmark: bool = False
    template: str | None = None  # the project's CARD.md, if it has one
    verification: VerificationSummary = field(default_factory=VerificationSummary)
    signatures: tuple[str, ...] = ()  # one line per signed variant (who signed it)
    pipeline_version: str = field(default=__version__)
    trusted: bool | None = None  # the namespace is a trusted publisher (False: users pass trust_remote_code=True)
    consumers: tuple[str, ...] = ()  # the kernels/huggingface_hub releases verify loads it with
    model_table: str | None = None  # recorded model-check figures (benchmarks/results/model-*.json)

    @property
    def backends(self) -> tuple[str, ...]:
        return tuple(sorted({v.backend for v in self.variants if v.backend}))


@dataclass(frozen=True)
class CardPage:
    """What main holds besides the builds: the card and the files it shows or links."""

    readme: str
    files: tuple[tuple[str, "Path | bytes"], ...] = ()  # (path in the repository, local file or content)


def _environment(loader: jinja2.BaseLoader) -> jinja2.Environment:
    # trim_blocks as kernel-builder's minijinja environment; lstrip_blocks so
    # indented tags leave no stray spaces.
    env = jinja2.Environment(loader=loader, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.ChainableUndefined, autoescape=False)
    # For text the publishing machine wrote (checks, warnings, commands): no machine's paths.
    env.filters["portable"] = lambda text: portable_text(str(text))
    return env


def _context(card: Card) -> dict:
    return dict(
        repo_id=card.repo_id, namespace=card.repo_id.split("/")[0], name=card.name, version=card.version,
        license=(card.license or "").lower() or None, functions=list(card.functions) or None,
        layers=list(card.layers) or None, has_benchmark=card.has_benchmark, upstream=None, source=None,
        variants=sorted(card.variants, key=lambda v: v.name), variant_groups=variant_groups(card.variants),
        description=card.description,
        bench=card.bench if card.bench is not None and card.bench.table else None,
        benchmarks_page=PAGE if card.bench is not None and card.bench.page else None,
        kernel_commit=card.kernel_commit, dirty=card.dirty,
        builders=list(card.builders), checks=list(card.checks), forced=list(card.forced),
        pipeline_version=card.pipeline_version, backends=list(card.backends),
        has_benchmark_section=False, signatures=list(card.signatures), trusted=card.trusted,
        consumers=list(card.consumers), model_table=card.model_table, verification=card.verification,
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
        # A project with its own Benchmark section and no records gets no "none yet" line.
        context["has_benchmark_section"] = "## Benchmark" in card.template
        generated = ours.get_template(GENERATED).render(**context).strip()
        try:
            project_text = _environment(jinja2.BaseLoader()).from_string(card.template).render(
                **context, **{PLACEMENT: generated})
        except jinja2.TemplateError as exc:
            raise PublishError(f"the kernel's CARD.md does not render: {exc}", code="card-template-invalid", path=PROJECT_TEMPLATE,
                               line=getattr(exc, "lineno", None),
                               hint="it is a jinja template with kernel-builder's variables") from None
        placed = PLACEMENT in card.template
        text = project_text if placed else project_text.rstrip() + "\n\n" + generated
    # One blank line at most between blocks, one newline at the end.
    lines: list[str] = []
    for line in text.splitlines():
        if line.strip() == "" and lines and lines[-1].strip() == "":
            continue
        lines.append(line.rstrip())
    return "\n".join(lines).strip() + "\n"


def render_page(card: Card) -> CardPage:
    """The card and the files it shows (the plots) and links (benchmarks.md)."""
    files: list[tuple[str, Path | bytes]] = []
    if card.bench is not None:
        if card.bench.page:
            files.append((PAGE, card.bench.page.encode("utf-8")))
        files += [(path, local) for path, local in card.bench.media]
    return CardPage(readme=render_card(card), files=tuple(files))


def project_template(project_root: Path | None) -> str | None:
    if project_root is None:
        return None
    path = Path(project_root) / PROJECT_TEMPLATE
    return path.read_text(encoding="utf-8") if path.is_file() else None


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
    bench: BenchSummary | None
    template: str | None
    has_benchmark: bool
    description: str | None = None
    consumers: tuple[str, ...] = ()
    model_table: str | None = None
    verification: VerificationSummary = field(default_factory=VerificationSummary)
    signatures: tuple[str, ...] = ()


def machine_roots(bundle: Bundle, kernel: "Kernel | None") -> Roots:
    """Where the directories of this machine go in the card's prose: the workspace and the
    project as they are in the source, the bundle as the repository holds it (`build/`)."""
    roots: dict[Path, str] = {Path(bundle.root): "build"}
    if kernel is not None:
        roots[Path(kernel.root)] = kernel.shown if kernel.workspace is not None else ""
        if kernel.workspace is not None:
            roots[Path(kernel.workspace.root)] = ""
    return {**roots, **{p.resolve(): prefix for p, prefix in roots.items()}}


def _portable_warnings(summary: VerificationSummary, roots: Roots) -> VerificationSummary:
    warnings = tuple(replace(w, message=portable_text(w.message, roots),
                             path=portable_text(w.path, roots) if w.path else w.path) for w in summary.warnings)
    return replace(summary, warnings=warnings)


def card_inputs(bundle: Bundle, kernel: "Kernel | None", version: int, *, checks: tuple[str, ...] = (),
                forced: tuple[str, ...] = (), description: str | None = None, smoke: "SmokeReport | None" = None,
                untested: tuple[str, ...] = (), signatures: tuple = ()) -> CardInputs:
    """`smoke`: the publish gate's smoke report (None: this host ran no variant); `signatures`:
    the bundle check's pipeline.signing.SignatureReport per variant."""
    functions: tuple[str, ...] = ()
    layers: tuple[str, ...] = ()
    for v in bundle.variants:
        functions, layers = exported_functions(v), exported_layers(v)
        if functions:
            break
    provenance = next((v.provenance for v in bundle.variants if v.provenance), {})
    root = kernel.root if kernel is not None else None
    name = bundle.name or (kernel.name if kernel else "")
    models = model_table(root)
    roots = machine_roots(bundle, kernel)
    return CardInputs(
        name=name, version=version,
        license=next((v.license for v in bundle.variants if v.license), None),
        functions=functions, layers=layers, local={v.name: variant_from_bundle(v) for v in bundle.variants},
        kernel_commit=provenance.get("kernel_commit"), dirty=bool(provenance.get("dirty")),
        builders=tuple(sorted({v.provenance["kernel_builder"] for v in bundle.variants
                               if v.provenance.get("kernel_builder")})),
        checks=tuple(portable_text(c, roots) for c in checks), forced=tuple(portable_text(f, roots) for f in forced),
        bench=bench_summary(name, root, models), template=project_template(root),
        has_benchmark=bool(kernel is not None and kernel.benchmarks_dir is not None), description=description,
        consumers=tuple(c.label for c in default_consumers()), model_table=models,
        verification=_portable_warnings(verification_summary(smoke, untested=tuple(untested),
                                                             recorded=recorded_runs(root)), roots),
        signatures=tuple(portable_text(line, roots) for line in signature_lines(tuple(signatures))),
    )


def card_maker(inputs: CardInputs, repo_id: str, *, newer_published: bool,
               trusted: bool | None = None) -> "CardMaker":
    """The card for the variants a branch will hold (None: a newer version owns main's card).
    `trusted`: whether the namespace is a trusted publisher on the target Hub."""
    def card_for(names: list[str], kept_metadata: dict) -> CardPage | None:
        if newer_published:
            return None
        variants = tuple(inputs.local.get(n) or variant_from_name(n, kept_metadata.get(n)) for n in names)
        return render_page(Card(
            repo_id=repo_id, name=inputs.name or repo_id.split("/")[1], version=inputs.version,
            license=inputs.license, functions=inputs.functions, variants=variants, description=inputs.description,
            bench=inputs.bench, kernel_commit=inputs.kernel_commit, dirty=inputs.dirty,
            builders=inputs.builders, checks=inputs.checks, forced=inputs.forced, layers=inputs.layers,
            template=inputs.template, has_benchmark=inputs.has_benchmark, trusted=trusted,
            consumers=inputs.consumers, model_table=inputs.model_table, verification=inputs.verification,
            signatures=inputs.signatures,
        ))

    return card_for
