#!/usr/bin/env bash
# Runs lockload against a pinned redis-server (or any server already listening with --port) and
# prints one line per run: throughput, latency, and CPU per million requests for lockload and for
# the server (from INFO cpu).
#
#   tools/lockload/lockload_vs_redis.sh [--lockload PATH] [--port N] [--server-cpu-core C]
#                              [--load-cpu-core C] [--duration S] [--external]
#
# Without --external it starts `redis-server --port N` pinned to the server core and stops it at
# the end. With --external it uses whatever listens on --port (e.g. deadbolt-server).
set -euo pipefail
cd "$(dirname "$0")/.."

lockload=build/release/tools/lockload
port=7390
server_core=1
load_core=0
duration=3
external=0
while (($#)); do
  case "$1" in
    --lockload) lockload=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --server-cpu-core) server_core=$2; shift 2 ;;
    --load-cpu-core) load_core=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --external) external=1; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

if ((!external)); then
  taskset -c "$server_core" redis-server --port "$port" --save '' --appendonly no \
    --daemonize no --loglevel warning >/dev/null 2>&1 &
  server_pid=$!
  trap 'kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true' EXIT
  for _ in $(seq 50); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
fi

run() {
  local label=$1
  shift
  redis-cli -p "$port" flushall >/dev/null
  taskset -c "$load_core" "$lockload" -p "$port" -d "$duration" --warmup 0.5 -q --json \
    --server-cpu "$@" |
    python3 -c '
import json, sys
d = json.load(sys.stdin)
label = sys.argv[1]
srv = d.get("server_cpu_s_per_million", float("nan"))
print(f"{label:34s} {d['"'"'ops_per_sec'"'"']:>12,.0f} ops/s  p50 {d['"'"'p50_us'"'"']:>8.1f} us"
      f"  p99 {d['"'"'p99_us'"'"']:>8.1f} us  lockload {d['"'"'cpu_s_per_million'"'"']:6.3f}"
      f"  server {srv:6.3f} cpu-s/M  errors {d['"'"'errors'"'"']}")
' "$label"
}

echo "lockload on core $load_core, server on port $port (core $server_core unless --external)"
run "acquire c50 P1" -w acquire -c 50 -P 1
run "acquire c50 P16" -w acquire -c 50 -P 16
run "acquire c50 P64" -w acquire -c 50 -P 64
run "cycle evalsha c50 P1" -w cycle --release evalsha -c 50 -P 1
run "cycle evalsha c50 P16" -w cycle --release evalsha -c 50 -P 16
run "cycle evalsha c50 P64" -w cycle --release evalsha -c 50 -P 64
run "acquire c50 open 20k/s" -w acquire -c 50 --rate 20000
run "cycle evalsha c50 open 100k/s" -w cycle --release evalsha -c 50 --rate 100000
