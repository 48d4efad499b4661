#!/usr/bin/env bash
# bench/jvm-start.sh — what `cluster.jvm: quick` saves: the CPU a cluster's containers spend
# until the harness calls it ready, and the time that takes, for `standard` (the official
# image's G1 and full JIT) and `quick` (first JIT tier, serial GC), in turn.
#
#   bench/jvm-start.sh                       # a standalone, 3 rounds
#   ROUNDS=5 TOPOLOGY=cluster bench/jvm-start.sh
#
# CPU is read from each container's cgroup (cpu.stat usage_usec), so it does not depend on what
# else the machine runs; the time does. Results: bench/results/jvm-start-<UTC time>.tsv
#   <setting> TAB <round> TAB <ready seconds> TAB <CPU seconds, all containers of the run>
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
bin=$PULSAR_CHAOS   # bench/lib.sh: target/release/pulsar-chaos unless set
rounds=${ROUNDS:-3}
topology=${TOPOLOGY:-standalone}
out="bench/results/jvm-start-$(date -u +%Y%m%dT%H%M%SZ).tsv"
mkdir -p bench/results
run_id=""
trap '[ -n "$run_id" ] && "$bin" cluster down --run "$run_id" >/dev/null 2>&1 || true' EXIT INT TERM

cpu_of_run() {
  local total=0 id usec
  for id in $(docker ps -aq --no-trunc --filter "label=pulsar-chaos.run=$1"); do
    usec=$(container_cpu_usec "$id") || { echo "jvm-start: no cgroup CPU figure for container $id" >&2; exit 1; }
    total=$(( total + usec ))
  done
  echo "$total"
}

for r in $(seq 1 "$rounds"); do
  for jvm in standard quick; do
    args=(cluster up --topology "$topology" --jvm "$jvm" --json)
    [ "$topology" = standalone ] && args+=(--binary-port 16650 --http-port 18080)
    j=$("$bin" "${args[@]}")
    run_id=$(grep -o '"run_id":"[^"]*"' <<<"$j" | cut -d'"' -f4)
    ready_ms=$(grep -o '"ready_ms":[0-9]*' <<<"$j" | cut -d: -f2)
    usec=$(cpu_of_run "$run_id")
    "$bin" cluster down --run "$run_id" >/dev/null
    run_id=""
    printf '%s\t%s\t%.1f\t%.1f\n' "$jvm" "$r" "$(bc -l <<<"$ready_ms/1000")" "$(bc -l <<<"$usec/1000000")" | tee -a "$out"
  done
done
awk -F'\t' '{n[$1]++; t[$1]+=$3; c[$1]+=$4} END {for (k in n) printf "%s: mean ready %.1f s, mean CPU %.1f s over %d round(s)\n", k, t[k]/n[k], c[k]/n[k], n[k]}' "$out" | sort
echo "results: $out" >&2
