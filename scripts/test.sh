#!/usr/bin/env bash
# Builds deadbolt twice (release, and ASan+UBSan) and runs every test against each build:
# unit tests, end-to-end socket tests against the real binary, and real-client tests. Then
# builds the libFuzzer harnesses with clang and runs each for a bounded time.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test
# The JavaScript lock clients' packages, pinned by tests/js/package-lock.json.
(cd tests/js && npm ci --no-audit --no-fund --loglevel=error)
for config in release asan; do
  echo "=== build: $config"
  scripts/build.sh "$config"
  echo "=== test: $config"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "build/$config" --output-on-failure -j 2 --timeout 600
done
# The fuzzers (tests/fuzz): each harness for a bounded time from its seed corpus, under ASan
# and UBSan; a crash fails the run and leaves its input in build/fuzz/fuzz-crashes/.
echo "=== build: fuzz"
scripts/build.sh fuzz
echo "=== test: fuzz"
ctest --test-dir build/fuzz -L fuzz --output-on-failure -j 2 --timeout 600
echo "all tests passed"
