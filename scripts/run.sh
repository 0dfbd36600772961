#!/usr/bin/env bash
# Builds deadbolt (release) and starts it on 127.0.0.1:6379. Extra arguments go to the server,
# e.g. scripts/run.sh --port 7000 --threads 2
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh release
exec build/release/server/deadbolt-server "$@"
