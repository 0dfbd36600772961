#!/usr/bin/env bash
# Installs the Debian packages deadbolt needs to build and test, if any are missing.
set -euo pipefail
PKGS=(cmake ninja-build g++ pkg-config liburing-dev libmimalloc-dev libabsl-dev libgtest-dev
      libgmock-dev libbenchmark-dev libxxhash-dev python3 python3-redis redis-tools redis-server
      liblua5.1-0-dev lua-cjson-dev lua-bitop  # the embedded Lua (server/lua/)
      libssl-dev openssl)  # TLS (server/tls/), SHA-256 of ACL passwords (server/acl/); the openssl
      # command makes the tests' certificates
if [[ "${1:-}" == "--test" ]]; then
  # Node.js for the JavaScript client tests: only when none is on PATH (a machine may have a
  # Node.js that did not come from Debian, and Debian's npm would conflict with it).
  command -v node >/dev/null || PKGS+=(nodejs)
  command -v npm >/dev/null || PKGS+=(npm)
  PKGS+=(libfuse3-dev fuse3)  # tools/lockcrash/powercutfs, for lockcrash --power-cut
  PKGS+=(clang libclang-rt-14-dev)  # tests/fuzz: libFuzzer harnesses
  # tests/e2e/test_exporter.py, where Debian has it (the test skips otherwise).
  if apt-cache show prometheus-redis-exporter >/dev/null 2>&1; then
    PKGS+=(prometheus-redis-exporter)
  fi
fi
if [[ "${1:-}" == "--bench" ]]; then
  PKGS+=(gnuplot-nox)  # bench/compare.py's plot
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
