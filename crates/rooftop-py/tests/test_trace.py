"""`rooftop.trace` against `rooftop trace --format json` on every trace fixture, against
TraceLens's own report of the same trace, and its errors against the CLI's."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

import rooftop
from conftest import FIXTURES, REPO, cli_json, run_cli, trace_fixtures

pd = pytest.importorskip("pandas", reason="the DataFrame tests need pandas (pip install pandas)")


def leaves(obj: Dict[str, Any], prefix: str = "") -> Iterator[Tuple[str, Any]]:
    """(dotted path, value) of every value in a JSON object that is not itself an
    object; the naming docs/python.md promises for nested columns."""
    for k, v in obj.items():
        if isinstance(v, dict) and v:
            yield from leaves(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


def missing(cell: Any) -> bool:
    return cell is None or (isinstance(cell, float) and math.isnan(cell))


def assert_same_rows(df: Any, rows: List[Dict[str, Any]], what: str) -> None:
    """`df` has exactly `rows`: same count and order, every value equal (a JSON null is
    a missing cell), and no column the rows do not have."""
    assert len(df) == len(rows), f"{what}: {len(df)} rows, the CLI has {len(rows)}"
    paths = set()
    for i, row in enumerate(rows):
        for path, value in leaves(row):
            paths.add(path)
            if value is None and path not in df.columns:
                # An object null in this row and present in others: its fields are the
                # columns, all missing in this row.
                fields = [c for c in df.columns if c.startswith(path + ".")]
                assert fields, f"{what}: no column {path}"
                assert all(missing(df[c].iloc[i]) for c in fields), f"{what} row {i} {path}"
                paths.update(fields)
                continue
            assert path in df.columns, f"{what}: no column {path}"
            cell = df[path].iloc[i]
            if value is None:
                assert missing(cell), f"{what} row {i} {path}: {cell!r}, the CLI has null"
            elif isinstance(value, (list, dict)):
                assert cell == value, f"{what} row {i} {path}"
            else:
                assert not missing(cell), f"{what} row {i} {path}: missing, the CLI has {value!r}"
                assert cell == value, f"{what} row {i} {path}: {cell!r} != {value!r}"
    extra = set(df.columns) - paths
    assert not extra, f"{what}: columns the CLI's JSON does not have: {extra}"


FILES = trace_fixtures()


def test_fixtures_are_found() -> None:
    # The parametrised tests below run once per fixture: make sure there are some.
    assert len(FILES) >= 12, FILES


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_tables_hold_the_clis_numbers(path: Path) -> None:
    cli = cli_json("trace", str(path))
    with warnings.catch_warnings():
        # The device notes depend on the file; test_unknown_device_* checks them.
        warnings.simplefilter("ignore", rooftop.RooftopWarning)
        t = rooftop.trace(path)
    # The whole report is the CLI's, value for value.
    assert t.to_dict() == cli
    assert_same_rows(t.ops, cli["ops_summary"]["ops"], "ops")
    assert_same_rows(t.ops_by_category, cli["ops_summary"]["by_category"], "ops_by_category")
    assert sorted(t.categories) == sorted(cli["categories"])
    for name, rows in cli["categories"].items():
        assert_same_rows(t.categories[name], rows, f"categories[{name}]")
    assert_same_rows(t.kernels, cli["kernels"], "kernels")
    assert_same_rows(t.findings, cli["findings"], "findings")
    assert_same_rows(t.critical_path, cli["critical_path"]["events"], "critical_path")
    assert_same_rows(t.short_kernels, cli["short_kernels"]["rows"], "short_kernels")
    assert t.warnings == cli["warnings"]
    timeline = {r["type"]: (r["time_ms"], r["percent"]) for r in t.timeline.to_dict("records")}
    for kind in ("computation", "communication", "memcpy", "idle", "total"):
        want = cli["timeline"][kind]
        assert timeline[kind] == (want["time_ms"], want["percent"]), kind
    idle = [
        {"device": s["device"], "stream": s["stream"], **c}
        for s in cli["idle"]["streams"]
        for c in s["categories"]
    ]
    assert_same_rows(t.idle, idle, "idle")


def test_ops_match_tracelens() -> None:
    # Independent oracle: TraceLens's ops_summary.csv of the same trace.
    base = FIXTURES / "kineto" / "tracelens_h100" / "gaunernst_bert-small-uncased__1016001"
    t = rooftop.trace(f"{base}.json.gz")
    with open(f"{base}_perf_report_csvs/ops_summary.csv", newline="") as f:
        oracle = list(csv.DictReader(f))
    ops = t.ops.set_index("name")
    assert len(ops) == len(oracle)
    for row in oracle:
        op = ops.loc[row["name"]]
        assert op["count"] == int(row["Count"]), row["name"]
        # TraceLens sums float µs (14.752685546875); the trace states whole ns.
        assert op["direct_kernel_time_ms"] == pytest.approx(
            float(row["total_direct_kernel_time_ms"]), abs=1e-6
        ), row["name"]
        assert op["percent"] == pytest.approx(float(row["Percentage (%)"]), abs=1e-3)


def test_device_override_and_text_formats() -> None:
    path = FIXTURES / "kineto" / "tracelens_h100" / "gaunernst_bert-small-uncased__1016001.json.gz"
    t = rooftop.trace(path, device="h100-pcie")
    assert t.device["catalog_id"] == "h100-pcie"
    # The tables are the CLI's for the same flags.
    assert t.to_dict() == cli_json("trace", str(path), "--device", "h100-pcie")
    code, out, _ = run_cli("trace", str(path), "--device", "h100-pcie", "--section", "gemm")
    assert code == 0
    assert t.to_text(section="gemm") == out
    page = t.to_html()
    assert page.lstrip().lower().startswith("<!doctype html")
    frame = t._repr_html_()
    assert frame.startswith("<iframe srcdoc=") and "&lt;" in frame
    assert "TraceReport" in repr(t) and "h100-pcie" in repr(t)


def test_unknown_device_in_trace_warns_as_the_cli_notes() -> None:
    path = FIXTURES / "kineto" / "hta_mi250_minitoy_train.json.gz"
    _, _, err = run_cli("trace", str(path), "--format", "json")
    assert "rooftop: warning: unknown device" in err
    with pytest.warns(rooftop.RooftopWarning, match="unknown device"):
        rooftop.trace(path)


def error_of_cli(*args: str) -> str:
    code, _, err = run_cli(*args)
    assert code == 2, err
    prefix = "rooftop: error: "
    assert err.startswith(prefix), err
    return err[len(prefix):].rstrip("\n")


def test_errors_are_the_clis(tmp_path: Path) -> None:
    # A trace-viewer export the reader refuses with a sentence naming the file.
    export = FIXTURES / "jax" / "xprof_2.24.2" / "amd_gfx950_te_fused_attn.trace.json.gz"
    with pytest.raises(rooftop.InputError) as e:
        rooftop.trace(export)
    assert str(e.value) == error_of_cli("trace", str(export))
    # Broken JSON: the message gives the line and column, as the CLI's.
    bad = tmp_path / "broken.json"
    bad.write_text('{"traceEvents": [\n  {"ph": "X", "name": "k", "ts": 1,,}\n]}\n')
    with pytest.raises(rooftop.InputError) as e:
        rooftop.trace(bad)
    message = error_of_cli("trace", str(bad))
    assert str(e.value) == message
    assert "line 2" in message and str(bad) in message
    # A file that is not there.
    gone = tmp_path / "gone.json"
    with pytest.raises(rooftop.InputError) as e:
        rooftop.trace(gone)
    assert str(e.value) == error_of_cli("trace", str(gone))
    # InputError is a RooftopError.
    assert issubclass(rooftop.InputError, rooftop.RooftopError)


def test_cp_window_error_and_what_if() -> None:
    path = FIXTURES / "kineto" / "tracelens_h100" / "gaunernst_bert-small-uncased__1016001.json.gz"
    with pytest.raises(rooftop.InputError, match="^cp_window: "):
        rooftop.trace(path, cp_window="no-such-annotation")
    t = rooftop.trace(path, what_if={"aten::addmm": 0.5})
    cli = cli_json("trace", str(path), "--what-if", "aten::addmm=0.5")
    assert t.to_dict() == cli
    assert len(t.to_dict()["critical_path"]["what_if"]) == 1
    with pytest.raises(rooftop.InputError, match="what_if"):
        rooftop.trace(path, what_if=["aten::addmm"])


def test_trace_ranks_matches_the_cli() -> None:
    d = FIXTURES / "kineto" / "ranks"
    r = rooftop.trace_ranks(d)
    cli = cli_json("trace", str(d))
    assert r.to_dict() == cli
    assert_same_rows(r.ranks, cli["cross_rank"]["ranks"], "ranks")
    assert_same_rows(r.stragglers, cli["cross_rank"]["stragglers"], "stragglers")
    assert len(r.ranks) == 4
    with pytest.raises(rooftop.InputError, match="not a directory"):
        rooftop.trace_ranks(d / "rank0.json")


def test_without_pandas_tables_are_arrow(monkeypatch: pytest.MonkeyPatch) -> None:
    pa = pytest.importorskip("pyarrow", reason="needs pyarrow")
    from rooftop import _frames

    monkeypatch.setattr(_frames, "_PANDAS", False)
    path = FIXTURES / "kineto" / "tracelens_h100" / "gaunernst_bert-small-uncased__1016001.json.gz"
    t = rooftop.trace(path)
    table = t.ops
    assert isinstance(table, pa.Table)
    rows = t.to_dict()["ops_summary"]["ops"]
    assert table.num_rows == len(rows)
    assert table.column("name").to_pylist() == [r["name"] for r in rows]
    assert table.column("direct_kernel_time_ms").to_pylist() == [
        r["direct_kernel_time_ms"] for r in rows
    ]


def test_parsing_releases_the_gil(tmp_path: Path) -> None:
    # A thread that only counts goes on while another parses a ~25 MB trace. With the
    # GIL held, it would not run at all during the call.
    big = tmp_path / "big.json"
    fixture = FIXTURES / "kineto" / "tracelens_h100" / "Falconsai_nsfw_image_detection__1016002.json.gz"
    subprocess.run(
        [sys.executable, str(REPO / "bench" / "trace" / "gen.py"), str(fixture), str(big),
         "--target-mb", "25"],
        check=True,
        capture_output=True,
    )
    ticks: List[float] = []
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    th = threading.Thread(target=tick)
    th.start()
    time.sleep(0.05)
    # The call is repeated until the calls together took 0.2 s: one parse can be faster
    # than the counter's resolution needs.
    calls: List[Tuple[float, float]] = []
    t = None
    while sum(e - s for s, e in calls) < 0.2 and len(calls) < 50:
        start = time.monotonic()
        t = rooftop.trace(big, threads=1)
        calls.append((start, time.monotonic()))
    stop.set()
    th.join()
    inside = sum(1 for x in ticks if any(s < x < e for s, e in calls))
    busy = sum(e - s for s, e in calls)
    # With the GIL held, the counter could tick at most once at each call's start and
    # end; released, it ticks about once a millisecond.
    assert inside >= 2 * len(calls) + 20, f"{inside} ticks in {len(calls)} calls ({busy:.2f} s)"
    assert t is not None
    assert len(t.to_dict()["kernels"]) > 0
