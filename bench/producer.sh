#!/usr/bin/env bash
# bench/producer.sh — produce throughput of pulsar-chaos's transactional producer (A) against
# Pulsar's own PerformanceProducer, `pulsar-perf produce` (B), on one standalone Pulsar that the
# harness starts for this script (non-default ports) and removes at the end, on error and on
# Ctrl-C.
#
# For each transaction size in TXN_SIZES it alternates A B B A ... REPEATS times each, every run
# on a fresh topic, and prints messages/s per run and, per size, the median of the ratios A/B of
# the run pairs (A_i ran next to B_i, so a drift of the machine hits both; which runs first
# changes every round, so the standalone's own speed-up over its first minutes favours neither). Results go to
# bench/results/producer-<UTC time>.tsv (one line per run) and .txt (the printed table).
#
#   bench/producer.sh                                   # the full run (see bench/README.md)
#   MESSAGES=20000 REPEATS=1 TXN_SIZES=100 bench/producer.sh   # a smoke test, ~1 minute
#
# Knobs (environment, or the same names as --messages N, --txn-sizes "100 10", --repeats N,
# --concurrency N):
#   MESSAGES              messages per run, for every size. Unset, each size has its own
#                         default, chosen so that each run of either tool lasts >= 15 s on a
#                         2-core machine (measured: ~450 msg/s for A at T=10, ~4,500 at 100,
#                         ~20,000 at 1000, ~55,000 without transactions): T=10: 20,000;
#                         T=100: 200,000; T=1000: 500,000; none: 1,000,000; others: 200,000.
#   MESSAGES_<T>          per-size override of both, e.g. MESSAGES_10=50000 MESSAGES_none=2000000
#   TXN_SIZES="100 10 1000 none"   messages per transaction; "none" = no transactions
#   REPEATS=3             A/B pairs per size
#   CLIENTS="own"         the clients A runs through, each once per round beside B: own (the
#                         harness's protocol client), java, go (the official clients in their
#                         driver processes, docs/drivers.md); each gets its own ratio to the
#                         round's B, e.g. CLIENTS="own java go" TXN_SIZES="10 100"
#   CONCURRENCY=4         see "the mapping" below
#   OURS_CONCURRENCY=$CONCURRENCY   A's concurrency alone
#   COMMITS_IN_FLIGHT     A's commits_in_flight (commits one worker may have under way); unset:
#                         the scenario default (4)
#   PERF_TIMEOUT=300      seconds after which a B run is stopped and counted as failed
#   BATCH_SIZE=100        messages per batched entry (A: batch_size; B: -bm)
#   MESSAGE_SIZE=100      payload bytes (A: message_size, the number padded; B: -s)
#   NOTXN_CHUNK=1000      without transactions: numbers a worker of A sends before it waits
#                         for their receipts (A's txn_size), B's -o
#   PERF_OUTSTANDING=match   B's -o: "match" (= the transaction size, or NOTXN_CHUNK), a
#                         number, or "default" (no -o: pulsar-perf's unbounded pipelining)
#   PERF_JAVA_OPTS        more JVM options for B (e.g. -Xmx1g)
#   TESTCLIENT_DIR=~/.cache/pulsar-chaos/testclient-4.0.6-on-4.0.7   B's jars (copied once
#                         with Maven from bench/testclient/pom.xml)
#   RESULTS_DIR=bench/results, KEEP_WORK=1 (keep run directories and pulsar-perf logs),
#   and those of bench/lib.sh: BINARY_PORT=16650 HTTP_PORT=18080 IMAGE, SERVICE_URL+ADMIN_URL.
#
# What each figure is
#   A  `pulsar-chaos run` on a generated scenario (no faults, unique topic), read from the run
#      directory's producer.json: messages_per_s = messages committed / the producer's elapsed
#      time, from its first NEW_TXN (connections and producers are set up before) to the last
#      commit answered. The run's read-back and verdict come after and are not in the figure.
#      The run must pass (all numbers exactly once) or the figure is not taken.
#   B  PerformanceProducer (pulsar-testclient 4.0.6 on 4.0.7 client libraries) with -m MESSAGES:
#      MESSAGES / (last thread's "DONE" log line - first thread's "Created 1 producers" line),
#      from the tool's own log timestamps (ms). Its "Aggregated throughput stats" msg/s is kept
#      in the TSV (perf_aggregated_msg_s) but not compared: it divides by the time from before
#      the clients are built to the main thread's next 10-second tick after the last thread is
#      done (PerformanceProducer polls every 10 s), so it is up to 10 s too long; for a 20 s
#      run that is a third too low. B counts send receipts (a transaction's messages are
#      acknowledged before its commit is): its last commits are not waited for; A's are.
#   CPU  beside each figure, the cores the standalone used over that same interval, the cores
#      everything else used (the client under test, docker-proxy on the published port, the
#      rest) and the idle ones (bench/lib.sh's cpu_window: 0.5-s samples of the container's
#      cgroup and /proc/stat); the summary gives their medians and the CPU µs per message of
#      the standalone and of the rest. Where the machine has no idle core left, the ratio is
#      what the two sides' CPU per message makes of the 2 cores.
#
# The mapping (why these pulsar-perf options)
#   A's concurrency C is the number of transactions open at once: C workers, each of which
#   opens a transaction, sends its txn_size messages (in entries of batch_size, all at once),
#   waits for every receipt, commits, waits for the answer, then starts the next. All workers
#   share one connection and one producer per partition. PerformanceProducer's unit of
#   concurrency is a test thread (-threads): each has its own client (connection, coordinator
#   client), its own producer and one transaction being filled at a time; after -nmt messages
#   it commits without waiting (the commit waits for the sends inside the client) and opens
#   the next transaction at once (waiting for NEW_TXN only). So B = -threads C -nmt T, and -m
#   MESSAGES split evenly over the threads (MESSAGES/C each, statically; A's workers share one
#   queue). (-n, producers per topic, would not add transactions: the producers of a thread
#   share its one transaction.)
#   Outstanding messages: A has at most C x T messages sent and not acknowledged. pulsar-perf
#   by default has no limit (-o 0, no client memory limit) and would run ahead of the broker;
#   -o T per thread caps B at the same C x T. Both overlap a commit with the next
#   transaction's sends: a B thread commits without waiting; an A worker hands its sends and
#   commit to a task of its own once its partitions are registered (at most C such tasks
#   sending, and C committing, at once) and meanwhile uses the transaction it opened ahead
#   for its next attempt (one spare per worker), so A has up to 4C transactions open and B
#   no fixed bound; unacknowledged messages are bounded alike.
#   Batching: A sends each group of BATCH_SIZE numbers as one batched entry as soon as the
#   transaction has them; B batches with the Java client (-bm BATCH_SIZE, -b 1 ms window, its
#   default), and a batch never spans two transactions. Same payload size (-s), no compression
#   on either side, -r 100000000 (pulsar-perf's default rate limit is 100 msg/s).
#   Without transactions: A with `transactions: false` and txn_size NOTXN_CHUNK (each worker
#   sends NOTXN_CHUNK messages, waits for the receipts, repeats); B without -txn, -o
#   NOTXN_CHUNK (a sliding window of that many per thread rather than A's lock-step chunks).
#
# Limits: one standalone (broker, bookie and ZooKeeper in one JVM in Docker) on the same 2
# cores as the client under test, so the client's own CPU use slows the broker; B's JVM
# starts cold (JIT warm-up counts in its first seconds, hence runs of >= 15 s); A also writes
# and fsyncs its journal and history (one journal entry per transaction) which B does not.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

