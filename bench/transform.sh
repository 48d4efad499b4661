#!/usr/bin/env bash
# bench/transform.sh — consume-transform-produce throughput of pulsar-chaos's transform
# workload (A) against Pulsar's own tools on one standalone Pulsar that the script starts and
# removes (bench/lib.sh): B1 = `pulsar-perf consume -txn` (consume and acknowledge in
# transactions of T messages; it publishes nothing, so it does less per input than A) and
# B2 = `pulsar-perf transaction` (consume T and publish T in each transaction, A's shape).
# Rounds alternate A, B1, B2 (reversed every other round: bench/lib.sh's round_order). Results go to bench/results/transform-<UTC time>.tsv and .txt.
#
#   bench/transform.sh                          # T=10 and 100, 3 rounds, ~10 min here
#   TXN_SIZES=10 REPEATS=1 MESSAGES=5000 bench/transform.sh   # a smoke test, ~2 minutes
#
# Knobs (environment): TXN_SIZES="10 100", REPEATS=3, TOOLS="ours perf-consume-txn
# perf-transaction"; also perf-consume, C below (the ones run, in this order in odd rounds,
# reversed in even ones), MESSAGES (inputs per run; default
# 10,000 at T=10 and 50,000 otherwise), CONSUMERS=4 (A's consumers, B1's -n, B2's
# -threads), CLIENT=own (A's client: own, or java / go through their drivers, docs/drivers.md;
# java is the client B runs on), MESSAGE_SIZE=100, PERF_TIMEOUT=300, TESTCLIENT_DIR
# (pulsar-testclient 4.0.6's jars, copied once by Maven from bench/testclient/pom.xml), RESULTS_DIR,
# KEEP_WORK=1, and those of bench/lib.sh.
#
# What each figure is
#   A  inputs / the transform phase's elapsed time, from the run's producer.json
#      (`messages_per_s`: first consumer started to every input confirmed committed and the
#      backlog read as 0; the input's fill and the read-back are not in it). Input entries of
#      one message (`input_batch_size: 1`, as the bundled transform scenarios, see
#      docs/findings/transform-batch-member-conflict.md, and as B's `produce -db` fill), a
#      transaction's T outputs in one batched entry (`batch_size: T`: what the Java producer's
#      default batching, 1 ms and up to 1,000 messages, makes of B2's T sends in a transaction;
#      until 2026-12-04 A's outputs were one entry per message, B2's batched), Shared
#      subscription, identity f.
#   B  the input topic is filled first with plain `pulsar-perf produce -db` (not timed), then
#      the tool runs from the earliest position on a Shared subscription until it has handled
#      MESSAGES inputs; the figure is MESSAGES / (its last thread's "DONE" - its first consumer
#      subscribed: B1's "Start receiving", B2's first "Create subscriptions"), both from its
#      own log timestamps; its own "Aggregated" line is kept in the detail.
#   C  (`perf-consume`, not run unless named) `pulsar-perf consume` without transactions on
#      the same fill and subscription, measured as B1: the rate at which the broker dispatches
#      that input at all, the ceiling of A and B on it.
#   CPU  beside each figure, the cores the standalone, everything else and nothing (idle) used
#      over that same interval (bench/lib.sh's cpu_window), and in the summary their medians
#      with the CPU µs per input of the standalone and of the rest.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

TXN_SIZES=${TXN_SIZES:-"10 100"}
REPEATS=${REPEATS:-3}
CONSUMERS=${CONSUMERS:-4}
CLIENT=${CLIENT:-own}
TOOLS=${TOOLS:-"ours perf-consume-txn perf-transaction"}
MESSAGE_SIZE=${MESSAGE_SIZE:-100}
PERF_TIMEOUT=${PERF_TIMEOUT:-300}
TESTCLIENT_DIR=${TESTCLIENT_DIR:-$HOME/.cache/pulsar-chaos/testclient-4.0.6-on-4.0.7}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
PERF_MAIN=org.apache.pulsar.testclient.PulsarPerfTestTool

messages_for() {
  local def=50000
  [ "$1" = 10 ] && def=10000
  echo "${MESSAGES:-$def}"
}

