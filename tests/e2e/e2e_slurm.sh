#!/usr/bin/env bash
# deploy/slurm/ on a real single-node Slurm cluster from Debian's packages (slurm-wlm 22.05,
# munge; deploy/install-deps.sh): munged, slurmctld and slurmd on 127.0.0.1 with their state,
# spool, sockets and logs in a temporary folder, torn down at the end. Submits a 4-task shard
# array plus the afterok merge job (deploy/slurm/submit.sh) and checks the merged database holds
# exactly the measurements of the unsharded plan (the same sweep run once, unsharded), then
# regenerates a copy of the tables from it. Needs root (slurmd); label slow.
# Usage: e2e_slurm.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
[[ $(id -u) == 0 ]] || { echo "e2e_slurm needs root (slurmd)"; exit 1; }
for c in munged slurmctld slurmd sbatch scontrol; do
  command -v "$c" >/dev/null || { echo "$c is missing: run deploy/install-deps.sh"; exit 1; }
done
work=$(mktemp -d /tmp/blocktune-slurm.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [[ -s $work/munged.pid ]]; then kill "$(cat "$work/munged.pid")" 2>/dev/null || true; fi
  if [[ ${KEEP:-0} == 1 ]]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
node=$(hostname -s)
mkdir -p "$work/state" "$work/spool" "$work/munge" "$work/out"
# munged with Debian's key, on its own socket (another munged may own /run/munge).
munged --socket="$work/munge/munge.socket" --pid-file="$work/munged.pid" --log-file="$work/munged.log" \
  --seed-file="$work/munge/seed" --key-file=/etc/munge/munge.key --force
for _ in $(seq 50); do [[ -S $work/munge/munge.socket ]] && break; sleep 0.1; done
cat >"$work/slurm.conf" <<CONF
ClusterName=blocktune-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=600
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$work/slurm.conf
slurmctld -D -i >"$work/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N "$node" >"$work/slurmd.out" 2>&1 &
pids+=($!)
up=0
for _ in $(seq 100); do
  if scontrol show node "$node" 2>/dev/null | grep -qE "State=(IDLE|MIXED|ALLOCATED)"; then up=1; break; fi
  sleep 0.2
done
if [[ $up != 1 ]]; then
  echo "FAIL: the node did not come up"; scontrol show node "$node" 2>&1 | head -5
  tail -20 "$work/slurmctld.log" "$work/slurmd.log" "$work/slurmd.out" 2>/dev/null; exit 1
fi
echo "cluster up: $(sinfo -h -o '%P %a %D %t %N')"

sweep="matmul --in-process --shape m=32,n=32,k=32 --shape m=64,n=64,k=32 --shape m=128,n=32,k=32 --min-repetition-ms 0.05 --repetitions 2 --max-cv 1000"
cp -r "$src/tables" "$work/tables"
export BLOCKTUNE_BIN=$build/client/blocktune
ids=$("$src/deploy/slurm/submit.sh" 4 "$work/out" "$sweep" "$work/tables")
echo "submitted: $ids"
array=$(echo "$ids" | awk '{print $2}')
merge=$(echo "$ids" | awk '{print $4}')
state=
for _ in $(seq 600); do
  state=$(scontrol show job "$merge" -o 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2)
  case $state in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) break ;; esac
  sleep 0.5
done
scontrol show job "$array" -o | grep -o 'JobId=[0-9]* ArrayJobId=[0-9]* ArrayTaskId=[0-9]*\|JobState=[A-Z_]*\|ExitCode=[0-9:]*' | paste - - - | sed 's/^/  array task: /'
echo "  merge job $merge: $state (dependency afterok:$array)"
for f in "$work"/out/blocktune-shard-*.out; do sed 's/^/    /' "$f" | grep -v '^\s*$' | tail -2; done
[[ $state == COMPLETED ]] || { echo "FAIL: merge job $state"; cat "$work"/out/*.out; tail -20 "$work/slurmctld.log"; exit 1; }
sed 's/^/    /' "$work"/out/blocktune-merge-*.out

"$build/client/blocktune" sweep $sweep --local --db "$work/unsharded.db" >/dev/null 2>&1
merged=$(sqlite3 "$work/out/merged.db" "SELECT COUNT(*) FROM measurements")
unsharded=$(sqlite3 "$work/unsharded.db" "SELECT COUNT(*) FROM measurements")
sqlite3 "$work/out/merged.db" "SELECT bucket || ' ' || config FROM measurements ORDER BY 1" >"$work/merged.txt"
sqlite3 "$work/unsharded.db" "SELECT bucket || ' ' || config FROM measurements ORDER BY 1" >"$work/unsharded.txt"
echo "merged count = $merged, unsharded count = $unsharded"
[[ $merged == "$unsharded" ]] && cmp -s "$work/merged.txt" "$work/unsharded.txt" || { echo "FAIL: merged != unsharded plan"; exit 1; }
[[ $(sqlite3 "$work/out/merged.db" "SELECT group_concat(shard_index || '/' || shard_count, ' ') FROM (SELECT * FROM sweeps ORDER BY shard_index)") == "0/4 1/4 2/4 3/4" ]]
key=$(sqlite3 "$work/out/merged.db" "SELECT hardware_key FROM tuned_entries LIMIT 1")
[[ $(grep -F "\"$key\"" "$work/tables/tuned_entries.jsonl" | grep -c 'm32_n32_k32\|m64_n64_k32\|m128_n32_k32') -ge 3 ]] ||
  { echo "FAIL: tables generate did not take the merged winners for $key"; exit 1; }
echo "e2e_slurm: ok"
