#!/usr/bin/env bash
# Renders the HTML report of every fixture (each Kineto trace in tests/fixtures/kineto, a
# directory of ranks, three analyses, a device, a mock bench, mock ceilings, counter
# reports, a diff, two model budgets) and
# loads each one in headless Chromium. Fails when a page logs anything to the console
# (an error, a failed load), when its script does not run to the end, or when a chart is
# empty. Keeps a PNG screenshot of each page.
#
#   scripts/check-html.sh [OUT_DIR]      (default: target/html-check)
#
# Environment: ROOFTOP=path/to/rooftop (default: build the debug binary with cargo),
# CHROMIUM=path/to/chromium. Without Chromium (and no way to install Debian's package),
# the script says so and exits 0: the structural tests (cargo test) still ran; with
# ROOFTOP_REQUIRE_CHROMIUM=1 (CI) it fails instead, so the check is never skipped
# silently.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/target/html-check}
mkdir -p "$out"
# Absolute, so that the file:// URLs below work from any working directory.
out=$(cd "$out" && pwd)

browser=${CHROMIUM:-}
if [ -z "$browser" ]; then
    for b in chromium chromium-browser google-chrome; do
        if command -v "$b" >/dev/null 2>&1; then browser=$(command -v "$b"); break; fi
    done
