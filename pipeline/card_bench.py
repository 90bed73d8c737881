"""The kernel card's performance part, from the project's benchmark records alone
(`benchmarks/results/<card>[-<dtype>].json`, `pipeline bench --out`, and the plot beside
each, `--plot`), so a card is made without a GPU.

The card shows one summary table (per op and shape class, the kernel against the fastest
baseline at each shape, per card) and the plot of each card's primary record; the full
per-shape tables of every record go into `benchmarks.md`, a file of the Hub repository
the card links, and the plots into `media/benchmark-<record>.png` beside it, referenced
by relative paths so that the Hub shows them. Records' commands are rendered without the
paths of the machines that made them (pipeline.portable_paths).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pipeline.bench_report import CARDS, PRIMARY_DTYPE, compared_figures, load_results, markdown_table
from pipeline.errors import BenchError

RESULTS_DIR = Path("benchmarks") / "results"
MODEL_RESULTS = "model-*.json"  # `verify --model ... --json` output, recorded beside the bench records
PAGE = "benchmarks.md"  # the full tables, a file of the Hub repository
MEDIA = "media"

# Short dtype names for the summary's column heads.
DTYPE_SHORT = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


@dataclass(frozen=True)
class BenchRecord:
    """One `pipeline bench` record of the project, and the plot made with it."""

    stem: str  # "h200", "h200-float16"
    data: dict
    plot: Path | None  # the PNG beside the JSON, if the run made one

    @property
    def card(self) -> str:
        return self.stem.split("-")[0]

    @property
    def dtype(self) -> str:
        rows = self.data["results"]
        return rows[0].get("dtype", PRIMARY_DTYPE) if rows else PRIMARY_DTYPE

    @property
    def primary(self) -> bool:
        """The card's own record (`h200.json`), not one of its other dtypes (`h200-float16.json`)."""
        return "-" not in self.stem

    @property
    def media_path(self) -> str | None:
        return f"{MEDIA}/benchmark-{self.stem}.png" if self.plot is not None else None

    @property
    def title(self) -> str:
        return f"{self.data['device']}, {self.dtype}"


def _card_order(stem: str) -> tuple:
    # The cards bench_report knows, in its order (the H200 first), then any other by name;
    # each card's primary record before its other dtypes (name order alone would not).
    card = stem.split("-")[0]
    known = list(CARDS.values())
    return (known.index(card) if card in known else len(known), card, "-" in stem, stem)


def bench_records(project_root: Path | None) -> tuple[BenchRecord, ...]:
    """The project's bench records (not its smoke, check or model records), in card order.
    A file that is not a bench record is not one: a malformed record must not stop a publish."""
    results_dir = Path(project_root) / RESULTS_DIR if project_root is not None else None
    if results_dir is None or not results_dir.is_dir():
        return ()
    records = []
    for path in sorted(set(results_dir.glob("*.json")) - set(results_dir.glob(MODEL_RESULTS)),
                       key=lambda p: _card_order(p.stem)):
        try:
            data = load_results(path)
        except BenchError:
            continue
        if not data["results"]:
            continue
        png = path.with_suffix(".png")
        records.append(BenchRecord(path.stem, data, png if png.is_file() else None))
    return tuple(records)


def headline_records(records: tuple[BenchRecord, ...]) -> tuple[BenchRecord, ...]:
    """One record per card: its primary one, else its first."""
    chosen: dict[str, BenchRecord] = {}
    for r in records:
        if r.card not in chosen or (r.primary and not chosen[r.card].primary):
            chosen[r.card] = r
    return tuple(chosen.values())


def _ratio(data: dict, row: dict, graph: bool) -> tuple[float, str] | None:
    """(baseline's time / the kernel's, that baseline) for the baseline nearest the kernel at
    one shape, each pair compared as the targets compare it (bench_report.compared_figures:
    a torch.compile made afresh per sample counts with its fastest sample, as the kernel then)."""
    times = row.get("graph_times_us" if graph else "times_us") or {}
    ratios = []
    for b in row["baselines"]:
        if "kernel" in times and b in times:
            kernel, baseline, _ = compared_figures(data, row, b, graph=graph)
            if kernel:
                ratios.append((baseline / kernel, b))
    return min(ratios) if ratios else None


def _range(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.2f}×" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}–{hi:.2f}×"


def _cell(data: dict, rows: list[dict]) -> str:
    """The kernel against the nearest baseline over a shape class: the range of the ratio,
    the baseline(s) it was, and the same under CUDA-graph replay where the class has it."""
    flushed = [x for r in rows if (x := _ratio(data, r, graph=False))]
    if not flushed:
        return "–"
    names = sorted({b for _, b in flushed})
    cell = f"{_range([v for v, _ in flushed])} {', '.join(names)}"
    graphed = [x for r in rows if r.get("graph_times_us") and (x := _ratio(data, r, graph=True))]
    if graphed:
        graph_names = sorted({b for _, b in graphed})
        cell += f"; graph {_range([v for v, _ in graphed])}" + (
            f" {', '.join(graph_names)}" if graph_names != names else "") + (
            f" ({len(graphed)} of {len(rows)})" if len(graphed) < len(rows) else "")
    return cell


