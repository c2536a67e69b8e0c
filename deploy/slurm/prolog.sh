#!/bin/bash
# deploy/slurm/prolog.sh — Slurm Prolog (root, on the job's node, before the
# job starts): a job that asked for rdev devices (--gres=rdev:N) gets a job
# token for exactly those devices, valid until the job's end time, in a file
# only the job's user can read. rdev-slurm.conf (beside this script, or
# $RDEV_SLURM_CONF) names the rdev tool, the tenant and its signing key
# (readable by root only: it never leaves root), the map from this node's
# rdev GRES indices to a server's devices, and where the token goes. A job
# that did not ask gets nothing. Errors are logged and leave the job without
# a token (its sessions then fail UNAUTHENTICATED), never drain the node.
set -u
here=$(dirname "$(readlink -f "$0")")
conf=${RDEV_SLURM_CONF:-$here/rdev-slurm.conf}
log() { logger -t rdev-slurm "job ${SLURM_JOB_ID:-?}: $*" 2>/dev/null || true; echo "rdev-slurm: job ${SLURM_JOB_ID:-?}: $*" >&2; }
# shellcheck source=/dev/null
. "$conf" || { log "cannot read $conf"; exit 0; }
job=${SLURM_JOB_ID:?}
node=${SLURMD_NODENAME:-$(hostname -s)}

detail=$(scontrol show job -d "$job" 2>/dev/null) || { log "scontrol show job failed"; exit 0; }
# this node's rdev GRES indices: "GRES=rdev:2(IDX:0-1)" (other GRES may stand beside it)
idx=$(printf '%s\n' "$detail" | grep -E "(^|[[:space:]])Nodes=$node([[:space:]]|$)" | grep -oE 'rdev(:[^:(,]+)?:[0-9]+\(IDX:[0-9,-]+\)' |
      sed -E 's/.*IDX:([0-9,-]+)\)/\1/' | head -1)
[ -n "$idx" ] || exit 0 # the job did not ask for rdev devices here

# the node's line of the map: NODE SERVER_NAME ADDRESS DEVICE[,DEVICE...]
read -r _ server addr devlist < <(awk -v n="$node" '$1 == n && $0 !~ /^#/ {print; exit}' "$RDEV_SLURM_MAP")
[ -n "${devlist:-}" ] || { log "no line for node $node in $RDEV_SLURM_MAP"; exit 0; }
IFS=, read -r -a devs <<< "$devlist"
picked=()
for part in ${idx//,/ }; do
  lo=${part%-*}; hi=${part#*-}
  for ((i = lo; i <= hi; i++)); do
    [ "$i" -lt "${#devs[@]}" ] || { log "GRES index $i beyond the map's devices for $node"; exit 0; }
    picked+=("${devs[$i]}")
  done
done
devices=$(IFS=,; echo "${picked[*]}")

# valid until the job's end time (plus the kill grace), or the longest allowed
end=$(printf '%s\n' "$detail" | grep -oE 'EndTime=[^ ]+' | head -1 | cut -d= -f2)
now=$(date +%s)
exp=$(date -d "$end" +%s 2>/dev/null || echo $((now + ${RDEV_SLURM_MAX_TTL:-604800})))
[ "$exp" -gt "$now" ] || exp=$((now + 60))
exp=$((exp + ${RDEV_SLURM_GRACE:-120}))

dir=$RDEV_SLURM_RUN/job-$job
umask 077
mkdir -p "$RDEV_SLURM_RUN" && chmod 0755 "$RDEV_SLURM_RUN"
rm -rf "$dir" && mkdir -m 0700 "$dir" || { log "cannot make $dir"; exit 0; }
if ! "$RDEV_TOOL" token mint --key-file "$RDEV_SLURM_KEY" --tenant "$RDEV_SLURM_TENANT" --job "slurm-$job" \
     --servers "$server" --devices "$devices" --expires "$exp" > "$dir/token"; then
  log "rdev token mint failed"
  rm -rf "$dir"
  exit 0
fi
printf 'RDEV_TARGET=%s\nRDEV_SLURM_DEVICES=%s\n' "$addr" "$devices" > "$dir/env"
chmod 0400 "$dir/token" "$dir/env"
chown -R "${SLURM_JOB_UID:?}:${SLURM_JOB_GID:-$SLURM_JOB_UID}" "$dir"
log "token for $server devices $devices until $(date -d "@$exp" '+%F %T')"
exit 0
