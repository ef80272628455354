"""``bench`` against both targets: every workload runs, reports sane numbers, compares two servers."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tests.cli.conftest import Cli
from tests.support.targets import Target


@pytest.mark.parametrize(
    ("kind", "extra", "names"),
    [
        ("pub", ["--clients", "2"], ["pub"]),
        ("sub", ["--clients", "2"], ["sub", "sub"]),
        ("js-pub", ["--storage", "file"], ["js-pub"]),
        ("js-pub", ["--sync"], ["js-pub"]),
        ("js-consume", ["--batch", "50"], ["js-consume"]),
        ("kv", ["--keys", "10"], ["kv put", "kv get"]),
    ],
)
def test_each_benchmark_reports_rates_and_latencies(
    cli: Cli, kind: str, extra: list[str], names: list[str]
) -> None:
    report = cli("bench", kind, "--msgs", "300", "--size", "64", "--json", *extra).json()
    assert report["benchmark"] == kind and report["msgs"] == 300 and report["size"] == 64
    results = report["results"]
    assert [r["name"] for r in results] == names
    for r in results:
        assert r["msgs"] == 300 and r["target"] == cli.url and "note" not in r
        assert r["msgs_per_sec"] > 0 and r["seconds"] > 0
        if kind != "pub":
            lat = r["latency_us"]
            assert 0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]
    # The benchmark cleans up what it created.
    assert cli("stream", "ls", "--names", "--json").json() == []


def test_results_table_and_comparison(cli: Cli, start_server: Callable[..., Target]) -> None:
    other = start_server()
    out = cli("bench", "js-pub", "--msgs", "200", "--compare", other.url).ok().out
    assert "bench js-pub: 200 msgs of 128 B, window 256, memory storage" in out
    assert "Msgs/s" in out and "p50/p90/p99/max" in out
    assert f"A = {cli.url}" in out and f"B = {other.url}" in out
    assert "js-pub: msgs/s A ÷ B = " in out
    single = cli("bench", "sub", "--msgs", "100", "--clients", "2").ok().out
    assert f"bench sub on {cli.url}: 100 msgs of 128 B, 2 subscribers" in single
    assert "sub #1" in single and "sub #2" in single

    report = cli("bench", "pub", "--msgs", "200", "--compare", other.url, "--json").json()
    assert [r["target"] for r in report["results"]] == [cli.url, other.url]
    (ratio,) = report["ratios"]
    assert ratio["name"] == "pub" and ratio["ratio"] > 0


def test_bench_errors(cli: Cli) -> None:
    cli("bench", "pub", "--msgs", "0").fails("--msgs", rc=2)
    cli("bench", "kv", "--size", "big").fails("invalid --size", rc=2)
    cli("bench", "js-pub", "--window", "0").fails("--window", rc=2)
    cli("bench", "warp").fails("unknown command", rc=2)
    cli("bench", "pub", "--msgs", "10", "--compare", "nats://127.0.0.1:1").fails("could not connect", rc=1)
