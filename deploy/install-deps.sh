#!/usr/bin/env bash
# deploy/install-deps.sh — installs the Debian (bookworm) packages rdev needs to
# build, test and benchmark. Idempotent: does nothing when all are present.
# Run as root (or with sudo available). Used by README's commands and .ci/run.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config
  check libsubunit-dev
  libgrpc-dev protobuf-compiler protobuf-compiler-grpc
  nanopb libnanopb-dev
  libcurl4-openssl-dev libssl-dev libyaml-dev
  libmicrohttpd-dev  # rdevd's metrics endpoint (server/metrics/)
  prometheus  # tests/python/test_operations.py: a real Prometheus scrapes rdevd
  libffi-dev  # the acl backend calls CANN's operators through it (runtime/acl/acl_ops.c)
  openssl  # tests make their TLS certificates with it
  curl  # tests/bench/jobs: the baseline (curl | curl -T -)
  python3 python3-grpcio python3-protobuf
  python3-dev python3-setuptools python3-wheel python3-venv python3-numpy python3-tqdm
  python3-pytest python3-nbclient python3-nbformat python3-ipykernel
  python3-ipywidgets  # the tour notebook's progress widgets (tests/python/run_notebook.py)
  clang libclang-rt-14-dev llvm clang-format
  dpkg-dev  # dpkg-shlibdeps: the .deb packages' Depends (cpack -G DEB)
  systemd  # systemd-analyze verifies the unit (tests/deploy)
  python3-yaml  # tests/deploy reads the rendered Kubernetes manifests
  slurmctld slurmd slurm-client munge  # tests/slurm runs deploy/slurm/ on a real Slurm
  mmdebstrap podman  # deploy_container: a base image from Debian's archive, rdevd's image built on it
)
# kubectl renders deploy/kubernetes (kubectl kustomize): Debian's own
# kubernetes-client, unless a kubectl is already installed.
command -v kubectl >/dev/null 2>&1 || PKGS+=(kubernetes-client)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
