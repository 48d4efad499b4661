#!/usr/bin/env bash
# bench/verify.sh — the cost of the checker: `pulsar-chaos verify` (read every message back,
# parse its number, tally ranges, judge [0, N)) against `pulsar-chaos verify --consume-only`
# (the same client and the same read, counting messages and checking nothing), both reading
# the same N-message topic on one standalone that the script starts (non-default ports) and
# removes at the end, on error and on Ctrl-C.
#
# 1. Produce MESSAGES numbers once with pulsar-chaos's own producer (`pulsar-chaos run`, no
#    faults, transactions of TXN_SIZE for speed); the run's own read-back must pass.
# 2. Alternate REPEATS times: verify, then consume-only, each under `/usr/bin/time -v`
#    (wall time, maximum resident set size; the `time` package is installed when missing).
# 3. Print msg/s (MESSAGES / wall time) and peak RSS per read, and the medians and the median
#    of the per-pair ratios verify/consume-only (time, rate and RSS).
# Results: bench/results/verify-<UTC time>.tsv (one line per read) and .txt (the table).
#
#   bench/verify.sh                                  # the full run: 10,000,000 numbers
#   MESSAGES=50000 REPEATS=1 bench/verify.sh         # a smoke test, ~1.5 minutes
#
# Knobs (environment, or --messages N, --repeats N):
#   MESSAGES=10000000  numbers produced and read back each time
#   REPEATS=3          verify/consume-only pairs
#   TXN_SIZE=1000 CONCURRENCY=4 BATCH_SIZE=100 MESSAGE_SIZE=0   the producing run's workload
#                      (MESSAGE_SIZE 0: the payload is the number in decimal, 1-7 bytes)
#   IDLE_TIMEOUT=60s   verify's --idle-timeout
#   RESULTS_DIR, KEEP_WORK=1, and those of bench/lib.sh (BINARY_PORT=16650 HTTP_PORT=18080
#   IMAGE, SERVICE_URL+ADMIN_URL).
#
# The topic stays whole between reads: both modes read each partition with an exclusive,
# NON-durable subscription from the earliest message (src/txn/reader.rs), so a read acknowledges
# nothing and leaves no cursor; the harness's standalone keeps data without subscribers
# (retention -1, brokerDeleteInactiveTopicsEnabled=false), and this script adds a durable
# subscription at the earliest position as well, so even another image's retention settings
# could not trim it. Each read must see all N (verify: PASS; consume-only: N messages read),
# or the script fails.
#
# Limits: the wall time includes process start, the topic lookup and connecting (tens of
# ms, the same in both modes); the broker serves every read from its caches and the OS page
# cache (the producing run's read-back warmed them), on the same 2 cores as the reader, so the
# ratio says what the checker adds to a read, not how fast a cold read is.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

while [ $# -gt 0 ]; do
  case "$1" in
    --messages) MESSAGES=$2; shift 2 ;;
    --repeats) REPEATS=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

MESSAGES=${MESSAGES:-10000000}
REPEATS=${REPEATS:-3}
TXN_SIZE=${TXN_SIZE:-1000}
CONCURRENCY=${CONCURRENCY:-4}
BATCH_SIZE=${BATCH_SIZE:-100}
MESSAGE_SIZE=${MESSAGE_SIZE:-0}
IDLE_TIMEOUT=${IDLE_TIMEOUT:-60s}
RESULTS_DIR=${RESULTS_DIR:-$BENCH_DIR/results}
for v in MESSAGES REPEATS TXN_SIZE CONCURRENCY BATCH_SIZE; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v must be a positive integer (got '${!v}')" >&2; exit 2; }
done
[[ $MESSAGE_SIZE =~ ^[0-9]+$ ]] || { echo "MESSAGE_SIZE must be a number" >&2; exit 2; }

if [ ! -x /usr/bin/time ]; then
  log "installing GNU time (/usr/bin/time)"
  apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q time >&2
fi