fi
if [ -z "$browser" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "check-html: installing Debian's chromium package"
    if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 \
        || { apt-get update -qq >/dev/null 2>&1 \
             && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1; }; then
        browser=$(command -v chromium || true)
    fi
fi
if [ -z "$browser" ]; then
    if [ "${ROOFTOP_REQUIRE_CHROMIUM:-0}" = 1 ]; then
        echo "check-html: FAILED: no Chromium and ROOFTOP_REQUIRE_CHROMIUM=1 (install Debian's chromium package, or set CHROMIUM)"
        exit 1
    fi
    echo "check-html: SKIPPED: no Chromium (install Debian's chromium package, or set CHROMIUM)"
    exit 0
fi
echo "check-html: $("$browser" --version 2>/dev/null || echo "$browser")"

if [ -z "${ROOFTOP:-}" ]; then
    (cd "$root" && cargo build --quiet -p rooftop-cli)
    ROOFTOP="${CARGO_TARGET_DIR:-$root/target}/debug/rooftop"
fi
rt() { "$ROOFTOP" "$@"; }

# Each page: NAME|MIN_MARKS|CHART, CHART = yes (a non-empty chart is required), no (the
# page has no chart), any (a trace with nothing to draw says so instead of a chart).
pages=()
render() {    # render NAME MIN_MARKS CHART ARGS... : writes $out/NAME.html
    local name=$1 min=$2 chart=$3
    shift 3
    # stdout: the callers silence stderr, and a failed command must say which it was.
    rt "$@" --format html -o "$out/$name.html" || {
        local rc=$?
        echo "check-html: FAIL $name: rooftop $* exited $rc"
        exit 1
    }
    pages+=("$name|$min|$chart")
}

fixtures="$root/tests/fixtures/kineto"
while IFS= read -r f; do
    rel=${f#"$fixtures/"}
    name=trace_$(echo "$rel" | sed -e 's/\.json\(\.gz\)\{0,1\}$//' -e 's/[^A-Za-z0-9_.-]/_/g')
    render "$name" 0 any trace "$f" 2>/dev/null
done < <(find "$fixtures" -name '*.json' -o -name '*.json.gz' | grep -v '_perf_report_csvs' | sort)
# A job of four ranks (generated, with matched collectives): the cross-rank page.
render trace_ranks 1 yes trace "$fixtures/ranks" 2>/dev/null
# The A100 traces name an A100-PG509-200, not in the catalog: again against the SXM4 part.
render trace_hta_a100_alexnet_on_a100 0 yes trace "$fixtures/hta_a100_alexnet.json.gz" -d a100-sxm-80gb 2>/dev/null
render analyze_gemm_h100 1 yes analyze gemm --m 4096 --n 4096 --k 4096 -d h100-sxm --time-us 200
render analyze_decode_m4max 1 yes analyze gemm --m 1 --n 4096 --k 4096 --dtype fp16 --wbits 4 -d m4-max --time-us 42
render analyze_rmsnorm_mi300x_floor 1 yes analyze rmsnorm --rows 8192 --cols 8192 -d mi300x
render device_h100 0 yes devices h100-sxm
render bench_mock 1 yes bench --backend mock --kernel triad,copy,scale,gelu,rmsnorm,softmax,gemm --sizes 4096,65536 \
    --export-json "$out/bench_mock.json"
render ceilings_mock 0 yes ceilings --backend mock --min-time 0.01
# Model budgets: every op a (hollow) mark on the device's roofs.
render model_llama3_8b_h100_decode 10 yes model --preset llama-3-8b -d h100-sxm --target-tokens-per-s 100
render model_mixtral_mi300x_prefill_q4 10 yes model --preset mixtral-8x7b -d mi300x --phase prefill --weights q4_0
# Counter reports: a rocprof-compute workload (measured roofs; vcopy has no FLOPs, so no
# marks) and rocprofv3 (no device: no chart, and a sentence saying why).
render counters_rocprof_compute_mi200 0 yes counters "$root/tests/fixtures/rocprof/rocprof_compute_vcopy_MI200"
render counters_rocprofv3_decode 0 any counters "$root/tests/fixtures/rocprof/rocprofv3_gfx1151_decode"
# A hand-made ncu details page (documented layout) with FLOPs and bytes: marks on H100 roofs.
render counters_ncu_details_h100 1 yes counters "$root/tests/fixtures/ncu/handmade/details_page.csv" -d h100-sxm
# A diff: the same export with triad 20% slower.
python3 - "$out/bench_mock.json" "$out/bench_slow.json" <<'EOF' && render diff_mock 0 no diff "$out/bench_mock.json" "$out/bench_slow.json" --fail-above 50%
import json, sys
v = json.load(open(sys.argv[1]))
r = v["results"][0]
r["times_s"] = [t * 1.2 for t in r["times_s"]]
for k in ("median_s", "mean_s", "min_s", "max_s"):
    r[k] *= 1.2
json.dump(v, open(sys.argv[2], "w"))
EOF

flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
       --disable-component-update --disable-sync --no-first-run --hide-scrollbars)
failures=0
for p in "${pages[@]}"; do
    IFS='|' read -r name min chart <<<"$p"
    html="$out/$name.html"
    profile=$(mktemp -d)
    timeout 90 "$browser" "${flags[@]}" --user-data-dir="$profile" --enable-logging=stderr --v=0 \
        --virtual-time-budget=3000 --dump-dom "file://$html" >"$out/$name.dom" 2>"$out/$name.log" || true
    rm -rf "$profile"
    profile=$(mktemp -d)
    timeout 90 "$browser" "${flags[@]}" --user-data-dir="$profile" --window-size=1280,1400 \
        --screenshot="$out/$name.png" "file://$html" >/dev/null 2>&1 || true
    rm -rf "$profile"
    problems=()
    if grep -q 'CONSOLE' "$out/$name.log"; then
        problems+=("console: $(grep 'CONSOLE' "$out/$name.log" | head -3 | tr '\n' ' ')")
    fi
    grep -q 'data-rooftop="ready"' "$out/$name.dom" || problems+=("the page script did not finish")
    count() { { grep -o -E "$1" "$out/$name.dom" || true; } | wc -l; }
    marks=$(count 'class="mark[ "]')
    drawn=$(count 'class="(mark|roof|series-line)[ "]')
    charts=$(count '<svg xmlns=')
    case $chart in
        yes) [ "$charts" -ge 1 ] && [ "$drawn" -ge 1 ] || problems+=("empty chart: no mark, roof or line") ;;
        any) [ "$drawn" -ge 1 ] || grep -q 'No chart:' "$out/$name.dom" \
                || problems+=("empty chart, and no sentence saying why") ;;
        no) ;;
    esac
    [ "$marks" -ge "$min" ] || problems+=("$marks marks, expected at least $min")
    [ -s "$out/$name.png" ] || problems+=("no screenshot")
    if [ ${#problems[@]} -eq 0 ]; then
        printf 'ok    %-60s %4d marks\n' "$name" "$marks"
    else
        failures=$((failures + 1))
        printf 'FAIL  %-60s %s\n' "$name" "${problems[*]}"
    fi
done
echo "check-html: ${#pages[@]} pages, $failures failed; screenshots in $out"
[ "$failures" -eq 0 ]
