#!/usr/bin/env bash
# Builds deadbolt (release) and starts it on 127.0.0.1:6379 with its journal in ./data (every
# acknowledged write on disk before its reply: see README.md). Extra arguments go to the server
# and win over these defaults, e.g. scripts/run.sh --port 7000 --threads 2 --appendfsync everysec
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh release
exec build/release/server/deadbolt-server --appendonly yes --appendfsync always --dir data "$@"
