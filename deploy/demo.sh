#!/usr/bin/env bash
# deploy/demo.sh — README's first command: installs what is missing, builds
# only what the demo runs (rdevd and the sample, with the libascendcl.so and
# sim kernel library it links: `cmake --build build` builds the rest),
# starts rdevd on the embedded sim backend on a free loopback port, runs the
# CANN runtime's D2H async sample against it remotely (its main.cpp compiled
# unmodified against rdev's acl headers and linked with libascendcl.so and
# the sim kernel library), and stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."

bash deploy/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" --target rdevd sample_d2h_async

log=$(mktemp)
build/server/rdevd --listen 127.0.0.1:0 --log-level warn >"$log" &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 100); do grep -q "listening on" "$log" && break; sleep 0.1; done
addr=$(awk '/listening on/ {print $NF}' "$log")
[ -n "$addr" ] || { echo "rdevd did not start"; exit 1; }
echo "rdevd (sim) listening on $addr"
out=$(RDEV_TARGET="$addr" LD_LIBRARY_PATH=build/client/cann build/tests/acl/sample_d2h_async 2>&1)
echo "$out"
# as the sample's run.sh checks: the kernel's print and what the host read back agree
src=$(echo "$out" | sed -n 's/.*Source data: \(-\{0,1\}[0-9]*\).*/\1/p' | tail -1)
dst=$(echo "$out" | sed -n 's/.*Destination data: \(-\{0,1\}[0-9]*\).*/\1/p' | tail -1)
if [ -n "$src" ] && [ "$src" = "$dst" ]; then
  echo "[SUCCESS] Memory copy successfully."
else
  echo "[FAILURE] Source data '$src', Destination data '$dst'"
  exit 1
fi