perf() {
  local log_file=$1; shift
  # In the scratch directory: `pulsar-perf transaction` writes its histogram file to the
  # working directory.
  run_child env -C "$WORK_DIR" timeout -k 10 "$PERF_TIMEOUT" java -Dlog4j2.configurationFile="$BENCH_DIR/testclient/log4j2.xml" \
    -Djava.net.preferIPv4Stack=true -Dio.netty.tryReflectionSetAccessible=true \
    --add-opens java.base/sun.net=ALL-UNNAMED --add-opens java.base/java.lang=ALL-UNNAMED \
    --add-opens java.base/java.util.zip=ALL-UNNAMED --add-opens java.base/java.nio=ALL-UNNAMED \
    --add-opens java.base/jdk.internal.misc=ALL-UNNAMED \
    -cp "$TESTCLIENT_DIR/*" "$PERF_MAIN" "$WORK_DIR/perf-client.conf" "$@" >"$log_file" 2>&1
}

# The time of a log line (Unix ms: bench/testclient/log4j2.xml starts each line with it).
ms_of() { awk '{ print $1; exit }'; }

# A: our transform. Sets RESULT="msg_per_s seconds detail" or fails.
run_ours() {
  local t=$1 n=$2 rep=$3
  SEQ=$((SEQ + 1))
  local dir="$WORK_DIR/a-$t-$rep-$SEQ"
  mkdir -p "$dir"
  cat >"$dir/scenario.yaml" <<EOF
name: bench-transform-$t
seed: 1
workload:
  kind: transform
  topic: persistent://public/default/bench-ta-$t
  unique_topic: true
  messages: $n
  txn_size: $t
  input_batch_size: 1
  batch_size: $t
  consumers: $CONSUMERS
  subscription_type: shared
  message_size: $MESSAGE_SIZE
  client: $CLIENT
  deadline: 1h
faults: []
EOF
  run_scenario "$dir" "txn_size $t, repeat $rep" || return 1
  local pj=$PRODUCER_JSON
  RESULT="$(json_value "$pj" messages_per_s) $(json_value "$pj" elapsed_s) commit_latency_avg_ms=$(json_value "$pj" commit_latency_avg_ms);$(cpu_window $(ours_window "$pj") | tr ' ' ';')"
}

# Fill $1 with $2 plain messages (not timed).
fill() {
  perf "$WORK_DIR/fill-$SEQ.log" produce -u "$SERVICE_URL" -au "$ADMIN_URL" -m "$2" -threads 1 \
    -s "$MESSAGE_SIZE" -db -r 100000000 "$1" \
    || { log "B: the fill of $1 failed (log: $WORK_DIR/fill-$SEQ.log)"; return 1; }
}

# B1 and B2 share this: the figure from the log, from the first line matching $3 to the last
# thread's "DONE". $1 log, $2 n.
perf_result() {
  local log_file=$1 n=$2 first_pat=$3 a b agg
  a=$(grep -m1 -E "$first_pat" "$log_file" | ms_of || true)
  b=$(grep -E -- "- -+ DONE -+" "$log_file" | tail -1 | ms_of || true)
  agg=$(grep -m1 "Aggregated" "$log_file" | sed 's/.*Aggregated[^-]*--- *//' | tr -s ' ' | cut -c1-90 | tr ' ' '_' || true)
  [ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt "$a" ] \
    || { log "B: no timestamps to measure in $log_file"; return 1; }
  RESULT=$(awk -v n="$n" -v a="$a" -v b="$b" -v agg="${agg:-NA}" -v cpu="$(cpu_window "$a" "$b" | tr ' ' ';')" \
    'BEGIN { s = (b - a) / 1000; printf "%.1f %.3f aggregated=%s;%s\n", n / s, s, agg, cpu }')
}

# `pulsar-perf consume` from the earliest position of a filled input on a Shared subscription,
# with $6... added to its options. $1 the tool's name in the log, $2 its topic tag, $3 T, $4 n,
# $5 the round.
run_perf_consume() {
  local name=$1 tag=$2 t=$3 n=$4 rep=$5
  shift 5
  SEQ=$((SEQ + 1))
  local topic="persistent://public/default/bench-$tag-$t-$STAMP-$SEQ" log_file
  log_file="$WORK_DIR/$(tr '[:upper:]' '[:lower:]' <<<"$name")-$t-$rep-$SEQ.log"
  fill "$topic" "$n" || return 1
  perf "$log_file" consume -u "$SERVICE_URL" -m "$n" -n "$CONSUMERS" -ss bench -st Shared \
    -sp Earliest "$@" -i 1 "$topic" \
    || { log "$name failed (txn_size $t, repeat $rep; log: $log_file)"; return 1; }
  perf_result "$log_file" "$n" "PerformanceConsumer - Start receiving"
}

