#!/usr/bin/env bash
# bench/it-times.sh — how long each integration test takes alone: the figures behind the CI
# budget (issue 34). It builds the test binary once (release, as CI does), then runs every test
# of tests/it by itself, in the order `--list` gives, and writes one line per test:
#   <test name> TAB <seconds> TAB <exit code>
# to bench/results/it-times-<UTC time>.tsv, and at the end the total and the ten slowest.
#
#   bench/it-times.sh                 # every test (about as long as the suite, ~40 min here)
#   bench/it-times.sh clients::       # only the tests whose name contains this filter
#
# The test binary is copied first, so a `cargo build` meanwhile does not change what runs
# (the tests still call target/release/pulsar-chaos: do not rebuild that while it runs).
# Another process may run Docker tests too: each test takes the lock file IT_LOCK (default
# /tmp/it.lock) while it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
filter="${1:-}"
lock="${IT_LOCK:-/tmp/it.lock}"
out="bench/results/it-times-$(date -u +%Y%m%dT%H%M%SZ).tsv"
mkdir -p bench/results
cargo build --release --locked >&2
bin=$(cargo test --release --locked --no-run --test it 2>&1 | sed -n 's/.*Executable \(tests\/\)\{0,1\}it\/main.rs (\(.*\))/\2/p' | tail -1)
# The copy runs the checkout's binary, not one beside itself (tests/support/bin.rs).
export PULSAR_CHAOS_TEST_BIN="$PWD/target/release/pulsar-chaos"
[ -x "$bin" ] || { echo "it-times: no test binary found" >&2; exit 1; }
copy=$(mktemp)
trap 'rm -f "$copy"' EXIT
cp "$bin" "$copy"
"$copy" --list 2>/dev/null | sed -n 's/: test$//p' | grep -F -- "$filter" > "$copy.list" || true
trap 'rm -f "$copy" "$copy.list"' EXIT
n=$(wc -l < "$copy.list")
echo "it-times: $n test(s); results in $out" >&2
while read -r t; do
  s=$(date +%s)
  rc=0
  flock "$lock" "$copy" --exact "$t" --test-threads=1 > /dev/null 2>&1 || rc=$?
  printf '%s\t%s\t%s\n' "$t" "$(( $(date +%s) - s ))" "$rc" | tee -a "$out"
done < "$copy.list"
total=$(awk -F'\t' '{s+=$2} END {print s}' "$out")
echo "total: ${total}s over $n test(s); the slowest:"
sort -t$'\t' -k2 -nr "$out" | head -10
