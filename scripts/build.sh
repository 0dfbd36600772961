#!/usr/bin/env bash
# Builds one configuration: scripts/build.sh release|asan|fuzz  -> build/<config>
# fuzz: clang with ASan, UBSan and libFuzzer; builds only the harnesses of tests/fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-release}
case "$config" in
  release) flags=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan) flags=(-DCMAKE_BUILD_TYPE=Debug -DDEADBOLT_SANITIZE=ON -DDEADBOLT_BUILD_BENCH=OFF) ;;
  fuzz) flags=(-DCMAKE_BUILD_TYPE=Debug -DDEADBOLT_FUZZ=ON -DDEADBOLT_BUILD_BENCH=OFF
               -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++) ;;
  *) echo "usage: $0 release|asan|fuzz" >&2; exit 2 ;;
esac
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S . -B "build/$config" "${gen[@]}" "${flags[@]}" >/dev/null
target=(); [[ "$config" == fuzz ]] && target=(--target fuzzers)
cmake --build "build/$config" -j "$(nproc)" "${target[@]}"
