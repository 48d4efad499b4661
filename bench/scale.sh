#!/usr/bin/env bash
# bench/scale.sh — one large run: `pulsar-chaos run` of MESSAGES numbers (default 100,000,000)
# in transactions of TXN_SIZE on a standalone Pulsar the harness starts (and removes), no
# faults. Samples the harness's resident memory, threads and open file descriptors every
# INTERVAL seconds, then prints the wall time, the producer's throughput, the RSS at the start,
# peak and end and its slope while producing, and the sizes the run left: history.jsonl (and
# bytes per transaction), report.html, verdict.json, readback.json, the run directory.
#
#   bench/scale.sh                 # 100 M numbers: ~12-20 min on 2 cores, ~25 GB of bookie disk
#   bench/scale.sh 2000000         # a quick check, ~30 s
#
# Knobs: TXN_SIZE=1000, CONCURRENCY=4, BATCH_SIZE=100, MESSAGE_SIZE=100, INTERVAL=5,
# OUT=bench/results/scale-<UTC time> (the run's --out and the samples), BIN=./target/release/
# pulsar-chaos. The run's exit code is this script's.
set -euo pipefail
cd "$(dirname "$0")/.."
MESSAGES=${1:-100000000}
TXN_SIZE=${TXN_SIZE:-1000}
CONCURRENCY=${CONCURRENCY:-4}
BATCH_SIZE=${BATCH_SIZE:-100}
MESSAGE_SIZE=${MESSAGE_SIZE:-100}
INTERVAL=${INTERVAL:-5}
OUT=${OUT:-bench/results/scale-$(date -u +%Y%m%d-%H%M%S)}
bin=${BIN:-./target/release/pulsar-chaos}
[ -x "$bin" ] || cargo build --release --locked >&2
mkdir -p "$OUT"
samples="$OUT/rss.tsv"
cat >"$OUT/scenario.yaml" <<EOF
name: scale-$MESSAGES
cluster: { topology: standalone }
workload:
  topic: persistent://public/default/scale
  unique_topic: true
  messages: $MESSAGES
  txn_size: $TXN_SIZE
  batch_size: $BATCH_SIZE
  concurrency: $CONCURRENCY
  message_size: $MESSAGE_SIZE
  deadline: 6h
faults: []
EOF

start=$(date +%s.%N)
"$bin" run "$OUT/scenario.yaml" --seed 1 --out "$OUT" --progress plain &
pid=$!
trap 'kill -INT $pid 2>/dev/null || true' INT TERM
printf 't_s\trss_kib\thwm_kib\tthreads\tfds\n' >"$samples"
while kill -0 "$pid" 2>/dev/null; do
  if st=$(cat "/proc/$pid/status" 2>/dev/null); then
    printf '%s\t%s\t%s\t%s\t%s\n' "$(awk -v s="$start" -v n="$(date +%s.%N)" 'BEGIN{printf "%.0f", n-s}')" \
      "$(awk '/^VmRSS/{print $2}' <<<"$st")" "$(awk '/^VmHWM/{print $2}' <<<"$st")" \
      "$(awk '/^Threads/{print $2}' <<<"$st")" "$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)" >>"$samples"
  fi
  sleep "$INTERVAL"
done
rc=0
wait "$pid" || rc=$?
wall=$(awk -v s="$start" -v n="$(date +%s.%N)" 'BEGIN{printf "%.1f", n-s}')
run=$(ls -d "$OUT"/scale-*/ 2>/dev/null | head -1)
[ -n "$run" ] || { echo "no run directory under $OUT" >&2; exit "${rc:-1}"; }
num() { sed -n "s/.*\"$1\": *\([0-9.eE+-]*\).*/\1/p" "$2" | head -1; }
size() { if [ -f "$1" ]; then stat -c %s "$1"; else echo 0; fi; }
committed=$(num transactions_committed "$run/producer.json")
echo "exit code $rc, wall $wall s, verdict $(sed -n 's/.*"status": *"\([a-z]*\)".*/\1/p' "$run/verdict.json" | head -1)"
echo "producer: $(num messages_committed "$run/producer.json") numbers in $committed transactions, $(num elapsed_s "$run/producer.json") s, $(num messages_per_s "$run/producer.json") msg/s"
awk -F'\t' 'NR>1 && $2!="" { n++; if ($2>max) max=$2; if ($3>hwm) hwm=$3; if (n==1) first=$2; last=$2; t[n]=$1; r[n]=$2 }
  END { printf "RSS: %d samples, first %d KiB, peak %d KiB (VmHWM %d KiB), last %d KiB\n", n, first, max, hwm, last
    # slope over the middle 80 % of the samples (by least squares), in KiB per minute
    a = int(n/10) + 1; b = n - int(n/10); m = 0; st = sr = stt = str = 0
    for (i = a; i <= b; i++) { m++; st += t[i]; sr += r[i]; stt += t[i]*t[i]; str += t[i]*r[i] }
    d = m*stt - st*st; if (m >= 3 && d != 0) printf "RSS slope over the middle 80%% (%d samples): %+.1f KiB/min\n", m, (m*str - st*sr) / d * 60 }' "$samples"
awk -F'\t' 'NR==2 { t0=$4; f0=$5 } NR>1 { t1=$4; f1=$5 } END { printf "threads %s -> %s; file descriptors %s -> %s\n", t0, t1, f0, f1 }' "$samples"
h=$(size "$run/history.jsonl")
echo "history.jsonl $h bytes ($(awk -v h="$h" -v c="${committed:-0}" 'BEGIN{ if (c > 0) printf "%.0f", h/c; else print "?" }') bytes per committed transaction)"
echo "report.html $(size "$run/report.html") bytes, verdict.json $(size "$run/verdict.json") bytes, readback.json $(size "$run/readback.json") bytes, run directory $(du -sh "$run" | cut -f1)"
echo "samples: $samples"
exit "$rc"