def _shapes(rows: list[dict]) -> str:
    by_size = sorted(rows, key=lambda r: r.get("bytes", 0))
    return by_size[0]["shape"] if len(rows) == 1 else f"{by_size[0]['shape']} … {by_size[-1]['shape']} ({len(rows)})"


def _column(record: BenchRecord) -> str:
    known = record.card.upper() if record.card in CARDS.values() else record.data["device"]
    return f"{known} {DTYPE_SHORT.get(record.dtype, record.dtype)}"


def summary_table(records: tuple[BenchRecord, ...]) -> str | None:
    """Per op and shape class, for each card's headline record: the nearest baseline's time
    over the kernel's (above 1: the kernel is faster than every baseline), its range over
    the class's shapes."""
    heads = headline_records(records)
    if not heads:
        return None
    classes: dict[tuple[str, str], dict[str, list[dict]]] = {}
    for record in heads:
        for row in record.data["results"]:
            classes.setdefault((row["op"], row["group"]), {}).setdefault(record.stem, []).append(row)
    titles = [_column(r) for r in heads]
    lines = ["| op | shape class | shapes | " + " | ".join(titles) + " |",
             "| --- | --- | --- | " + " | ".join("---" for _ in heads) + " |"]
    for (op, group), by_record in classes.items():
        first = next(iter(by_record.values()))
        cells = [_cell(r.data, by_record[r.stem]) if r.stem in by_record else "–" for r in heads]
        lines.append(f"| `{op}` | {group} | {_shapes(first)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def method_line(records: tuple[BenchRecord, ...]) -> str:
    """What the summary's figures are, from the headline records' `method`, in two sentences."""
    method = headline_records(records)[0].data["method"]
    samples = method.get("samples", 1)
    how = f"Median of {method.get('reps', '?')} repetitions ({method.get('timer', '?')})"
    how += f" over {samples} fresh setups" if samples > 1 else ""
    how += ", L2 flushed before each" if method.get("l2_flush") else ""
    if samples > 1 and "torch_compile" in method:
        how += "; `torch.compile`, compiled afresh for each setup, counts with its fastest, as the kernel then"
    return (how + ". Each cell: the nearest baseline's time over the kernel's (above 1: faster than every "
            "baseline), its range over the class's shapes; \"graph\": under CUDA-graph replay.")


@dataclass(frozen=True)
class BenchSummary:
    """What the card and the repository hold of the benchmark records."""

    table: str | None  # the summary table (None: no bench record)
    method: str = ""
    plots: tuple[tuple[str, str], ...] = ()  # (path in the repository, alt text), one per card shown
    media: tuple[tuple[str, Path], ...] = ()  # (path in the repository, local file) to upload
    page: str | None = None  # benchmarks.md
    records: int = 0


def bench_summary(name: str, project_root: Path | None, model_table: str | None = None) -> BenchSummary:
    records = bench_records(project_root)
    if not records:
        page = None if model_table is None else _page(name, (), None, model_table)
        return BenchSummary(table=None, page=page)
    table = summary_table(records)
    heads = headline_records(records)
    plots = tuple((r.media_path, f"{name} on {r.title}: speed-up over each baseline and fraction of copy "
                                 "bandwidth, by shape") for r in heads if r.media_path)
    media = tuple((r.media_path, r.plot) for r in heads if r.media_path and r.plot)
    return BenchSummary(table=table, method=method_line(records), plots=plots, media=media,
                        page=_page(name, records, table, model_table), records=len(records))


def _page(name: str, records: tuple[BenchRecord, ...], table: str | None, model_table: str | None) -> str:
    """`benchmarks.md`: the summary, then every record's full tables (with its plot where the
    card's media holds it), then the model figures."""
    shown = {r.stem for r in headline_records(records) if r.media_path}
    lines = [f"# {name}: benchmark records", ""]
    if table:
        lines += [table, "", method_line(records) + " Every record follows in full, each card's bf16 first.", ""]
    for r in records:
        created = f", {r.data['created'][:10]}" if r.data.get("created") else ""
        lines += [f"## {r.title} (`{r.stem}`{created})", ""]
        if r.stem in shown:
            lines += [f"![{name} on {r.title}]({r.media_path})", ""]
        lines += [markdown_table(r.data).rstrip(), ""]
    if model_table:
        lines += ["## In a model", "", model_table, ""]
    return "\n".join(lines).rstrip() + "\n"


def model_table(project_root: Path | None) -> str | None:
    """The recorded model-check figures (`benchmarks/results/model-*.json`, as
    `verify --model NAME --json` writes them) as one Markdown table, if any."""
    from pipeline.portable_paths import portable_command

    results_dir = Path(project_root) / RESULTS_DIR if project_root is not None else None
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
            commands.append(f"Measured with `{portable_command(doc['command'])}`"
                            + (f" ({doc['created']})." if doc.get("created") else "."))
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

