#!/usr/bin/env bash
# `rooftop trace DIR --slurm` against a real single-node Slurm.
#
# Installs Debian's slurm-wlm and munge when missing, starts munged, slurmctld and
# slurmd on this host with a minimal slurm.conf written to a temporary folder (own
# ports, own state: nothing system-wide is reconfigured), maps 16 synthetic ranks
# (bench/ranks/gen.py) to Parquet tables with an sbatch array job, reduces them in a
# dependent job, and checks that the cross-rank report equals the single-process
# one. Stops the daemons it started (by pid) on exit.
#
# Needs root (the CI machine runs as root). When Slurm cannot be installed or started
# here it prints "slurm: SKIPPED (the Slurm test did not run): <why>" and exits 0, or,
# with ROOFTOP_REQUIRE_SLURM=1 (CI), prints "slurm: FAILED" with the reason and exits 1:
# a check CI means to run is never skipped silently. Any other failure exits 1.
#
#   scripts/slurm-test.sh [ROOFTOP_BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOFTOP=${1:-${ROOFTOP:-./target/release/rooftop}}
ROOFTOP=$(readlink -f "$ROOFTOP")
RANKS=${SLURM_TEST_RANKS:-16}

skip() {
  if [ "${ROOFTOP_REQUIRE_SLURM:-0}" = 1 ]; then
    echo "slurm: FAILED: ROOFTOP_REQUIRE_SLURM=1 but the Slurm test could not run: $*" >&2
    exit 1
  fi
  echo "slurm: SKIPPED (the Slurm test did not run): $*" >&2
  exit 0
}

if ! command -v slurmctld >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 || skip "no slurmctld/munged and no apt-get to install them"
  [ "$(id -u)" = 0 ] || skip "installing slurm-wlm and munge needs root"
  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null 2>&1 \
         && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null 2>&1; }; } \
    || skip "apt-get could not install slurm-wlm and munge"
fi
[ "$(id -u)" = 0 ] || skip "starting slurmd needs root"
command -v python3 >/dev/null 2>&1 || skip "no python3 for the synthetic ranks (bench/ranks/gen.py)"
[ -x "$ROOFTOP" ] || { echo "slurm: no rooftop binary at $ROOFTOP (cargo build --release first)"; exit 1; }

T=$(mktemp -d /tmp/rooftop-slurm-test.XXXXXX)
cleanup() {
  # The daemons first (their pid files live in $T), then the folder if all went well.
  for f in "$T/slurmd.pid" "$T/slurmctld.pid" "$T/munge/munged.pid"; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  sleep 1
  if [ "${OK:-0}" = 1 ]; then rm -rf "$T"; fi
}
trap cleanup EXIT

# munge: a key and a daemon of our own (socket and pid in $T).
mkdir -p "$T/munge"
KEY="$T/munge/munge.key"
dd if=/dev/urandom of="$KEY" bs=1 count=1024 status=none
chown -R munge:munge "$T/munge" 2>/dev/null || true
chmod 700 "$T/munge"; chmod 400 "$KEY"
SOCKET="$T/munge/munge.socket"
runuser -u munge -- /usr/sbin/munged --key-file="$KEY" --socket="$SOCKET" \
  --pid-file="$T/munge/munged.pid" --log-file="$T/munge/munged.log" --seed-file="$T/munge/seed" 2>"$T/munged.err" \
  || /usr/sbin/munged --force --key-file="$KEY" --socket="$SOCKET" --pid-file="$T/munge/munged.pid" \
       --log-file="$T/munge/munged.log" --seed-file="$T/munge/seed" 2>>"$T/munged.err" \
  || { cat "$T/munged.err"; skip "munged would not start"; }

HOST=$(hostname -s)
NCPU=$(nproc)
mkdir -p "$T/state" "$T/spool"
cat > "$T/slurm.conf" <<CONF
ClusterName=rooftopci
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SOCKET
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MinJobAge=600
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$NCPU RealMemory=1000 State=UNKNOWN
PartitionName=rooftop Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$T/slurm.conf"

/usr/sbin/slurmctld -i 2>"$T/slurmctld.err" || { cat "$T/slurmctld.err" "$T/slurmctld.log" 2>/dev/null; skip "slurmctld would not start"; }
/usr/sbin/slurmd 2>"$T/slurmd.err" || { cat "$T/slurmd.err" "$T/slurmd.log" 2>/dev/null; skip "slurmd would not start"; }
for _ in $(seq 1 60); do
  state=$(sinfo -h -o %t 2>/dev/null | head -1 || true)
  [ "$state" = idle ] && break
  sleep 1
done
[ "${state:-}" = idle ] || { tail -20 "$T/slurmctld.log" "$T/slurmd.log" 2>/dev/null; skip "the node did not come up (state: ${state:-none})"; }
echo "slurm: $(sinfo -h -o '%P %D nodes %c CPUs %t') (slurm $(sinfo -V | cut -d' ' -f2))"

# 16 synthetic ranks with a planted straggler, in one all-reduce group with all-to-all-v.
python3 bench/ranks/gen.py "$T/ranks" --ranks "$RANKS" --steps 2 --layers 3 --straggler 5 \
  --delay-us 250 --jitter-us 30 --seed 3 --a2a --hot-rank 7 2>/dev/null

"$ROOFTOP" trace "$T/ranks" --gpus-per-node 8 --format json -o "$T/single.json"
"$ROOFTOP" trace "$T/ranks" --slurm --gpus-per-node 8 --format json -o "$T/slurm.json" \
  --work-dir "$T/work" --array-parallelism 4 | tee "$T/submit.txt"
reduce_job=$(sed -n 's/.*reduce job \([0-9]*\).*/\1/p' "$T/submit.txt")
[ -n "$reduce_job" ] || { echo "slurm: no reduce job id in the submission output"; exit 1; }
for _ in $(seq 1 300); do
  [ -z "$(squeue -h 2>/dev/null)" ] && break
  sleep 1
done
if [ -n "$(squeue -h)" ]; then
  squeue; tail -20 "$T/slurmctld.log"; echo "slurm: jobs still queued after 300 s"; exit 1
fi
[ -s "$T/slurm.json" ] || { tail -n +1 "$T/work/logs/"* 2>/dev/null | tail -40; echo "slurm: the reduce wrote no report"; exit 1; }
tables=$(find "$T/work/tables" -name meta.parquet | wc -l)
[ "$tables" = "$RANKS" ] || { echo "slurm: $tables of $RANKS ranks mapped"; exit 1; }

python3 - "$T/single.json" "$T/slurm.json" <<'PY'
import json, sys
single, slurm = (json.load(open(p)) for p in sys.argv[1:3])
a, b = single["cross_rank"], slurm["cross_rank"]
if a != b:
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            print("slurm: cross_rank.%s differs" % k)
    sys.exit(1)
assert [r["name"] for r in single["ranks"]] == [r["name"] for r in slurm["ranks"]]
s = a["stragglers"][0]
assert s["rank"] == 5, s
print("slurm: OK: %d ranks mapped by an array job and reduced by a dependent job; the report "
      "equals the single-process one (straggler rank %d, last at %d of %d collectives)"
      % (len(a["ranks"]), s["rank"], s["times_last"], s["collectives"]))
PY
OK=1