# Produce the numbers; sets TOPIC.
produce() {
  SEQ=$((SEQ + 1))
  local dir="$WORK_DIR/produce-$SEQ"
  mkdir -p "$dir"
  cat >"$dir/scenario.yaml" <<EOF
name: bench-verify
seed: 1
workload:
  topic: persistent://public/default/bench-verify
  unique_topic: true
  messages: $MESSAGES
  txn_size: $TXN_SIZE
  batch_size: $BATCH_SIZE
  concurrency: $CONCURRENCY
  message_size: $MESSAGE_SIZE
  deadline: 6h
faults: []
EOF
  log "producing $MESSAGES numbers (transactions of $TXN_SIZE, concurrency $CONCURRENCY)"
  if ! run_child "$PULSAR_CHAOS" run "$dir/scenario.yaml" --service-url "$SERVICE_URL" \
      --admin-url "$ADMIN_URL" --progress plain --out "$dir/runs" >"$dir/stdout" \
      2> >(tee "$dir/stderr" | sed -u 's/^/  run: /' >&2); then
    log "the producing run failed:"; tail -5 "$dir/stderr" >&2; cat "$dir/stdout" >&2
    return 1
  fi
  local rj
  rj=$(ls "$dir"/runs/*/run.json | head -1)
  TOPIC=$(sed -n 's/.*"topic": *"\([^"]*\)".*/\1/p' "$rj" | head -1)
  [ -n "$TOPIC" ] || { log "no topic in $rj"; return 1; }
  grep -h '"messages_per_s"\|"elapsed_s"' "$dir"/runs/*/producer.json | tr -d ' ,' | paste -sd' ' \
    | sed 's/^/produced: /' >&2
  # A durable subscription at the earliest message: nothing can be trimmed while it exists.
  local path=${TOPIC#persistent://}
  curl -sf -m 30 -X PUT -H 'Content-Type: application/json' \
    -d '{"ledgerId":-1,"entryId":-1,"partitionIndex":-1}' \
    "$ADMIN_URL/admin/v2/persistent/$path/subscription/bench-verify-retain" >/dev/null \
    || { log "cannot create the retaining subscription on $TOPIC"; return 1; }
  log "topic $TOPIC holds the numbers [0, $MESSAGES)"
}

# One read under /usr/bin/time -v; $1 = verify | consume-only. Sets RESULT="seconds rss_kb".
read_once() {
  local mode=$1 extra=()
  [ "$mode" = consume-only ] && extra=(--consume-only)
  SEQ=$((SEQ + 1))
  local out="$WORK_DIR/read-$SEQ-$mode"
  if ! run_child /usr/bin/time -v -o "$out.time" "$PULSAR_CHAOS" verify --service-url "$SERVICE_URL" \
      --admin-url "$ADMIN_URL" --topic "$TOPIC" --count "$MESSAGES" --idle-timeout "$IDLE_TIMEOUT" \
      "${extra[@]}" >"$out.stdout" 2>"$out.stderr"; then
    log "$mode failed:"; cat "$out.stdout" "$out.stderr" >&2
    return 1
  fi
  if [ "$mode" = verify ]; then
    grep -q "^PASS: all $MESSAGES numbers" "$out.stdout" \
      || { log "verify did not see exactly [0, $MESSAGES):"; cat "$out.stdout" >&2; return 1; }
  else
    grep -q "^read $MESSAGES messages" "$out.stdout" \
      || { log "consume-only did not read $MESSAGES messages:"; cat "$out.stdout" >&2; return 1; }
  fi
  local wall rss
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): *//p' "$out.time" \
    | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.3f", s }')
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): *//p' "$out.time")
  [ -n "$wall" ] && [ -n "$rss" ] || { log "cannot read $out.time"; return 1; }
  RESULT="$wall $rss"
}

bench_setup
STAMP=$(date -u +%Y%m%d-%H%M%S)
SEQ=0
mkdir -p "$RESULTS_DIR"
TSV="$RESULTS_DIR/verify-$STAMP.tsv"
TXT="$RESULTS_DIR/verify-$STAMP.txt"
cluster_up

# Produce, then read; when the standalone vanishes under us (the integration tests' `clean`),
# start another and do it all again (its data went with it).
for _ in 1 2 3; do
  ok=0
  printf 'repeat\tmode\tmessages\tseconds\tmsg_per_s\tmax_rss_kb\n' >"$TSV"
  V_RATES="" C_RATES="" V_RSS="" C_RSS="" R_TIME="" R_RATE="" R_RSS=""
  if ! produce; then
    replace_if_gone && continue
    die "producing failed"
  fi
  ok=1
  {
    echo "# bench/verify.sh $STAMP: messages=$MESSAGES repeats=$REPEATS topic=$TOPIC ($(nproc) cores)"
    printf '%-6s %-13s %10s %9s %12s %12s\n' repeat mode messages seconds msg/s max_rss_kb
  } | tee "$TXT"
  for rep in $(seq 1 "$REPEATS"); do
    for mode in verify consume-only; do
      if ! read_once "$mode"; then ok=0; break 2; fi
      read -r secs rss <<<"$RESULT"
      rate=$(awk -v n="$MESSAGES" -v s="$secs" 'BEGIN { printf "%.1f", n / (s > 0 ? s : 1e-9) }')
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$mode" "$MESSAGES" "$secs" "$rate" "$rss" >>"$TSV"
      printf '%-6s %-13s %10s %9.3f %12.1f %12s\n' "$rep" "$mode" "$MESSAGES" "$secs" "$rate" "$rss" | tee -a "$TXT"
      if [ "$mode" = verify ]; then
        V_RATES+="$rate "; V_RSS+="$rss "; vs=$secs; vr=$rss; vq=$rate
      else
        C_RATES+="$rate "; C_RSS+="$rss "
        R_TIME+="$(awk -v a="$vs" -v b="$secs" 'BEGIN { printf "%.4f", a / b }') "
        R_RATE+="$(awk -v a="$vq" -v b="$rate" 'BEGIN { printf "%.4f", a / b }') "
        R_RSS+="$(awk -v a="$vr" -v b="$rss" 'BEGIN { printf "%.4f", a / b }') "
      fi
    done
  done
  if [ "$ok" = 1 ]; then break; fi
  replace_if_gone && continue
  die "a read failed"
done
[ "$ok" = 1 ] || die "gave up after the standalone vanished three times"

med() { tr ' ' '\n' <<<"$1" | grep . | median; }
{
  echo
  echo "# summary (medians; ratios are per verify/consume-only pair, then the median)"
  printf '%-28s %14s %14s %10s\n' "" verify consume-only ratio
  printf '%-28s %14s %14s %10s\n' "msg/s" "$(med "$V_RATES")" "$(med "$C_RATES")" "$(med "$R_RATE")"
  printf '%-28s %14s %14s %10s\n' "wall time ratio" "" "" "$(med "$R_TIME")"
  printf '%-28s %14s %14s %10s\n' "max RSS (KiB)" "$(med "$V_RSS")" "$(med "$C_RSS")" "$(med "$R_RSS")"
  echo "# pairs (time ratio verify/consume-only): $R_TIME"
} | tee -a "$TXT"
log "results: $TSV and $TXT"
