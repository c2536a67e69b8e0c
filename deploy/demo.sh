#!/usr/bin/env bash
# deploy/demo.sh — README's first command: installs what is missing, builds,
# starts rdevd on the embedded sim backend on a free loopback port, runs the
# CANN D2H async sample against it remotely, and stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."

bash deploy/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)"

log=$(mktemp)
build/server/rdevd --listen 127.0.0.1:0 --log-level warn >"$log" &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 100); do grep -q "listening on" "$log" && break; sleep 0.1; done
addr=$(awk '/listening on/ {print $NF}' "$log")
[ -n "$addr" ] || { echo "rdevd did not start"; exit 1; }
echo "rdevd (sim) listening on $addr"
build/client/d2h_async "$addr"
