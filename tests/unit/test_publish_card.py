"""The kernel card: rendered from pipeline/templates/card/README.md.j2, deterministic."""

from __future__ import annotations

from pipeline.card import Card, CardVariant, render_card, variant_from_name


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
    assert "| `torch213-cxx11-cu130-x86_64-linux` | torch 2.13 | CUDA 13.0 | x86_64-linux | 9.0 |" in text
    assert "| `torch213-cxx11-cpu-x86_64-linux` | torch 2.13 | CPU | x86_64-linux | – |" in text
    assert "commit `0123456789abcdef0123456789abcdef01234567`" in text
    assert "No benchmark results published yet." in text
    assert "--force" not in text
    assert "\n\n\n" not in text and text.endswith("\n")


def test_rendering_is_deterministic_and_order_independent():
    a = render_card(card())
    b = render_card(card(variants=tuple(reversed(card().variants))))
    assert a == b


def test_benchmark_table_and_force_are_shown():
    table = "| shape | kernel | torch |\n| --- | --- | --- |\n| 4x4096 | 1.0 us | 2.0 us |"
    text = render_card(card(benchmark_table=table, forced=("check: build/x: digest-mismatch: digest mismatch",)))
    assert table in text
    assert "Published with `--force`" in text and "> - check: build/x: digest-mismatch: digest mismatch" in text


def test_unparseable_variant_is_still_listed():
    v = variant_from_name("not-a-variant")
    assert v.framework is None and v.target is None
    assert "`not-a-variant` | ? | ? | any" in render_card(card(variants=(v,)))


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
    assert "No benchmark results published yet." not in text


def test_a_broken_card_md_is_a_publish_error():
    import pytest

    from pipeline.errors import PublishError

    with pytest.raises(PublishError) as err:
        render_card(card(template="{% for x in %}"))
    assert err.value.code == "card-template-invalid"
