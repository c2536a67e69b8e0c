#!/usr/bin/env bash
# deploy/container/build-image.sh — opt-in (the test command never runs it):
# rdevd's container image from Debian's archive alone, without a registry.
#
#   deploy/container/build-image.sh [BUILD_DIR]      (default build; run as root)
#
# 1. cpack -G DEB in BUILD_DIR (the rdevd package);
# 2. a Debian bookworm base with mmdebstrap (minbase), imported with
#    `podman import` as localhost/rdev/debian:bookworm (kept: later runs
#    reuse it; RDEV_REBASE=1 makes it again);
# 3. `podman build` of Containerfile on that base, tagged
#    localhost/rdev/rdevd:VERSION, with chroot isolation (no OCI runtime
#    or cgroups needed: it builds inside containers and CI sandboxes too);
# 4. a smoke check: rdevd from the image's file system, as its user rdev
#    (chroot), must start and listen; with RDEV_IMAGE_RUN=1, `podman run`
#    of the image too.
# Installs mmdebstrap and podman if missing. Extra podman flags (e.g.
# --storage-driver=vfs where overlay is unavailable) in $PODMAN_FLAGS.
#
# Measured on a 2-vCPU build machine: mmdebstrap 97 s, import 5 s, build
# 46 s (apt fetches the package's Depends). There `podman run` itself fails
# (crun: the sandbox forbids setrlimit and cgroups are hybrid), which is
# why step 4 checks the image's rdevd by chroot.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
podman_flags=${PODMAN_FLAGS:-}
[ "$(id -u)" -eq 0 ] || { echo "build-image.sh: run as root (mmdebstrap, podman)"; exit 2; }
for p in mmdebstrap podman; do
  command -v "$p" >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends mmdebstrap podman; }
done
# shellcheck disable=SC2086
pod() { podman $podman_flags "$@"; }

[ -f "$build/CMakeCache.txt" ] || { echo "build-image.sh: $build is not a build directory"; exit 2; }
(cd "$build" && cpack -G DEB >/dev/null)
deb=$(ls "$build"/rdevd_*.deb | head -1)
version=$(dpkg-deb -f "$deb" Version)

base=localhost/rdev/debian:bookworm
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "${RDEV_REBASE:-}" ] || ! pod image exists "$base"; then
  echo "=== base: mmdebstrap bookworm (minbase) ==="
  mmdebstrap --variant=minbase --mode=root --quiet bookworm "$work/base.tar"
  pod import "$work/base.tar" "$base" >/dev/null
  rm -f "$work/base.tar"
fi

echo "=== image: localhost/rdev/rdevd:$version ==="
mkdir "$work/ctx"
cp "$deb" "$work/ctx/"
pod build --isolation=chroot --network=host --build-arg BASE="$base" -f deploy/container/Containerfile \
  -t "localhost/rdev/rdevd:$version" "$work/ctx"

echo "=== smoke: the image's rdevd starts ==="
mnt=$(pod image mount "localhost/rdev/rdevd:$version")
log="$work/rdevd.log"
chroot --userspec=rdev:rdev "$mnt" /usr/sbin/rdevd --listen 127.0.0.1:0 --drain-ms 100 >"$log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "listening on" "$log" && break; sleep 0.1; done
kill "$pid" 2>/dev/null || true
wait "$pid" || true
pod image unmount "localhost/rdev/rdevd:$version" >/dev/null
grep "listening on" "$log" || { cat "$log"; echo "build-image.sh: the image's rdevd did not start"; exit 1; }
if [ -n "${RDEV_IMAGE_RUN:-}" ]; then
  timeout 10 podman $podman_flags run --rm --network=host "localhost/rdev/rdevd:$version" --listen 127.0.0.1:0 \
    --drain-ms 100 | grep -m1 "listening on" || true
fi
echo "built localhost/rdev/rdevd:$version"
