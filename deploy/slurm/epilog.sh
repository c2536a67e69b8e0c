#!/bin/bash
# deploy/slurm/epilog.sh — Slurm Epilog (root, on the job's node, after the
# job): removes the job's token. Nothing else needs revoking: the token
# expires with the job's time limit.
here=$(dirname "$(readlink -f "$0")")
# shellcheck source=/dev/null
. "${RDEV_SLURM_CONF:-$here/rdev-slurm.conf}" 2>/dev/null || exit 0
[ -n "${SLURM_JOB_ID:-}" ] && rm -rf "$RDEV_SLURM_RUN/job-$SLURM_JOB_ID"
exit 0