while [ $# -gt 0 ]; do
  case "$1" in
    --messages) MESSAGES=$2; shift 2 ;;
    --txn-sizes) TXN_SIZES=$2; shift 2 ;;
    --repeats) REPEATS=$2; shift 2 ;;
    --concurrency) CONCURRENCY=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

TXN_SIZES=${TXN_SIZES:-"100 10 1000 none"}
CLIENTS=${CLIENTS:-own}
REPEATS=${REPEATS:-3}
CONCURRENCY=${CONCURRENCY:-4}
OURS_CONCURRENCY=${OURS_CONCURRENCY:-$CONCURRENCY}
BATCH_SIZE=${BATCH_SIZE:-100}
MESSAGE_SIZE=${MESSAGE_SIZE:-100}
NOTXN_CHUNK=${NOTXN_CHUNK:-1000}
PERF_OUTSTANDING=${PERF_OUTSTANDING:-match}
PERF_TIMEOUT=${PERF_TIMEOUT:-300}
PERF_JAVA_OPTS=${PERF_JAVA_OPTS:-}
TESTCLIENT_DIR=${TESTCLIENT_DIR:-$HOME/.cache/pulsar-chaos/testclient-4.0.6-on-4.0.7}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
PERF_MAIN=org.apache.pulsar.testclient.PulsarPerfTestTool


