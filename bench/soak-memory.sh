#!/usr/bin/env bash
# bench/soak-memory.sh — memory and disk of a soak: runs `pulsar-chaos soak` and samples the
# harness process's resident memory (VmRSS, and VmHWM at the end) every INTERVAL seconds,
# its threads and open file descriptors, then prints the peak, the RSS slope per hour over the
# second half of the soak (least squares), and the size of the soak directory.
#
#   bench/soak-memory.sh scenarios/mixed.yaml 20m [extra soak arguments...]
#
# Knobs: INTERVAL=5 (seconds between samples), OUT=bench/results/soak-<UTC time> (the soak's
# --out and the samples file), BIN=./target/release/pulsar-chaos (point it at a copy when you
# rebuild during a long soak). The soak's exit code is this script's.
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=${1:?usage: bench/soak-memory.sh SCENARIO DURATION [soak args...]}
duration=${2:?usage: bench/soak-memory.sh SCENARIO DURATION [soak args...]}
shift 2
INTERVAL=${INTERVAL:-5}
OUT=${OUT:-bench/results/soak-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
samples="$OUT/rss.tsv"
bin=${BIN:-./target/release/pulsar-chaos}
[ -x "$bin" ] || cargo build --release --locked >&2

start=$(date +%s)
"$bin" soak "$scenario" --duration "$duration" --out "$OUT" --progress plain "$@" &
pid=$!
trap 'kill -INT $pid 2>/dev/null || true' INT TERM
printf 't_s\trss_kib\thwm_kib\tthreads\tsoak_dir_kib\tfds\n' >"$samples"
while kill -0 "$pid" 2>/dev/null; do
  if st=$(cat "/proc/$pid/status" 2>/dev/null); then
    rss=$(awk '/^VmRSS/{print $2}' <<<"$st")
    hwm=$(awk '/^VmHWM/{print $2}' <<<"$st")
    thr=$(awk '/^Threads/{print $2}' <<<"$st")
    # du fails when a pruned directory vanishes under it: keep sampling.
    dir=$(du -sk "$OUT" 2>/dev/null | cut -f1) || dir=""
    fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l) || fds=""
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(( $(date +%s) - start ))" "$rss" "$hwm" "$thr" "$dir" "$fds" >>"$samples"
  fi
  sleep "$INTERVAL"
done
rc=0
wait "$pid" || rc=$?
awk -F'\t' 'NR>1 && $2!="" { n++; if ($2>max) max=$2; if ($3>hwm) hwm=$3; if (n==1) first=$2; last=$2; if ($5>dmax) dmax=$5 }
  END { printf "samples %d; RSS first %d KiB, last %d KiB, peak %d KiB (VmHWM %d KiB); soak directory peak %d KiB\n", n, first, last, max, hwm, dmax }' "$samples"
# The slope over the second half (t >= last t / 2), by least squares, in KiB and in % of the
# mean RSS per hour; threads and file descriptors at the first and the last sample.
awk -F'\t' 'NR>1 && $2!="" { t[n]=$1; r[n]=$2; th[n]=$4; fd[n]=$6; n++ }
  END { if (n < 3) exit; half = t[n-1] / 2; m = 0; st = sr = stt = str = 0
    for (i = 0; i < n; i++) if (t[i] >= half) { m++; st += t[i]; sr += r[i]; stt += t[i]*t[i]; str += t[i]*r[i] }
    d = m*stt - st*st; if (m < 3 || d == 0) exit
    slope = (m*str - st*sr) / d * 3600; mean = sr / m
    printf "RSS slope over the second half (%d samples from t=%ds): %+.1f KiB/h = %+.2f %% of the mean RSS (%.0f KiB) per hour\n", m, half, slope, 100*slope/mean, mean
    printf "threads %s -> %s; file descriptors %s -> %s\n", th[0], th[n-1], fd[0], fd[n-1] }' "$samples"
echo "soak directory at the end: $(du -sh "$OUT" | cut -f1) ($OUT); samples: $samples"
exit "$rc"
