#!/usr/bin/env bash
# Runs one libFuzzer harness for a bounded time: run.sh <harness> <seed corpus dir> <seconds>.
# New inputs go to a scratch directory, never into the repository's seeds. A crash fails the test
# and leaves its input in build/fuzz-crashes/ (printed in hex too), to become a unit test.
set -uo pipefail
harness=$1 seeds=$2 secs=$3
name=$(basename "$harness")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
crashes="$(dirname "$harness")/../../fuzz-crashes/$name"
mkdir -p "$work/corpus" "$crashes"
"$harness" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2560 -print_final_stats=1 \
  -artifact_prefix="$crashes/" "$work/corpus" "$seeds" 2>&1 | tail -n 40
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
  for f in "$crashes"/*; do
    [ -f "$f" ] && { echo "input $f:"; od -A d -c "$f" | head -n 20; }
  done
fi
exit "$rc"
