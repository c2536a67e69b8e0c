#!/bin/bash
# deploy/slurm/task_prolog.sh — Slurm TaskProlog (the job's user, before each
# task): for a job the prolog gave rdev devices, exports RDEV_TARGET and
# RDEV_TOKEN_FILE (the client libraries read the token from it) and
# RDEV_SLURM_DEVICES (the servers' device numbers, for the record: one
# group per address of RDEV_TARGET, '/' between groups, "0,1/3"; the
# session sees them as 0..k-1). Prints nothing for other jobs.
here=$(dirname "$(readlink -f "$0")")
# shellcheck source=/dev/null
. "${RDEV_SLURM_CONF:-$here/rdev-slurm.conf}" 2>/dev/null || exit 0
dir=$RDEV_SLURM_RUN/job-${SLURM_JOB_ID:-none}
[ -r "$dir/env" ] && [ -r "$dir/token" ] || exit 0
while IFS='=' read -r k v; do
  case $k in RDEV_TARGET | RDEV_SLURM_DEVICES) echo "export $k=$v" ;; esac
done < "$dir/env"
echo "export RDEV_TOKEN_FILE=$dir/token"