# B1: pulsar-perf consume -txn.
run_consume() { run_perf_consume B1 tc "$1" "$2" "$3" -txn -nmt "$1" -tto 30; }

# C: pulsar-perf consume without transactions, the same fill and subscription: how fast the
# broker dispatches this input at all (the ceiling of every transform on it).
run_plain() { run_perf_consume C tp "$1" "$2" "$3"; }

# B2: pulsar-perf transaction (consume T, publish T, one transaction).
run_transaction() {
  local t=$1 n=$2 rep=$3
  SEQ=$((SEQ + 1))
  local in="persistent://public/default/bench-tt-$t-$STAMP-$SEQ" log_file="$WORK_DIR/b2-$t-$rep-$SEQ.log"
  fill "$in" "$n" || return 1
  perf "$log_file" transaction -u "$SERVICE_URL" -au "$ADMIN_URL" --topics-c "$in" --topics-p "$in-out" \
    -threads "$CONSUMERS" -ntxn $((n / t)) -nmc "$t" -nmp "$t" -ss bench -st Shared -sp Earliest \
    -tto 30 -i 1 \
    || { log "B2 failed (txn_size $t, repeat $rep; log: $log_file)"; return 1; }
  perf_result "$log_file" "$n" "PerformanceTransaction - Create subscriptions"
}

bench_setup
: >"$WORK_DIR/perf-client.conf"
STAMP=$(date -u +%Y%m%d-%H%M%S)
SEQ=0
mkdir -p "$RESULTS_DIR"
TSV="$RESULTS_DIR/transform-$STAMP.tsv"
TXT="$RESULTS_DIR/transform-$STAMP.txt"
testclient_jars
cluster_up
printf 'txn_size\trepeat\ttool\tmessages\tseconds\tmsg_per_s\tdetail\n' >"$TSV"
{
  echo "# bench/transform.sh $STAMP: repeats=$REPEATS consumers=$CONSUMERS message_size=$MESSAGE_SIZE client=$CLIENT (A)"
  echo "# image: ${IMAGE:-default}  service: $SERVICE_URL  $(nproc) cores"
  printf '%-8s %-6s %-16s %9s %9s %10s  %s\n' txn_size repeat tool messages seconds msg/s detail
} | tee "$TXT"
failed=0
for t in $TXN_SIZES; do
  n=$(messages_for "$t")
  for rep in $(seq 1 "$REPEATS"); do
    for tool in $(round_order "$rep" $TOOLS); do
      case $tool in
        ours) fn=run_ours ;; perf-consume-txn) fn=run_consume ;; perf-consume) fn=run_plain ;;
        *) fn=run_transaction ;;
      esac
      RESULT=""
      if "$fn" "$t" "$n" "$rep" && [ -n "$RESULT" ]; then
        read -r rate secs detail <<<"$RESULT"
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$rep" "$tool" "$n" "$secs" "$rate" "$detail" >>"$TSV"
        printf '%-8s %-6s %-16s %9s %9.2f %10.1f  %s\n' "$t" "$rep" "$tool" "$n" "$secs" "$rate" "$detail" | tee -a "$TXT"
      else
        failed=1
        printf '%s\t%s\t%s\t%s\tNA\tNA\tfailed\n' "$t" "$rep" "$tool" "$n" >>"$TSV"
        printf '%-8s %-6s %-16s %9s %9s %10s  failed\n' "$t" "$rep" "$tool" "$n" NA NA | tee -a "$TXT"
      fi
    done
  done
done
{
  echo
  echo "# summary: median msg/s (inputs handled per second) of each tool"
  for t in $TXN_SIZES; do
    for tool in $TOOLS; do
      printf '%-8s %-16s %10s\n' "$t" "$tool" \
        "$(awk -F'\t' -v t="$t" -v tool="$tool" '$1 == t && $3 == tool && $6 != "NA" { print $6 }' "$TSV" | median)"
    done
  done
  echo
  cpu_summary "$TSV" "$TXN_SIZES" "$TOOLS"
} | tee -a "$TXT"
log "results: $TSV and $TXT"
[ "$failed" = 0 ] || die "some runs failed (see above)"
