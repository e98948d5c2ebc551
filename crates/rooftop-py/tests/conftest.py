"""Shared fixtures: the repository's paths and the `rooftop` binary whose output the
Python package must reproduce.

The binary is `$ROOFTOP`, else `target/release/rooftop`, else `target/debug/rooftop`
(build it with `cargo build --release -p rooftop-cli`). The comparison tests need it:
without one they fail, they do not skip.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, List, Tuple

import pytest

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"


def cli_binary() -> Path:
    env = os.environ.get("ROOFTOP")
    candidates = [Path(env)] if env else []
    candidates += [REPO / "target" / "release" / "rooftop", REPO / "target" / "debug" / "rooftop"]
    for c in candidates:
        if c.is_file():
            return c
    pytest.fail(
        "no rooftop binary to compare with: run `cargo build --release -p rooftop-cli` "
        "or set ROOFTOP=/path/to/rooftop"
    )
    raise AssertionError  # unreachable: pytest.fail raises


def run_cli(*args: str) -> Tuple[int, str, str]:
    """Runs the CLI; returns (exit code, stdout, stderr)."""
    p = subprocess.run(
        [str(cli_binary()), *args], capture_output=True, text=True, cwd=REPO, check=False
    )
    return p.returncode, p.stdout, p.stderr


def cli_json(*args: str) -> Any:
    code, out, err = run_cli(*args, "--format", "json")
    assert code == 0, f"rooftop {' '.join(args)} failed: {err}"
    return json.loads(out)


def trace_fixtures() -> List[Path]:
    """Every single-trace fixture the CLI reads (the rank directories are checked
    separately, the XProf trace-viewer export is an error case)."""
    kineto = FIXTURES / "kineto"
    files = sorted(kineto.glob("*.json")) + sorted(kineto.glob("*.json.gz"))
    files += sorted((kineto / "handmade").glob("*.json"))
    files += sorted(kineto.glob("tracelens_*/*.json.gz"))
    files += sorted((FIXTURES / "jax").glob("*.xplane.pb"))
    return files


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO
