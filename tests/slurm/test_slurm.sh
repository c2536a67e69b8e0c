#!/bin/bash
# tests/slurm/test_slurm.sh RDEVD RDEV TWO_SERVERS SEED ACL_DIR — deploy/slurm/ on a
# real Slurm (Debian's slurmctld and slurmd, munge), one node, started here
# as root in a scratch directory with its own ports and stopped at the end;
# two rdevd (sim, 2 devices each; npu-test and npu-test2, one tenants file
# with a tenant that has only a signing key); the node's map gives it
# npu-test's device 1 (GRES 0) and npu-test2's device 0 (GRES 1).
# Checks: a job asking --gres=rdev:1 gets RDEV_TARGET and RDEV_TOKEN_FILE
# (the file its user's alone, mode 0400, also for a job of another user)
# and `rdev info` in it shows one device; two such jobs running at once get
# different devices (one on each server); a job asking for 2 gets
# RDEV_TARGET with both addresses and one token each server takes for its
# one device, and in it TWO_SERVERS (tests/slurm/two_servers.c) opens one
# session over both and copies between their devices; `sbatch --wait
# --gres=rdev:1` runs SEED (the seed's D2H program built against the ACL
# library, libascendcl.so in ACL_DIR) to success; a job that did not ask
# gets nothing, and rdevd refuses it a session; the epilog removes every
# token; both rdevd's audit
# lines carry the job ids. (A token's expiry and refusals: python_tenants,
# JobTokenTest.) Exits 77 (skipped) when not root or Slurm is missing.
set -u
RDEVD=$(readlink -f "$1") RDEV=$(readlink -f "$2") TWO_SERVERS=$(readlink -f "$3") SEED=$(readlink -f "$4")
ACL_DIR=$(readlink -f "$5")
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

# two rdevd, npu-test (A) and npu-test2 (B): a tenant with a signing key only
node=$(hostname -s)
"$RDEV" token key > "$tmp/cluster.key" && chmod 0600 "$tmp/cluster.key"
printf '[tenant cluster]\n%s\ndevices = all\n' "$(cat "$tmp/cluster.key")" > "$tmp/tenants"
start_rdevd() { # NAME: its address on stdout
  "$RDEVD" --listen 127.0.0.1:0 --sim-devices 2 --sim-mem 64M --tenants "$tmp/tenants" --server-name "$1" \
    > "$tmp/rdevd-$1.out" 2> "$tmp/rdevd-$1.log" &
  pids+=($!)
  for _ in $(seq 100); do grep -q "listening on" "$tmp/rdevd-$1.out" && break; sleep 0.1; done
  awk '/listening on/ {print $NF}' "$tmp/rdevd-$1.out"
}
start_rdevd npu-test > "$tmp/addr-a" && start_rdevd npu-test2 > "$tmp/addr-b"
addr_a=$(cat "$tmp/addr-a") addr_b=$(cat "$tmp/addr-b")
[ -n "$addr_a" ] && [ -n "$addr_b" ] || fail "rdevd did not start"

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
printf '%s npu-test %s 1\n%s npu-test2 %s 0\n' "$node" "$addr_a" "$node" "$addr_b" > "$tmp/etc/gres.map"
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

re_a=${addr_a//./\\.} re_b=${addr_b//./\\.}
# 1. a job asking for one device: its environment, its token file, rdev info
out=$(run --gres=rdev:1 bash -c 'echo "target=$RDEV_TARGET file=$RDEV_TOKEN_FILE devs=$RDEV_SLURM_DEVICES"; stat -c "%U %a" "$RDEV_TOKEN_FILE"; '"$RDEV"' info') || fail "job 1: $out"
echo "$out" | grep -qE "^target=($re_a file=$tmp/run/job-[0-9]+/token devs=1|$re_b file=$tmp/run/job-[0-9]+/token devs=0)$" ||
  fail "job 1 environment: $out"
echo "$out" | grep -q "^root 400$" || fail "job 1 token file: $out"
out1=$out
echo "$out" | grep -qE '^identity:\s+cluster$' || fail "job 1 identity: $out"
echo "$out" | grep -qE '^devices:\s+1$' || fail "job 1 devices: $out"
cat "$tmp"/rdevd-*.log | grep -qE "audit: session opened: tenant=cluster .* job=slurm-[0-9]+" || fail "no audit line with the job id"

# 2. as another user: the token is that user's alone
# (srun itself as nobody: munge lets no other uid, root included, decode the
# answers slurmctld restricts to the job's user, as it does with --uid)
out=$(timeout 60 runuser -u nobody -- srun -t 1 --gres=rdev:1 bash -c 'stat -c "%U %a" "$RDEV_TOKEN_FILE"; '"$RDEV"' info') || fail "job 2: $out"
echo "$out" | grep -q "^nobody 400$" || fail "job 2 token file owner: $out"
echo "$out" | grep -qE '^devices:\s+1$' || fail "job 2 devices: $out"

# 3. two jobs at once get different devices, one on each server; a job asking for 2 gets one on each
#    with one token (its env file: RDEV_TARGET with both addresses), each server takes it for its one
#    device, and one session over both copies between them (two_servers.c; its verdict is checked last)
for i in 1 2; do
  sbatch -Q -t 1 --gres=rdev:1 -o "$tmp/par$i.out" \
    --wrap 'echo "job=$RDEV_TARGET devs=$RDEV_SLURM_DEVICES"; '"$RDEV"' info; sleep 4' >/dev/null || fail "sbatch $i"
done
out=$(run --gres=rdev:2 bash -c 'cat "$(dirname "$RDEV_TOKEN_FILE")/env"; echo "target=$RDEV_TARGET"
  body=$(cut -d. -f2 "$RDEV_TOKEN_FILE"); echo "claims=$(python3 -c "import base64,sys; s=sys.argv[1]; print(base64.urlsafe_b64decode(s + \"=\" * (-len(s) % 4)).decode())" "$body")"
  for a in ${RDEV_TARGET//,/ }; do echo "server $a:"; RDEV_TARGET=$a '"$RDEV"' info 2>&1; done
  '"$TWO_SERVERS"' > '"$tmp"'/two.out 2>&1; echo "two_servers rc=$?" >> '"$tmp"'/two.out')
for _ in $(seq 100); do [ -z "$(squeue -h)" ] && break; sleep 0.2; done
d1=$(sed -n 's/^job=//p' "$tmp/par1.out") d2=$(sed -n 's/^job=//p' "$tmp/par2.out")
[ "$(printf '%s\n' "$d1" "$d2" | sort)" = "$(printf '%s\n' "$addr_a devs=1" "$addr_b devs=0" | sort)" ] ||
  fail "two jobs' devices: '$d1' '$d2'"
grep -qE '^devices:\s+1$' "$tmp/par1.out" && grep -qE '^devices:\s+1$' "$tmp/par2.out" || fail "parallel jobs: $(cat "$tmp"/par*.out)"
echo "$out" | grep -qx "RDEV_TARGET=$addr_a,$addr_b" && echo "$out" | grep -qx "RDEV_SLURM_DEVICES=1/0" &&
  echo "$out" | grep -qx "target=$addr_a,$addr_b" || fail "job asking for 2, its environment: $out"
echo "$out" | grep -qE "^claims=v=1;tenant=cluster;job=slurm-[0-9]+;servers=npu-test,npu-test2;devices=1/0;exp=[0-9]+$" ||
  fail "job asking for 2, its token: $out"
for a in "$addr_a" "$addr_b"; do
  echo "$out" | sed -n "/^server $a:\$/,/^server /p" | grep -qE '^devices:\s+1$' || fail "job asking for 2 on $a: $out"
done
for l in "$tmp"/rdevd-npu-test.log "$tmp"/rdevd-npu-test2.log; do
  grep -qE "audit: session opened: tenant=cluster .* job=slurm-[0-9]+" "$l" || fail "no audit line with the job id in $l"
done

# 4. a job that did not ask gets nothing, and rdevd refuses it a session
out=$(run bash -c 'echo "target=${RDEV_TARGET:-none} file=${RDEV_TOKEN_FILE:-none}"; ls '"$tmp/run"' | wc -l
  RDEV_TARGET='"$addr_a"' '"$RDEV"' info; echo "info rc=$?"' 2>&1) || fail "job 4: $out"
echo "$out" | grep -q '^target=none file=none$' || fail "a job without rdev GRES got: $out"
echo "$out" | grep -q '^info rc=0$' && fail "rdevd served a job without rdev GRES: $out"
echo "$out" | grep -qi 'unauthenticated' || fail "a job without rdev GRES, refused how: $out"

# 4b. the seed's D2H program through the ACL library, unmodified, in a batch job
sbatch -Q --wait -t 1 --gres=rdev:1 -o "$tmp/seed.out" \
  --wrap "LD_LIBRARY_PATH=$ACL_DIR $SEED" >/dev/null || fail "sbatch --wait of the seed program: $(cat "$tmp/seed.out")"
grep -q "Destination data: 123" "$tmp/seed.out" || fail "the seed program in a batch job: $(cat "$tmp/seed.out")"

# 5. the epilog removed every token
for _ in $(seq 50); do [ -z "$(ls "$tmp/run")" ] && break; sleep 0.1; done
[ -z "$(ls "$tmp/run")" ] || fail "tokens left after the jobs: $(ls "$tmp/run")"
echo "job 1: $(echo "$out1" | head -1); parallel: $d1 and $d2"

# 6. the job asking for 2: one session over RDEV_TARGET "A,B" saw 2 devices and copied device 0 (A's)
#    to device 1 (B's) intact. Needs the client library's comma-separated targets (rdev_session_open).
grep -qx "two_servers rc=0" "$tmp/two.out" && grep -qx "two servers: OK" "$tmp/two.out" ||
  fail "one session over both servers (RDEV_TARGET=$addr_a,$addr_b): $(cat "$tmp/two.out" 2>&1)"
echo "PASS: deploy/slurm on a real Slurm"
