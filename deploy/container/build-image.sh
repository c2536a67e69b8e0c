#!/usr/bin/env bash
# deploy/container/build-image.sh — rdevd's container image from Debian's
# archive alone, without a registry. The test deploy_container
# (tests/deploy/test_container.sh, so the test command too) runs it.
#
#   deploy/container/build-image.sh [BUILD_DIR]      (default build; run as root)
#
# 1. cpack -G DEB into BUILD_DIR/packages (the rdevd package), unless
#    RDEV_DEBS=DIR names packages an earlier cpack made;
# 2. a Debian bookworm base with mmdebstrap (minbase), imported with
#    `podman import` as localhost/rdev/debian:bookworm (kept: later runs
#    reuse it; RDEV_REBASE=1 makes it again);
# 3. `podman build` of Containerfile on that base, tagged
#    localhost/rdev/rdevd:VERSION (or $RDEV_IMAGE_TAG), with chroot
#    isolation (no OCI runtime or cgroups needed: it builds inside
#    containers and CI sandboxes too) and without intermediate images;
# 4. a smoke check: rdevd from the image's file system, as its user rdev
#    (chroot), must start and listen, and the build tree's `rdev` must hold
#    a session with it (`rdev info`, a 3 MiB `rdev roundtrip`); rdevd must
#    then drain and exit 0. With RDEV_IMAGE_RUN=1, `podman run` of the
#    image too (reported, not checked).
# Installs mmdebstrap and podman if missing. Extra podman flags (e.g.
# --storage-driver=vfs) in $PODMAN_FLAGS.
#
# Exit status: 0 built and checked; 1 our part failed (the package, the
# Containerfile, the image's rdevd, the session); 2 usage (not root, not a
# build directory); 77 this machine cannot make a base image or build on
# one (podman does not work, mmdebstrap or `podman import` fails, or
# podman cannot build even a trivial image here): the reason is printed.
#
# Measured on a 2-vCPU build machine with podman's overlay storage:
# mmdebstrap 80 s, import 6 s, build 16–19 s (apt fetches the package's
# Depends), the smoke check 2 s; on vfs storage the build took 46 s. There
# `podman run` itself fails (crun: the sandbox forbids setrlimit and cgroups
# are hybrid), which is why step 4 checks the image's rdevd by chroot.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
podman_flags=${PODMAN_FLAGS:-}
[ "$(id -u)" -eq 0 ] || { echo "build-image.sh: run as root (mmdebstrap, podman)"; exit 2; }
[ -f "$build/CMakeCache.txt" ] || { echo "build-image.sh: $build is not a build directory"; exit 2; }
for p in mmdebstrap podman; do
  command -v "$p" >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends mmdebstrap podman; }
done
# shellcheck disable=SC2086
pod() { podman $podman_flags "$@"; }
cannot() { echo "build-image.sh: cannot make the image on this machine: $*"; exit 77; }

pod info >/dev/null 2>&1 || cannot "podman does not work here: $(pod info 2>&1 | tail -3)"

if [ -n "${RDEV_DEBS:-}" ]; then
  debs=$RDEV_DEBS
else
  debs=$build/packages
  rm -rf "$debs"
  (cd "$build" && cpack -G DEB -B "$PWD/packages" >/dev/null)
  rm -rf "$debs/_CPack_Packages"
fi
debs_found=("$debs"/rdevd_*.deb)
deb=${debs_found[0]}
[ -f "$deb" ] || { echo "build-image.sh: no rdevd_*.deb in $debs"; exit 1; }
version=$(dpkg-deb -f "$deb" Version)
tag=${RDEV_IMAGE_TAG:-localhost/rdev/rdevd:$version}

