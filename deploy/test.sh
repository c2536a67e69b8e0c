#!/usr/bin/env bash
# deploy/test.sh — README's test command: installs what is missing, checks
# the C files' format, builds with warnings as errors, and runs the whole
# test suite three ways: a normal build, ASan+UBSan, and
# TSan for the runtime and integration suites; then each libFuzzer harness
# (tests/fuzz/) for RDEV_FUZZ_SECONDS (default 60) on its corpus, built with
# clang and ASan+UBSan. The contract suites (runtime unit tests, integration,
# wire tests, ACL programs; the *_acl entries) run on the sim and on the acl
# backend over the ACL test double in every build. Every sim suite that
# serves sessions (integration, Python wire tests, the session fuzzer) runs a
# second time with the sim's host view off (RDEV_SIM_HOST_VIEW=off), the path
# a real NPU's memory takes. The Python package (client/python/) is tested in
# the plain and ASan builds: pytest on both backends, the example notebook,
# its benchmark's smoke run, and (plain) pip install into a venv. The plain
# build's tests/deploy/ also installs the tree, packs the .deb packages and,
# as root, builds rdevd's container image from them (deploy_container: an
# mmdebstrap base from Debian's archive, podman; about 2 minutes the first
# time, skipped with the reason where this machine cannot make an image).
# Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

bash deploy/install-deps.sh

echo "=== format (clang-format against .clang-format) ==="
find proto runtime server client tests -name '*.[ch]' -not -path '*/corpus/*' -print0 |
  xargs -0 clang-format --dry-run --Werror --style=file

jobs=$(nproc 2>/dev/null || echo 2)
run_suite() { # dir sanitizer [ctest args...]
  local dir=$1 san=$2
  shift 2
  echo "=== build $dir (sanitizer: ${san:-none}) ==="
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRDEV_SANITIZE="$san" -DRDEV_WERROR=ON >/dev/null
  cmake --build "$dir" -j"$jobs"
  echo "=== test $dir ==="
  (cd "$dir" && ctest --output-on-failure "$@")
}
# The sim suites that serve sessions, again without the host view (acl has none);
# not integration_multi, whose copies between servers take the paths the others cover.
served='^(integration_[a-z]+|python_(wire|hostile|tenants)|acl_programs|acl_samples|bench_fair_quick|rdev_bench_quick|jobs_basic)$'
run_unmapped() { # dir [ctest -R pattern]
  echo "=== test $1, sim host view off ==="
  (cd "$1" && RDEV_SIM_HOST_VIEW=off ctest --output-on-failure -R "${2:-$served}" -E '^integration_multi$')
}

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_suite build ""
run_unmapped build
run_suite build-asan address
run_unmapped build-asan
# TSan: the runtime suite, the integration suite (rdevd and the client
# library with real sessions) and the jobs suite (rdevd's runners, webhook
# workers and drain). gRPC, abseil and OpenSSL are not built for
# TSan: tests/tsan.supp ignores what they do through intercepted calls, plus
# each abseil library the binaries load (a called_from_lib line must name one
# library); our hand-offs through gRPC are annotated (rdev/wire.h).
tsan_supp() {
  grep -v '^#' tests/tsan.supp
  ldd build-tsan/server/rdevd build-tsan/tests/test_integration | awk '/libabsl_/ {print "called_from_lib:" $1}' | sort -u
}
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRDEV_SANITIZE=thread -DRDEV_WERROR=ON >/dev/null
cmake --build build-tsan -j"$jobs"
tsan_supp > build-tsan/tsan.supp
TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/build-tsan/tsan.supp" \
  run_suite build-tsan thread -R '^(test_runtime.*|test_tenants|integration_.*|jobs_.*)$'
TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/build-tsan/tsan.supp" run_unmapped build-tsan '^integration_[a-z]+$'

# Fuzzing: the wire decoder, in-process sessions, the bulk connection, the two file parsers, job specs and allow lists, and the job YAML reader.
fuzz_seconds=${RDEV_FUZZ_SECONDS:-60}
echo "=== build build-fuzz (clang, libFuzzer + ASan+UBSan) ==="
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRDEV_SANITIZE=fuzzer -DRDEV_WERROR=ON \
  -DRDEV_FUZZ_SECONDS="$fuzz_seconds" >/dev/null
cmake --build build-fuzz --target fuzz_all -j"$jobs"
echo "=== fuzz build-fuzz (${fuzz_seconds} s per harness) ==="
(cd build-fuzz && ctest --output-on-failure -R '^fuzz_')
run_unmapped build-fuzz '^fuzz_session$'
