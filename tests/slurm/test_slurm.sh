#!/bin/bash
# tests/slurm/test_slurm.sh RDEVD RDEV — deploy/slurm/ on a real Slurm
# (Debian's slurmctld and slurmd, munge), one node, started here as root
# in a scratch directory with its own ports and stopped at the end; an
# rdevd (sim, 2 devices) with a tenant that has only a signing key.
# Checks: a job asking --gres=rdev:1 gets RDEV_TARGET and RDEV_TOKEN_FILE
# (the file its user's alone, mode 0400, also for a job of another user)
# and `rdev info` in it shows one device; two such jobs running at once get
# different devices; a job asking for 2 sees 2; a job that did not ask gets
# nothing; the epilog removes every token; rdevd's audit lines carry the
# job ids. (A token's expiry and refusals: python_tenants, JobTokenTest.)
# Exits 77 (skipped) when not root or Slurm is missing.
set -u
RDEVD=$(readlink -f "$1") RDEV=$(readlink -f "$2")
HERE=$(cd "$(dirname "$0")" && pwd) SLURM_SRC=$(cd "$HERE/../../deploy/slurm" && pwd)
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
for b in slurmctld slurmd srun sbatch scontrol sinfo munged munge; do
  command -v $b >/dev/null || { echo "SKIP: no $b (deploy/install-deps.sh installs Slurm)"; exit 77; }
done

