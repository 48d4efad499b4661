#!/usr/bin/env bash
# bench/driver-overhead.sh — what going through a driver process costs per transaction (issue
# 31), with no Pulsar in the loop: benches/driver_overhead.rs against each driver, never
# connected, so that every request is refused at once (the JSON both ways, the pipe, the
# driver's reader and the harness's pending map are timed; the client is not). Each
# configuration runs REPEATS times in turn (java, go, java, go, ...); results go to
# bench/results/driver-overhead-<UTC time>.txt (the printed lines) and .jsonl (one document per
# run). Set a real transaction's time beside the figures: BENCHMARKS.md section 6.
#
#   bench/driver-overhead.sh                       # java and go, T=10 and T=100, 3 rounds: ~4 min
#   CLIENTS=java TXN_SIZES=10 REPEATS=1 bench/driver-overhead.sh   # ~20 s
#
# Knobs (environment): CLIENTS="java go", TXN_SIZES="10 100", REPEATS=3, SECONDS_EACH=10 (each
# of the two measures), WARMUP=3, WORKERS=4, INFLIGHT=64, JAVA_VERSION=4.2.4 (the Java
# client's), RESULTS_DIR=bench/results. Needs a quiet machine: the figures are latencies.
set -euo pipefail
ROOT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLIENTS=${CLIENTS:-java go}
TXN_SIZES=${TXN_SIZES:-10 100}
REPEATS=${REPEATS:-3}
SECONDS_EACH=${SECONDS_EACH:-10}
WARMUP=${WARMUP:-3}
WORKERS=${WORKERS:-4}
INFLIGHT=${INFLIGHT:-64}
JAVA_VERSION=${JAVA_VERSION:-4.2.4}
RESULTS_DIR=${RESULTS_DIR:-$ROOT_DIR/bench/results}
stamp=$(date -u +%Y%m%d-%H%M%S)
txt=$RESULTS_DIR/driver-overhead-$stamp.txt
jsonl=$RESULTS_DIR/driver-overhead-$stamp.jsonl
mkdir -p "$RESULTS_DIR"
cd "$ROOT_DIR"
cargo bench --locked --bench driver_overhead --no-run >&2
{
  echo "# bench/driver-overhead.sh $(date -u +%FT%TZ) on $(git rev-parse --short HEAD 2>/dev/null || echo '?'): CLIENTS=\"$CLIENTS\" TXN_SIZES=\"$TXN_SIZES\" REPEATS=$REPEATS SECONDS_EACH=$SECONDS_EACH WARMUP=$WARMUP WORKERS=$WORKERS INFLIGHT=$INFLIGHT; load $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$txt"
for t in $TXN_SIZES; do
  for r in $(seq 1 "$REPEATS"); do
    for c in $CLIENTS; do
      args=(--client "$c" --version "$JAVA_VERSION" --txn-size "$t" --workers "$WORKERS"
            --inflight "$INFLIGHT" --seconds "$SECONDS_EACH" --warmup "$WARMUP")
      out=$(cargo bench --locked --bench driver_overhead -- "${args[@]}" --json 2>/dev/null)
      echo "round $r: $(sed -n 1p <<<"$out")" | tee -a "$txt"
      sed -n 2p <<<"$out" >> "$jsonl"
    done
  done
done
echo "# results: $txt, $jsonl" >&2