# Messages for transaction size $1: MESSAGES_<T>, else MESSAGES, else the size's default.
messages_for() {
  local var="MESSAGES_$1" def
  case "$1" in
    10) def=20000 ;;
    1000) def=500000 ;;
    none) def=1000000 ;;
    *) def=200000 ;;
  esac
  echo "${!var:-${MESSAGES:-$def}}"
}

# A: our producer, through client $4 (own, java, go). Sets RESULT="msg_per_s seconds detail"
# or fails.
run_ours() {
  local t=$1 n=$2 rep=$3 client=${4:-own} txns=true size=$1
  if [ "$t" = none ]; then txns=false; size=$NOTXN_CHUNK; fi
  SEQ=$((SEQ + 1))
  local dir="$WORK_DIR/a-$client-$t-$rep-$SEQ"
  mkdir -p "$dir"
  cat >"$dir/scenario.yaml" <<EOF
name: bench-producer-$t
seed: 1
workload:
  topic: persistent://public/default/bench-a-$t
  unique_topic: true
  messages: $n
  txn_size: $size
  batch_size: $BATCH_SIZE
  concurrency: $OURS_CONCURRENCY
${COMMITS_IN_FLIGHT:+$([ "$txns" = true ] && echo "  commits_in_flight: $COMMITS_IN_FLIGHT")}
  message_size: $MESSAGE_SIZE
  transactions: $txns
  deadline: 4h
$([ "$client" != own ] && echo "  client: $client")
faults: []
EOF
  run_scenario "$dir" "txn_size $t, repeat $rep, client $client" || return 1
  local pj=$PRODUCER_JSON rate secs committed complete lat
  rate=$(json_value "$pj" messages_per_s)
  secs=$(json_value "$pj" elapsed_s)
  committed=$(json_value "$pj" messages_committed)
  complete=$(json_value "$pj" complete)
  lat=$(json_value "$pj" commit_latency_avg_ms)
  if [ "$complete" != true ] || [ "$committed" != "$n" ]; then
    log "A: incomplete ($committed of $n committed)"; return 1
  fi
  RESULT="$rate $secs commit_latency_avg_ms=$lat;$(cpu_window $(ours_window "$pj") | tr ' ' ';')"
}

