#!/usr/bin/env bash
# tests/deploy/test_container.sh BUILD SRC — the test deploy_container:
# rdevd's container image, built by deploy/container/build-image.sh (a
# Debian bookworm base from mmdebstrap, `podman import`, `podman build` of
# deploy/container/Containerfile with chroot isolation) and checked by it:
# the image's rdevd, run by chroot as its user rdev on 127.0.0.1:0, listens
# and serves the build tree's `rdev` (info, a 3 MiB round trip), then
# drains and exits 0 on SIGTERM.
#
# The .deb packages are deploy_deb's (BUILD/packages; the fixture
# deploy_packages runs it first) unless anything they hold is newer, when
# build-image.sh runs cpack itself. The image is tagged
# localhost/rdev/rdevd:ctest-<hash of BUILD>, apart from the images a user
# builds, and removed at the end; the base localhost/rdev/debian:bookworm
# (about 170 MB) is kept, as build-image.sh keeps it, so that later runs
# and build-image.sh reuse it (`podman rmi localhost/rdev/debian:bookworm`
# reclaims it; RDEV_REBASE=1 makes it again).
#
# Exit 77 (SKIP) only when this machine cannot make the image at all: not
# root, mmdebstrap or podman not installed, or build-image.sh's 77 (podman
# does not work, mmdebstrap or the import fails, podman cannot build even a
# trivial image here); the reason is printed. Anything of ours failing
# fails the test.
set -uo pipefail
build=$(realpath "$1")
src=$(realpath "$2")
skip() {
  echo "deploy_container: SKIP: $*"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "not root (mmdebstrap --mode=root and podman's system storage need root)"
for p in mmdebstrap podman; do
  command -v "$p" >/dev/null || skip "$p is not installed (deploy/install-deps.sh installs it)"
done
[ -x "$build/client/rdev" ] || { echo "deploy_container: no $build/client/rdev"; exit 1; }
# shellcheck disable=SC2086
pod() { podman ${PODMAN_FLAGS:-} "$@"; }

debs=$build/packages
found=("$debs"/rdevd_*.deb)
deb=${found[0]}
reuse=()
if [ -f "$deb" ] && [ -z "$(find "$build/server/rdevd" "$build/CPackConfig.cmake" "$src/deploy/CMakeLists.txt" \
  "$src/deploy/systemd" "$src/deploy/debian" "$src/deploy/tenants.example" -newer "$deb" -print -quit)" ]; then
  echo "deploy_container: deploy_deb's packages: $(cd "$debs" && echo *.deb)"
  reuse=(RDEV_DEBS="$debs")
else
  echo "deploy_container: no current packages in $debs: build-image.sh runs cpack"
fi

tag=localhost/rdev/rdevd:ctest-$(printf %s "$build" | md5sum | cut -c1-8)
pod rmi -f "$tag" >/dev/null 2>&1 || true # a run killed before its cleanup
t0=$SECONDS
env RDEV_IMAGE_TAG="$tag" "${reuse[@]}" "$src/deploy/container/build-image.sh" "$build"
code=$?
pod rmi -f "$tag" >/dev/null 2>&1 || true
echo "deploy_container: build-image.sh exited $code after $((SECONDS - t0)) s"
case $code in
  0) echo "deploy_container: PASS" ;;
  77) echo "deploy_container: SKIP: see build-image.sh's reason above" ;;
  *) code=1 ;;
esac
exit "$code"