tmp=$(mktemp -d /tmp/rdev-slurm-test.XXXXXX)
chmod 0755 "$tmp"
pids=()
started_munge=
fail() { echo "FAIL: $*"; for f in "$tmp"/*.log; do echo "--- $f"; tail -20 "$f"; done; exit 1; }
cleanup() {
  SLURM_CONF=$tmp/etc/slurm.conf scontrol shutdown >/dev/null 2>&1
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  [ -n "$started_munge" ] && kill "$(cat "$tmp/munged.pid" 2>/dev/null)" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# munge: a running one, or ours
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  [ -s /etc/munge/munge.key ] || { mungekey -c 2>/dev/null || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null; }
  chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
  mkdir -p /run/munge /var/lib/munge /var/log/munge && chown munge:munge /run/munge /var/lib/munge /var/log/munge
  runuser -u munge -- /usr/sbin/munged --pid-file="$tmp/munged.pid" || fail "munged did not start"
  started_munge=1
  for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
fi
munge -n | unmunge >/dev/null || fail "munge does not work"

# rdevd: a tenant with a signing key only, the server named npu-test
node=$(hostname -s)
"$RDEV" token key > "$tmp/cluster.key" && chmod 0600 "$tmp/cluster.key"
printf '[tenant cluster]\n%s\ndevices = all\n' "$(cat "$tmp/cluster.key")" > "$tmp/tenants"
"$RDEVD" --listen 127.0.0.1:0 --sim-devices 2 --sim-mem 64M --tenants "$tmp/tenants" --server-name npu-test \
  > "$tmp/rdevd.out" 2> "$tmp/rdevd.log" &
pids+=($!)
for _ in $(seq 100); do grep -q "listening on" "$tmp/rdevd.out" && break; sleep 0.1; done
addr=$(awk '/listening on/ {print $NF}' "$tmp/rdevd.out")
[ -n "$addr" ] || fail "rdevd did not start"

# the prolog scripts and their configuration, as deploy/slurm/ has them
mkdir -p "$tmp/etc" "$tmp/dev" "$tmp/run" "$tmp/ctld" "$tmp/spool"
cp "$SLURM_SRC"/prolog.sh "$SLURM_SRC"/task_prolog.sh "$SLURM_SRC"/epilog.sh "$tmp/etc/"
cat > "$tmp/etc/rdev-slurm.conf" <<CONF
RDEV_TOOL=$RDEV
RDEV_SLURM_TENANT=cluster
RDEV_SLURM_KEY=$tmp/cluster.key
RDEV_SLURM_MAP=$tmp/etc/gres.map
RDEV_SLURM_RUN=$tmp/run
CONF
echo "$node npu-test $addr 0,1" > "$tmp/etc/gres.map"
touch "$tmp/dev/rdev0" "$tmp/dev/rdev1"
cat > "$tmp/etc/gres.conf" <<CONF
NodeName=$node Name=rdev File=$tmp/dev/rdev[0-1]
CONF
cat > "$tmp/etc/slurm.conf" <<CONF
ClusterName=rdevtest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$tmp/ctld
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmdTimeout=30
GresTypes=rdev
Prolog=$tmp/etc/prolog.sh
TaskProlog=$tmp/etc/task_prolog.sh
Epilog=$tmp/etc/epilog.sh
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) Gres=rdev:2 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=10 State=UP
CONF
export SLURM_CONF=$tmp/etc/slurm.conf
slurmctld -D -i > "$tmp/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D > "$tmp/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 150); do sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix)' && break; sleep 0.2; done
sinfo -h -o %t | grep -qE '^(idle|mix)' || fail "the node did not come up: $(sinfo 2>&1)"

run() { timeout 60 srun -t 1 "$@"; }

# 1. a job asking for one device: its environment, its token file, rdev info
out=$(run --gres=rdev:1 bash -c 'echo "target=$RDEV_TARGET file=$RDEV_TOKEN_FILE devs=$RDEV_SLURM_DEVICES"; stat -c "%U %a" "$RDEV_TOKEN_FILE"; '"$RDEV"' info') || fail "job 1: $out"
echo "$out" | grep -q "^target=$addr file=$tmp/run/job-[0-9]*/token devs=[01]$" || fail "job 1 environment: $out"
echo "$out" | grep -q "^root 400$" || fail "job 1 token file: $out"
out1=$out
echo "$out" | grep -qE '^identity:\s+cluster$' || fail "job 1 identity: $out"
echo "$out" | grep -qE '^devices:\s+1$' || fail "job 1 devices: $out"
grep -qE "audit: session opened: tenant=cluster .* job=slurm-[0-9]+" "$tmp/rdevd.log" || fail "no audit line with the job id"

# 2. as another user: the token is that user's alone
out=$(run --uid=nobody --gres=rdev:1 bash -c 'stat -c "%U %a" "$RDEV_TOKEN_FILE"; '"$RDEV"' info') || fail "job 2: $out"
echo "$out" | grep -q "^nobody 400$" || fail "job 2 token file owner: $out"
echo "$out" | grep -qE '^devices:\s+1$' || fail "job 2 devices: $out"

# 3. two jobs at once get different devices; one asking for both sees two
for i in 1 2; do
  sbatch -Q -t 1 --gres=rdev:1 -o "$tmp/par$i.out" --wrap 'echo "devs=$RDEV_SLURM_DEVICES"; '"$RDEV"' info; sleep 4' >/dev/null ||
    fail "sbatch $i"
done
out=$(run --gres=rdev:2 bash -c 'echo "devs=$RDEV_SLURM_DEVICES"; '"$RDEV"' info')
for _ in $(seq 100); do [ -z "$(squeue -h)" ] && break; sleep 0.2; done
d1=$(sed -n 's/^devs=//p' "$tmp/par1.out") d2=$(sed -n 's/^devs=//p' "$tmp/par2.out")
[ -n "$d1" ] && [ -n "$d2" ] && [ "$d1" != "$d2" ] || fail "two jobs' devices: '$d1' '$d2'"
grep -qE '^devices:\s+1$' "$tmp/par1.out" && grep -qE '^devices:\s+1$' "$tmp/par2.out" || fail "parallel jobs: $(cat "$tmp"/par*.out)"
echo "$out" | grep -q '^devs=0,1$' && echo "$out" | grep -qE '^devices:\s+2$' || fail "job asking for 2: $out"

# 4. a job that did not ask gets nothing
out=$(run bash -c 'echo "target=${RDEV_TARGET:-none} file=${RDEV_TOKEN_FILE:-none}"; ls '"$tmp/run"' | wc -l') || fail "job 4: $out"
echo "$out" | grep -q '^target=none file=none$' || fail "a job without rdev GRES got: $out"

# 5. the epilog removed every token
for _ in $(seq 50); do [ -z "$(ls "$tmp/run")" ] && break; sleep 0.1; done
[ -z "$(ls "$tmp/run")" ] || fail "tokens left after the jobs: $(ls "$tmp/run")"
echo "job 1: $(echo "$out1" | head -1); parallel: $d1 and $d2"
echo "PASS: deploy/slurm on a real Slurm"