# B: pulsar-perf produce. Sets RESULT="msg_per_s seconds detail" or fails.
run_perf() {
  local t=$1 n=$2 rep=$3
  SEQ=$((SEQ + 1))
  local log_file="$WORK_DIR/b-$t-$rep-$SEQ.log"
  local topic="persistent://public/default/bench-b-$t-$STAMP-$SEQ"
  local out=$t
  [ "$t" = none ] && out=$NOTXN_CHUNK
  local args=(produce -u "$SERVICE_URL" -au "$ADMIN_URL" -m "$n" -threads "$CONCURRENCY"
              -s "$MESSAGE_SIZE" -bm "$BATCH_SIZE" -b 1 -r 100000000)
  if [ "$t" != none ]; then args+=(-txn -nmt "$t" -tto 30); fi
  case "$PERF_OUTSTANDING" in
    match) args+=(-o "$out") ;;
    default) ;;
    *) args+=(-o "$PERF_OUTSTANDING") ;;
  esac
  args+=("$topic")
  # shellcheck disable=SC2086
  # Bounded: on Pulsar 4.0.7 pulsar-perf can retry forever once the broker's transaction buffer
  # refuses a partition's transactional sends (apache/pulsar#24945); such a run counts as failed.
  if ! run_child timeout -k 10 "$PERF_TIMEOUT" java -Dlog4j2.configurationFile="$BENCH_DIR/testclient/log4j2.xml" \
      -Djava.net.preferIPv4Stack=true \
      -Dio.netty.tryReflectionSetAccessible=true \
      -Dio.netty.recycler.maxCapacityPerThread=4096 \
      --add-opens java.base/sun.net=ALL-UNNAMED --add-opens java.base/java.lang=ALL-UNNAMED \
      --add-opens java.base/java.util.zip=ALL-UNNAMED --add-opens java.base/java.nio=ALL-UNNAMED \
      --add-opens java.base/jdk.internal.misc=ALL-UNNAMED \
      $PERF_JAVA_OPTS -cp "$TESTCLIENT_DIR/*" "$PERF_MAIN" "$WORK_DIR/perf-client.conf" \
      "${args[@]}" >"$log_file" 2>&1; then
    log "B failed (txn_size $t, repeat $rep):"; grep -E "ERROR|Exception" "$log_file" | head -5 >&2
    local stuck
    stuck=$(grep -c "Transaction Buffer take first snapshot failed" "$log_file" || true)
    [ "${stuck:-0}" -gt 0 ] && log "B: $stuck send(s) refused with 'Transaction Buffer take first snapshot failed' (apache/pulsar#24945); stopped after ${PERF_TIMEOUT}s"
    return 1
  fi
  local first last dones agg txn_fail
  first=$(awk '/PerformanceProducer - Created [0-9]+ producers/ { print $1 }' "$log_file" | sort -n | head -1)
  last=$(awk '/PerformanceProducer - -+ DONE \(reached the maximum number/ { print $1 }' "$log_file" | sort -n | tail -1)
  dones=$(grep -c 'DONE (reached the maximum number' "$log_file" || true)
  agg=$(sed -n 's/.*Aggregated throughput stats --- [0-9]* records sent --- \([0-9.]*\) msg\/s.*/\1/p' "$log_file" | tail -1)
  txn_fail=$(sed -n 's/.*--- \([0-9]*\) transaction end failed.*/\1/p' "$log_file" | tail -1)
  if [ -z "$first" ] || [ -z "$last" ] || [ "$dones" != "$CONCURRENCY" ]; then
    log "B: $dones of $CONCURRENCY threads reached $n messages (log: $log_file)"; return 1
  fi
  # -m is split evenly: each thread sends n / threads (integer division).
  local sent=$(( (n / CONCURRENCY) * CONCURRENCY ))
  RESULT=$(awk -v n="$sent" -v a="$first" -v b="$last" -v agg="${agg:-NA}" -v tf="${txn_fail:-0}" \
    -v cpu="$(cpu_window "$first" "$last" | tr ' ' ';')" \
    'BEGIN { s = (b - a) / 1000; printf "%.1f %.3f perf_aggregated_msg_s=%s;txn_end_failed=%s;%s\n", n / s, s, agg, tf, cpu }')
}

# One measurement (not in a subshell: a replaced standalone must reach the trap), with a
# retry when the standalone vanished under it. Sets RESULT.
measure() {
  local fn=$1; shift
  local _
  for _ in 1 2 3; do
    RESULT=""
    if "$fn" "$@" && [ -n "$RESULT" ]; then return 0; fi
    replace_if_gone || return 1
    log "retrying on the new standalone"
  done
  return 1
}

for v in REPEATS CONCURRENCY BATCH_SIZE MESSAGE_SIZE NOTXN_CHUNK; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v must be a positive integer (got '${!v}')" >&2; exit 2; }
done
for c in $CLIENTS; do
  case "$c" in own|java|go) ;; *) echo "CLIENTS: '$c' is not one of own, java, go" >&2; exit 2 ;; esac
done
for t in $TXN_SIZES; do
  [[ $t =~ ^[1-9][0-9]*$ || $t == none ]] || { echo "TXN_SIZES: '$t' is neither a number nor 'none'" >&2; exit 2; }
  [[ $(messages_for "$t") =~ ^[1-9][0-9]*$ ]] || { echo "messages for txn_size $t must be a positive integer" >&2; exit 2; }
done
bench_setup
testclient_jars
: >"$WORK_DIR/perf-client.conf"
STAMP=$(date -u +%Y%m%d-%H%M%S)
SEQ=0
mkdir -p "$RESULTS_DIR"
TSV="$RESULTS_DIR/producer-$STAMP.tsv"
TXT="$RESULTS_DIR/producer-$STAMP.txt"
cluster_up

printf 'txn_size\trepeat\ttool\tmessages\tseconds\tmsg_per_s\tdetail\n' >"$TSV"
{
  echo "# bench/producer.sh $STAMP: clients=($CLIENTS) messages=${MESSAGES:-per size} repeats=$REPEATS concurrency=$CONCURRENCY ours_concurrency=$OURS_CONCURRENCY commits_in_flight=${COMMITS_IN_FLIGHT:-default} batch_size=$BATCH_SIZE message_size=$MESSAGE_SIZE notxn_chunk=$NOTXN_CHUNK perf_outstanding=$PERF_OUTSTANDING"
  echo "# image: ${IMAGE:-default}  service: $SERVICE_URL  $(nproc) cores"
  printf '%-8s %-6s %-12s %10s %9s %12s  %s\n' txn_size repeat tool messages seconds msg/s detail
} | tee "$TXT"

