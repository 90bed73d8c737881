"""The kernel card: rendered from pipeline/templates/card/README.md.j2, deterministic."""

from __future__ import annotations


from pipeline.card import Card, CardVariant, render_card, render_page, variant_from_name
from pipeline.card_bench import BenchSummary


def card(**kw) -> Card:
    base = dict(
        repo_id="my-org/rmsnorm", name="rmsnorm", version=3, license="Apache-2.0",
        functions=("rms_norm", "fused_add_rms_norm"),
        variants=(variant_from_name("torch213-cxx11-cu130-x86_64-linux",
                                    {"id": "_rmsnorm_cuda_abc1234", "backend": {"type": "cuda", "archs": ["9.0"]}}),
                  CardVariant("torch213-cxx11-cpu-x86_64-linux", "torch 2.13", "CPU", "x86_64-linux",
                              kernel_id="_rmsnorm_cpu_abc1234", backend="cpu")),
        kernel_commit="0123456789abcdef0123456789abcdef01234567", builders=("kernel-pipeline 0.1.0",),
        checks=("check passed for 2 variant(s)",),
    )
    base.update(kw)
    return Card(**base)


def test_front_matter_usage_and_variants():
    text = render_card(card())
    assert text.startswith("---\nlibrary_name: kernels\nlicense: apache-2.0\ntags:\n- kernels\n- cpu\n- cuda\n---\n")
    assert 'get_kernel("my-org/rmsnorm", version=3)' in text
    assert "rms_norm = kernel_module.rms_norm" in text
    assert "| CUDA 13.0 | 9.0 | `_rmsnorm_cuda_abc1234` | `torch213-cxx11-cu130-x86_64-linux` |" in text
    assert "| CPU | – | `_rmsnorm_cpu_abc1234` | `torch213-cxx11-cpu-x86_64-linux` |" in text
    assert "commit `0123456789abcdef0123456789abcdef01234567`" in text
    assert "No benchmark results recorded yet: `python -m pipeline bench BUILD_DIR" in text
    assert "--force" not in text
    assert "\n\n\n" not in text and text.endswith("\n")


def test_rendering_is_deterministic_and_order_independent():
    a = render_card(card())
    b = render_card(card(variants=tuple(reversed(card().variants))))
    assert a == b


def test_benchmark_summary_plot_page_and_force_are_shown(tmp_path):
    table = ("| op | shape class | shapes | H200 bf16 |\n| --- | --- | --- | --- |\n"
             "| `f` | decode | 1x4096 | 1.10× eager |")
    png = tmp_path / "h200.png"
    png.write_bytes(b"\x89PNG")
    bench = BenchSummary(table=table, method="Median of 100 repetitions.",
                         plots=(("media/benchmark-h200.png", "rmsnorm on NVIDIA H200"),),
                         media=(("media/benchmark-h200.png", png),), page="# rmsnorm: benchmark records\n")
    page = render_page(card(bench=bench, forced=("check: /tmp/x/build/t/_ops.py: digest-mismatch: digest mismatch",)))
    text = page.readme
    assert table in text and "![rmsnorm on NVIDIA H200](media/benchmark-h200.png)" in text
    assert "[benchmarks.md](benchmarks.md)" in text and "No benchmark results" not in text
    assert page.files == (("benchmarks.md", b"# rmsnorm: benchmark records\n"), ("media/benchmark-h200.png", png))
    assert "Published with `--force`" in text and "> - check: _ops.py: digest-mismatch: digest mismatch" in text


def test_unparseable_variant_is_still_listed():
    v = variant_from_name("not-a-variant")
    assert v.framework is None and v.target is None
    assert "| ? | – | – | `not-a-variant` |" in render_card(card(variants=(v,)))


def test_variants_of_one_backend_share_a_row_and_signatures_a_line():
    from pipeline.card import signature_lines
    from pipeline.signing import SignatureReport, SignerIdentity

    names = [f"torch21{t}-cxx11-cu130-{p}-linux" for t in (2, 3) for p in ("x86_64", "aarch64")]
    cuda = tuple(variant_from_name(n, {"id": "_rmsnorm_cuda_abc1234", "backend": {"type": "cuda", "archs": ["9.0"]}})
                 for n in names)
    # Every torch version on every platform: said as a matrix; anything less: named.
    text = render_card(card(variants=cuda))
    assert ("| CUDA 13.0 | 9.0 | `_rmsnorm_cuda_abc1234` | torch 2.12, 2.13 on aarch64-linux, x86_64-linux (4) |"
            in text)
    three = render_card(card(variants=cuda[:3]))
    assert ("| CUDA 13.0 | 9.0 | `_rmsnorm_cuda_abc1234` | `torch212-cxx11-cu130-aarch64-linux`, "
            "`torch212-cxx11-cu130-x86_64-linux`, `torch213-cxx11-cu130-x86_64-linux` |") in three
    who = SignerIdentity(build_signer_uri="https://github.com/o/r/.github/workflows/kernels.yml@refs/tags/v1")
    signed = [SignatureReport(n, "verified", identity=who, log_index=100 + i) for i, n in enumerate(names)]
    assert signature_lines(tuple(signed)) == (
        "all 4 variants: signed by https://github.com/o/r/.github/workflows/kernels.yml@refs/tags/v1 "
        "(Sigstore, Rekor entries 100-103)",)
    mixed = signature_lines((signed[0], SignatureReport(names[1], "unsigned")))
    assert mixed == (f"`{names[0]}`: signed by {who.build_signer_uri} (Sigstore, Rekor entry 100)",
                     f"`{names[1]}`: not signed")


def test_a_projects_card_md_is_the_template_and_our_sections_follow():
    template = ("---\nlibrary_name: kernels\n{% if license %}license: {{ license }}\n{% endif %}---\n\n"
                "Use `get_kernel(\"{{ repo_id }}\", version={{ version }})`.\n"
                "{% for func in functions %}\n- `{{ func }}`\n{% endfor %}\n"
                "{% if layers %}Layers: {{ layers | join(', ') }}{% endif %}\n\n## Benchmarks\n\nSee the source.\n")
    text = render_card(card(template=template, layers=("RMSNorm",)))
    assert text.startswith("---\nlibrary_name: kernels\nlicense: apache-2.0\n---\n")
    assert 'get_kernel("my-org/rmsnorm", version=3)' in text and "- `fused_add_rms_norm`" in text
    assert "Layers: RMSNorm" in text
    assert text.index("## Benchmarks") < text.index("## Build variants (version 3)") < text.index("## Provenance")
    # The project's own Benchmarks section stands; no second "no results" section.
    assert "No benchmark results" not in text


def test_a_broken_card_md_is_a_publish_error():
    import pytest

    from pipeline.errors import PublishError

    with pytest.raises(PublishError) as err:
        render_card(card(template="{% for x in %}"))
    assert err.value.code == "card-template-invalid"
