#!/usr/bin/env bash
# User-space instructions per request of deadbolt-server under a fixed lockload run, counted by
# valgrind's callgrind: repeatable on a busy machine, unlike timings, so it is the A/B measure for
# small changes to the command path (kernel time is not counted).
#
#   bench/callgrind.sh [--server PATH] [--lockload PATH] [--requests N] [--warmup-requests N]
#                      [--out FILE] [--server-arg ARG]... [-- lockload options...]
#
# Starts the server (--threads 1 --no-pin --hz 1) under callgrind with instrumentation off, runs
# lockload --warmup-requests (default 20000: every lock of the default 10,000 keys is held
# after it), switches instrumentation on, runs lockload -n --requests (default 200000), switches
# it off, stops the server, and prints Ir / request. The lockload options default to
# `-w acquire -c 50 -P 16`. The profile stays in --out (default /tmp/deadbolt.callgrind; the
# server's output beside it in --out.log) for
# `callgrind_annotate`.
set -euo pipefail
cd "$(dirname "$0")/.."
server=build/release/server/deadbolt-server
lockload=build/release/tools/lockload
requests=200000
warmup=20000
out=/tmp/deadbolt.callgrind
server_args=()  # more flags for the server (--server-arg --aclfile --server-arg users.acl)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --server) server=$2; shift 2 ;;
    --lockload) lockload=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --warmup-requests) warmup=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --server-arg) server_args+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
load=("$@")
[[ ${#load[@]} -eq 0 ]] && load=(-w acquire -c 50 -P 16)

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
rm -f "$out"
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" \
  "$server" --threads 1 --no-pin --hz 1 --port "$port" "${server_args[@]}" \
  >"$out.log" 2>&1 &
vg=$!
trap 'kill $vg 2>/dev/null || true' EXIT
for _ in $(seq 1 200); do
  (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break
  sleep 0.1
done
"$lockload" -p "$port" -q "${load[@]}" -n "$warmup" >/dev/null
callgrind_control -i on "$vg" >/dev/null
"$lockload" -p "$port" -q "${load[@]}" -n "$requests" >/dev/null
callgrind_control -i off "$vg" >/dev/null
# SHUTDOWN rather than a signal: valgrind may hold a signal back while the reactor sleeps.
(exec 3<>/dev/tcp/127.0.0.1/"$port"; printf '*1\r\n$8\r\nSHUTDOWN\r\n' >&3; sleep 1) || true
wait "$vg" || true
trap - EXIT
ir=$(awk '/^totals:/ {print $2; exit}' "$out")
echo "requests $requests  Ir $ir  Ir/request $(python3 -c "print(round($ir/$requests, 1))")"