failed=0
# Per size (and client): A's rates and its ratios to the round's B; B's rates per size.
declare -A RATIOS A_RATES B_RATES GOT
# A's tool name: "ours" for the own client (as before), "ours-java", "ours-go".
tool_of() { if [ "$1" = own ]; then echo ours; else echo "ours-$1"; fi; }
for t in $TXN_SIZES; do
  n=$(messages_for "$t")
  for rep in $(seq 1 "$REPEATS"); do
    # A round counts only when all its runs used the same standalone: if it was replaced in
    # between (see measure), the round is run again on the new one.
    for pair_try in 1 2 3; do
      gen=$CLUSTER_GEN
      GOT=()
      b=""; lines=()
      for tool in $(round_order "$rep" $CLIENTS pulsar-perf); do
        if [ "$tool" = pulsar-perf ]; then
          name=pulsar-perf; ok=0; measure run_perf "$t" "$n" "$rep" || ok=1
        else
          name=$(tool_of "$tool"); ok=0; measure run_ours "$t" "$n" "$rep" "$tool" || ok=1
        fi
        if [ "$ok" = 0 ]; then
          read -r rate secs detail <<<"$RESULT"
          warn=""
          awk -v s="$secs" 'BEGIN { exit !(s < 15) }' && warn=" (under 15 s: raise MESSAGES)"
          lines+=("$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s' "$t" "$rep" "$name" "$n" "$secs" "$rate" "$detail")")
          printf '%-8s %-6s %-12s %10s %9.2f %12.1f  %s%s\n' "$t" "$rep" "$name" "$n" "$secs" "$rate" "$detail" "$warn" | tee -a "$TXT"
          if [ "$tool" = pulsar-perf ]; then b=$rate; else GOT[$tool]=$rate; fi
        else
          lines+=("$(printf '%s\t%s\t%s\t%s\tNA\tNA\tfailed' "$t" "$rep" "$name" "$n")")
          printf '%-8s %-6s %-12s %10s %9s %12s  failed\n' "$t" "$rep" "$name" "$n" NA NA | tee -a "$TXT"
        fi
      done
      if [ "$gen" = "$CLUSTER_GEN" ] || [ "$pair_try" = 3 ]; then break; fi
      log "the standalone was replaced during this round: running the round again"
      printf '%-8s %-6s  (the round above is discarded: the standalone was replaced)\n' "$t" "$rep" | tee -a "$TXT"
    done
    printf '%s\n' "${lines[@]}" >>"$TSV"
    [ -n "$b" ] || failed=1
    [ -n "$b" ] && B_RATES[$t]+="$b "
    for c in $CLIENTS; do
      a=${GOT[$c]:-}
      [ -n "$a" ] || failed=1
      [ -n "$a" ] && A_RATES[$t,$c]+="$a "
      if [ -n "$a" ] && [ -n "$b" ]; then
        RATIOS[$t,$c]+="$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", a / b }') "
      fi
    done
  done
done

{
  echo
  echo "# summary: median msg/s of each tool, and the median of the per-round ratios A/B (ours through that client / pulsar-perf)"
  printf '%-8s %-7s %14s %14s %12s  %s\n' txn_size client ours_median perf_median ratio_A/B rounds
  for t in $TXN_SIZES; do
    bm=$(tr ' ' '\n' <<<"${B_RATES[$t]:-}" | grep . | median)
    for c in $CLIENTS; do
      am=$(tr ' ' '\n' <<<"${A_RATES[$t,$c]:-}" | grep . | median)
      rm_=$(tr ' ' '\n' <<<"${RATIOS[$t,$c]:-}" | grep . | median)
      printf '%-8s %-7s %14s %14s %12s  %s\n' "$t" "$c" "$am" "$bm" "$rm_" "${RATIOS[$t,$c]:-none}"
    done
  done
  echo
  tools=""
  for c in $CLIENTS; do tools+="$(tool_of "$c") "; done
  cpu_summary "$TSV" "$TXN_SIZES" "${tools}pulsar-perf"
} | tee -a "$TXT"
log "results: $TSV and $TXT"
[ "$failed" = 0 ] || die "some runs failed (see above)"
