#!/bin/bash
# deploy/slurm/prolog.sh — Slurm Prolog (root, on the job's node, before the
# job starts): a job that asked for rdev devices (--gres=rdev:N) gets a job
# token for exactly those devices, valid until the job's end time, in a file
# only the job's user can read. rdev-slurm.conf (beside this script, or
# $RDEV_SLURM_CONF) names the rdev tool, the tenant and its signing key
# (readable by root only: it never leaves root), the map from this node's
# rdev GRES indices to devices of one or more servers, and where the token
# goes. A job on several servers gets one token naming them all, each with
# its own devices, and RDEV_TARGET listing their addresses in map order. A job
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

# the node's lines of the map, one per rdevd: NODE SERVER_NAME ADDRESS DEVICE[,DEVICE...]; the
# node's GRES indices count across them in file order (line 1's devices first)
servers=() addrs=() line_of=() dev_of=()
while read -r _ server addr devlist; do
  [ -n "${devlist:-}" ] || { log "bad line for node $node in $RDEV_SLURM_MAP"; exit 0; }
  IFS=, read -r -a devs <<< "$devlist"
  for d in "${devs[@]}"; do line_of+=("${#servers[@]}"); dev_of+=("$d"); done
  servers+=("$server") addrs+=("$addr")
done < <(awk -v n="$node" '$1 == n && $0 !~ /^#/' "$RDEV_SLURM_MAP")
[ "${#servers[@]}" -gt 0 ] || { log "no line for node $node in $RDEV_SLURM_MAP"; exit 0; }
groups=() # the job's devices of each line, comma-separated
for part in ${idx//,/ }; do
  lo=${part%-*}; hi=${part#*-}
  for ((i = lo; i <= hi; i++)); do
    [ "$i" -lt "${#dev_of[@]}" ] || { log "GRES index $i beyond the map's devices for $node"; exit 0; }
    l=${line_of[$i]}
    groups[l]=${groups[l]:+${groups[l]},}${dev_of[$i]}
  done
done
# the servers the job uses, in map order, with one device group each ("0,1/3" for servers "a,b")
used_servers=() used_addrs=() used_groups=()
for ((l = 0; l < ${#servers[@]}; l++)); do
  [ -n "${groups[l]:-}" ] || continue
  used_servers+=("${servers[l]}") used_addrs+=("${addrs[l]}") used_groups+=("${groups[l]}")
done
server=$(IFS=,; echo "${used_servers[*]}")
target=$(IFS=,; echo "${used_addrs[*]}")
devices=$(IFS=/; echo "${used_groups[*]}")

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
printf 'RDEV_TARGET=%s\nRDEV_SLURM_DEVICES=%s\n' "$target" "$devices" > "$dir/env"
chmod 0400 "$dir/token" "$dir/env"
chown -R "${SLURM_JOB_UID:?}:${SLURM_JOB_GID:-$SLURM_JOB_UID}" "$dir"
log "token for $server devices $devices until $(date -d "@$exp" '+%F %T')"
exit 0
