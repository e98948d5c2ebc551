#!/usr/bin/env bash
# The Parquet tables of `rooftop trace --format parquet` open in pyarrow unchanged, have
# the columns docs/parquet-schema.md lists, and hold what the cross-rank report says:
# the transfer time and bus bandwidth of each all-reduce are recomputed here with
# pyarrow alone (shortest kernel across ranks per `Seq`; NCCL-tests 2(n-1)/n) and
# compared with `rooftop trace TABLES --format json`.
#
# Installs pyarrow with pip when it is missing. When it cannot, prints
# "parquet: SKIPPED (the pyarrow check did not run): <why>" and exits 0, or, with
# ROOFTOP_REQUIRE_PYARROW=1 (CI), prints "parquet: FAILED" with the reason and exits 1:
# a check CI means to run is never skipped silently.
#
#   scripts/check-parquet.sh [ROOFTOP_BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOFTOP=$(readlink -f "${1:-${ROOFTOP:-./target/release/rooftop}}")
skip() {
  if [ "${ROOFTOP_REQUIRE_PYARROW:-0}" = 1 ]; then
    echo "parquet: FAILED: ROOFTOP_REQUIRE_PYARROW=1 but the pyarrow check could not run: $*" >&2
    exit 1
  fi
  echo "parquet: SKIPPED (the pyarrow check did not run): $*" >&2
  exit 0
}
command -v python3 >/dev/null 2>&1 || skip "no python3"
if ! python3 -c "import pyarrow" 2>/dev/null; then
  python3 -m pip install --quiet pyarrow >/dev/null 2>&1 \
    || python3 -m pip install --quiet --break-system-packages pyarrow >/dev/null 2>&1 \
    || skip "pip could not install pyarrow"
fi
T=$(mktemp -d /tmp/rooftop-parquet-check.XXXXXX)
trap 'rm -rf "$T"' EXIT
"$ROOFTOP" trace tests/fixtures/kineto/ranks --format parquet -o "$T/tables" 2>/dev/null
"$ROOFTOP" trace "$T/tables" --format json -o "$T/report.json"
python3 - "$T/tables" "$T/report.json" docs/parquet-schema.md <<'PY'
import glob, json, os, re, sys
import pyarrow.parquet as pq
import pyarrow.compute as pc
tables, report_path, doc_path = sys.argv[1:4]
doc = open(doc_path).read()
# The documented columns: "| `name` | type | ..." rows under "### <table>".
documented = {}
for sec in re.split(r"^### ", doc, flags=re.M)[1:]:
    name = sec.split()[0].strip("`")
    documented[name] = re.findall(r"^\| `([a-z_]+)` \|", sec, flags=re.M)
ranks = sorted(glob.glob(os.path.join(tables, "*", "meta.parquet")))
assert len(ranks) == 4, ranks
for table in ["meta", "collectives", "kernels", "ops", "segments", "warnings"]:
    for d in ranks:
        t = pq.read_table(os.path.join(os.path.dirname(d), table + ".parquet"))
        md = t.schema.metadata
        assert md[b"rooftop.schema"] == b"rooftop-rank-tables", md
        assert md[b"rooftop.schema_version"] == b"1", md
        assert md[b"rooftop.table"] == table.encode(), md
        assert t.schema.names == documented[table], (table, t.schema.names, documented.get(table))
# All ranks' collectives as one table, as a user would read them.
coll = pq.read_table([os.path.join(os.path.dirname(d), "collectives.parquet") for d in ranks])
meta = pq.read_table([d for d in ranks])
assert meta.num_rows == 4 and sorted(meta.column("rank").to_pylist()) == [0, 1, 2, 3]
ar = coll.filter(pc.equal(coll.column("kind"), "all_reduce")).to_pylist()
by_seq = {}
for r in ar:
    by_seq.setdefault(r["seq"], []).append(r)
assert all(len(v) == 4 for v in by_seq.values()), {k: len(v) for k, v in by_seq.items()}
transfer_ns = [min(r["dur_ns"] for r in v) for v in by_seq.values()]
mean_ns = sum(transfer_ns) / len(transfer_ns)
size = ar[0]["message_bytes"]
n = ar[0]["group_size"]
busbw = size / mean_ns * 2 * (n - 1) / n
report = json.load(open(report_path))["cross_rank"]
row = [r for r in report["collectives"]["rows"] if r["kind"] == "all_reduce"][0]
assert abs(row["transfer_mean_us"] - mean_ns / 1e3) < 1e-9, (row["transfer_mean_us"], mean_ns)
assert abs(row["busbw_gbs"] - busbw) < 1e-9, (row["busbw_gbs"], busbw)
print("parquet: OK: 6 tables x 4 ranks open in pyarrow %s with the documented columns; "
      "all-reduce transfer %.3f us and bus bandwidth %.1f GB/s recomputed from the tables match "
      "the report" % (__import__("pyarrow").__version__, mean_ns / 1e3, busbw))
PY
