"""`rooftop.counters`, `analyze`, `model`, `devices` and `bench` against the CLI's JSON
for the same input and against hand arithmetic and datasheet figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rooftop
from conftest import FIXTURES, cli_json, run_cli

pd = pytest.importorskip("pandas", reason="the DataFrame tests need pandas (pip install pandas)")


def test_import_and_version() -> None:
    assert rooftop.__version__
    code, out, _ = run_cli("--version")
    assert code == 0 and out.split()[-1] == rooftop.__version__


def test_counters_match_the_cli() -> None:
    path = FIXTURES / "rocprof" / "rocprof_compute_vcopy_MI200"
    c = rooftop.counters(path)
    cli = cli_json("counters", str(path))
    assert c.to_dict() == cli
    assert len(c.kernels) == len(cli["kernels"])
    assert list(c.kernels["name"]) == [k["name"] for k in cli["kernels"]]
    assert list(c.dispatches["duration_ns"]) == [k["duration_ns"] for k in cli["dispatches"]]
    with pytest.raises(rooftop.InputError, match="no kernel name contains"):
        rooftop.counters(path, kernel="no-such-kernel")


def test_analyze_gemm_by_hand() -> None:
    a = rooftop.analyze("gemm", m=1, n=4096, k=4096, dtype="fp16", device="h100-sxm", time_us=42)
    # Hand arithmetic: 2·M·N·K FLOPs; A (M×K), B (K×N) read and C (M×N) written once,
    # 2 bytes each; the H100 SXM's 3.35 TB/s (NVIDIA datasheet) bounds the time.
    flops = 2 * 1 * 4096 * 4096
    bytes_ = (1 * 4096 + 4096 * 4096 + 1 * 4096) * 2
    assert a["flops"] == flops
    assert a["bytes"] == bytes_
    assert a["bound"] == "memory"
    assert a["memory_floor_us"] == pytest.approx(bytes_ / 3.35e12 * 1e6, rel=1e-12)
    assert a["achieved_gbs"] == pytest.approx(bytes_ / 42e-6 / 1e9, rel=1e-12)
    cli = cli_json(
        "analyze", "gemm", "--m", "1", "--n", "4096", "--k", "4096", "--dtype", "fp16",
        "--device", "h100-sxm", "--time-us", "42",
    )
    assert a.to_dict() == cli
    assert len(a.findings) == len(cli["findings"])


def test_analyze_every_op_matches_the_cli() -> None:
    cases = [
        ("attention", {"heads": 32, "seq_q": 2048, "head_dim": 128, "causal": "top-left"},
         ["--heads", "32", "--seq-q", "2048", "--head-dim", "128", "--causal", "top-left"]),
        ("rmsnorm", {"rows": 4096, "cols": 8192}, ["--rows", "4096", "--cols", "8192"]),
        ("softmax", {"rows": 64, "cols": 4096, "passes": 3},
         ["--rows", "64", "--cols", "4096", "--passes", "3"]),
        ("elementwise", {"elements": 1 << 24, "inputs": 2}, ["--elements", "16777216", "--inputs", "2"]),
        ("copy", {"elements": 1 << 20}, ["--elements", "1048576"]),
        ("conv2d", {"n": 8, "c": 64, "h": 56, "w": 56, "k": 64, "r": 3, "s": 3, "pad": 1},
         ["--n", "8", "--c", "64", "--h", "56", "--w", "56", "--k", "64", "--r", "3", "--s", "3",
          "--pad", "1"]),
        ("gemm", {"m": 1, "n": 4096, "k": 4096, "wbits": 4, "block": 256, "regs": 64},
         ["--m", "1", "--n", "4096", "--k", "4096", "--wbits", "4", "--block", "256", "--regs", "64"]),
    ]
    for op, kw, flags in cases:
        a = rooftop.analyze(op, device="mi300x", **kw)
        assert a.to_dict() == cli_json("analyze", op, *flags, "--device", "mi300x"), op


def test_analyze_errors() -> None:
    with pytest.raises(rooftop.InputError, match="unknown field `mm`"):
        rooftop.analyze("gemm", mm=1, n=2, k=3, device="h100-sxm")
    with pytest.raises(rooftop.InputError, match="missing field `k`"):
        rooftop.analyze("gemm", m=1, n=2, device="h100-sxm")
    with pytest.raises(rooftop.InputError, match="unknown op `matmul`"):
        rooftop.analyze("matmul", m=1, device="h100-sxm")
    with pytest.raises(rooftop.InputError, match="regs needs block"):
        rooftop.analyze("gemm", m=1, n=2, k=3, regs=64, device="h100-sxm")
    # The device lookup's sentence is the CLI's.
    with pytest.raises(rooftop.InputError) as e:
        rooftop.analyze("copy", elements=10, device="h1000")
    code, _, err = run_cli("analyze", "copy", "--elements", "10", "--device", "h1000")
    assert code == 2 and err == f"rooftop: error: {e.value}\n"


def test_model_matches_the_cli(tmp_path: Path) -> None:
    m = rooftop.model("llama-7b", device="h100-sxm")
    cli = cli_json("model", "--preset", "llama-7b", "--device", "h100-sxm")
    assert m.to_dict() == cli
    assert list(m.ops["name"]) == [o["name"] for o in cli["ops"]]
    # Decode at batch 1 reads every weight once: bf16 Llama-2-7B has 6,738,415,616
    # parameters (its model card), 2 bytes each.
    assert cli["params"]["total"] == 6_738_415_616
    assert m.totals["weight_bytes"] <= 2 * 6_738_415_616
    f = FIXTURES / "model" / "tiny.json"
    by_path = rooftop.model(f, device="h100-sxm", phase="prefill", tokens=512)
    assert by_path.to_dict() == cli_json(
        "model", "--config", str(f), "--device", "h100-sxm", "--phase", "prefill", "--tokens", "512"
    )
    as_dict = rooftop.model(json.loads(f.read_text()), device="h100-sxm", phase="prefill", tokens=512)
    assert as_dict.to_dict()["ops"] == by_path.to_dict()["ops"]
    with pytest.raises(rooftop.InputError, match="tokens applies to phase='prefill'"):
        rooftop.model("llama-7b", device="h100-sxm", tokens=12)
    # A config rooftop cannot budget: the CLI's sentence.
    bad = FIXTURES / "model" / "zero_heads.json"
    with pytest.raises(rooftop.InputError) as e:
        rooftop.model(bad, device="h100-sxm")
    code, _, err = run_cli("model", "--config", str(bad), "--device", "h100-sxm")
    assert code == 2 and err == f"rooftop: error: {e.value}\n"
    with pytest.raises(rooftop.InputError, match="not a built-in model"):
        rooftop.model("llama-70000b", device="h100-sxm")


def test_devices() -> None:
    df = rooftop.devices()
    cli = cli_json("devices")
    assert len(df) == len(cli)
    assert list(df["id"]) == [d["id"] for d in cli]
    nvidia = rooftop.devices("nvidia")
    # Spelt as the device's own JSON, device files and --vendor spell it.
    assert set(nvidia["vendor"]) == {"nvidia"}
    assert "fp16_matrix_tflops" in nvidia.columns
    assert list(nvidia["id"]) == [d["id"] for d in cli_json("devices", "--vendor", "nvidia")]
    h100 = rooftop.device("h100-sxm")
    # NVIDIA H100 datasheet (SXM): 3.35 TB/s HBM3, 132 SMs.
    assert h100["peak_bw_gbs"] == 3350.0
    assert h100["num_cu"] == 132
    assert h100.to_dict() == cli_json("devices", "h100-sxm")
    assert len(h100.peaks) == len(h100.to_dict()["peaks"])
    with pytest.raises(rooftop.InputError, match="unknown vendor"):
        rooftop.devices("acme")


def test_bench_on_the_cpu() -> None:
    n = 64 * 1024
    b = rooftop.bench("triad", sizes=[str(n)], min_time=0.01, min_runs=3)
    res = b.results
    assert len(res) >= 1
    assert set(res["kernel"]) == {"triad"}
    # Triad a = b + s·c on fp32: reads b and c, writes a, 4 bytes each; 2 FLOPs per
    # element.
    assert set(res["bytes"]) == {3 * 4 * n}
    assert set(res["flops"]) == {2 * n}
    assert all(res["check.passed"])
    assert "triad" in b.to_text()
    with pytest.raises(rooftop.InputError):
        rooftop.bench("no-such-kernel", min_time=0.01)
    with pytest.raises(rooftop.InputError, match="unknown field"):
        rooftop.bench("triad", min_tiem=0.01)