base=localhost/rdev/debian:bookworm
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# one base at a time (two builds at once would both make it)
exec 9>"${TMPDIR:-/tmp}/rdev-build-image.lock"
flock 9
if [ -n "${RDEV_REBASE:-}" ] || ! pod image exists "$base"; then
  echo "=== base: mmdebstrap bookworm (minbase) ==="
  t0=$SECONDS
  # all three from deb.debian.org (its default names security.debian.org
  # for the security updates: one more host a CI sandbox may not reach)
  mmdebstrap --variant=minbase --mode=root --quiet bookworm "$work/base.tar" \
    "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian bookworm-updates main" \
    "deb http://deb.debian.org/debian-security bookworm-security main" >"$work/mmdebstrap.log" 2>&1 ||
    cannot "mmdebstrap failed (no route to Debian's archive, or no mounts in this sandbox?): $(tail -5 "$work/mmdebstrap.log")"
  echo "mmdebstrap: $((SECONDS - t0)) s"
  t0=$SECONDS
  pod import "$work/base.tar" "$base" >/dev/null 2>"$work/import.log" ||
    cannot "podman import failed: $(tail -5 "$work/import.log")"
  rm -f "$work/base.tar"
  echo "import: $((SECONDS - t0)) s"
fi
flock -u 9

echo "=== image: $tag ==="
t0=$SECONDS
mkdir "$work/ctx"
cp "$deb" "$work/ctx/"
old=$(pod image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
build_flags=(--isolation=chroot --network=host --layers=false --build-arg BASE="$base")
if ! pod build "${build_flags[@]}" -f deploy/container/Containerfile -t "$tag" "$work/ctx"; then
  # ours, or the machine's? A trivial build on the same base that also
  # reaches the archive tells them apart.
  printf 'FROM %s\nRUN apt-get update --error-on=any\n' "$base" >"$work/probe.Containerfile"
  mkdir "$work/probe"
  if ! pod build "${build_flags[@]}" -f "$work/probe.Containerfile" -t localhost/rdev/probe:tmp "$work/probe" \
    >"$work/probe.log" 2>&1; then
    pod rmi -f localhost/rdev/probe:tmp >/dev/null 2>&1 || true
    cannot "podman cannot build here (a trivial RUN apt-get update fails too): $(tail -5 "$work/probe.log")"
  fi
  pod rmi -f localhost/rdev/probe:tmp >/dev/null 2>&1 || true
  echo "build-image.sh: podman build of deploy/container/Containerfile failed (a trivial build works here)"
  exit 1
fi
echo "build: $((SECONDS - t0)) s"
# the image this tag named before, now untagged: not left behind
if [ -n "$old" ] && [ "$old" != "$(pod image inspect --format '{{.Id}}' "$tag")" ]; then
  pod rmi "$old" >/dev/null 2>&1 || true
fi

echo "=== smoke: the image's rdevd starts and serves a session ==="
mnt=$(pod image mount "$tag")
log="$work/rdevd.log"
chroot --userspec=rdev:rdev "$mnt" /usr/sbin/rdevd --listen 127.0.0.1:0 --drain-ms 100 >"$log" 2>&1 &
pid=$!
addr=""
for _ in $(seq 100); do
  addr=$(sed -n 's/^rdevd listening on //p' "$log" | head -1)
  [ -n "$addr" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
ok=1
if [ -z "$addr" ]; then
  echo "build-image.sh: the image's rdevd did not start"
  ok=0
elif [ -x "$build/client/rdev" ]; then
  echo "rdevd (the image's, chroot as rdev) listening on $addr"
  head -c 3145728 /dev/urandom >"$work/payload"
  client=(env -u RDEV_TOKEN -u RDEV_CA -u RDEV_CERT -u RDEV_KEY timeout 60 "$build/client/rdev" --target "$addr")
  if ! { "${client[@]}" info && "${client[@]}" roundtrip "$work/payload"; }; then
    echo "build-image.sh: a session with the image's rdevd failed"
    ok=0
  fi
else
  echo "rdevd (the image's, chroot as rdev) listening on $addr; no $build/client/rdev: no session checked"
fi
kill "$pid" 2>/dev/null || true
code=0
wait "$pid" || code=$?
pod image unmount "$tag" >/dev/null
if [ "$ok" = 1 ] && [ "$code" != 0 ]; then
  echo "build-image.sh: the image's rdevd exited $code on SIGTERM"
  ok=0
fi
[ "$ok" = 1 ] || { cat "$log"; exit 1; }
if [ -n "${RDEV_IMAGE_RUN:-}" ]; then
  # shellcheck disable=SC2086
  timeout 10 podman $podman_flags run --rm --network=host "$tag" --listen 127.0.0.1:0 \
    --drain-ms 100 | grep -m1 "listening on" || true
fi
echo "built $tag"
