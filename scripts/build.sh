#!/usr/bin/env bash
# Builds one configuration: scripts/build.sh release|asan  -> build/<config>
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-release}
case "$config" in
  release) flags=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan) flags=(-DCMAKE_BUILD_TYPE=Debug -DDEADBOLT_SANITIZE=ON -DDEADBOLT_BUILD_BENCH=OFF) ;;
  *) echo "usage: $0 release|asan" >&2; exit 2 ;;
esac
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S . -B "build/$config" "${gen[@]}" "${flags[@]}" >/dev/null
cmake --build "build/$config" -j "$(nproc)"
