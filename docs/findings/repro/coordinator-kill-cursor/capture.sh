#!/usr/bin/env bash
# Run the coordinator-kill recipe with its cluster kept, and at each kill of the coordinator's
# broker read, straight from the bookie, what the dead coordinator left: its transaction-log
# cursor's ledger (every persisted position, the unconfirmed last one too) and the transaction
# log's ledgers. Then decode.py prints the persisted positions in order, the transactions the
# next coordinator must replay as open although the log holds their COMMITTED entry, and the
# run's verdict beside them.
#
#   docs/findings/repro/coordinator-kill-cursor/capture.sh [run options]
#   e.g. ... capture.sh --pulsar-version 4.0.7 --client java
#
# Needs: a built pulsar-chaos (target/release, or $PULSAR_CHAOS), Docker, python3. The cluster
# is removed at the end (and on error or Ctrl-C); the captured files stay in $OUT.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
bin=${PULSAR_CHAOS:-$repo/target/release/pulsar-chaos}
scenario=${SCENARIO:-$repo/scenarios/findings/committed-then-aborted-after-coordinator-kills.yaml}
out=${OUT:-$(mktemp -d /tmp/coordinator-kill-capture.XXXXXX)}
mkdir -p "$out"
echo "capture: $out"

"$bin" run "$scenario" --keep-cluster --progress plain --out "$out/runs" "$@" > "$out/run.log" 2>&1 &
runner=$!
id=""
cleanup() {
  kill "$runner" 2>/dev/null || true
  [ -n "$id" ] && "$bin" cluster down --run "$id" > /dev/null 2>&1 || true
}
trap cleanup EXIT

until grep -q "^seed: .*run directory:" "$out/run.log" 2>/dev/null; do
  kill -0 "$runner" 2>/dev/null || { cat "$out/run.log"; exit 1; }
  sleep 0.2
done
rundir=$(grep -o "run directory: [^ ]*" "$out/run.log" | head -1 | cut -d' ' -f3)
id=${rundir##*-}
bookie="pc-$id-bookie-1"

# read LEDGER FIRST LAST FILE: entries straight from the (only) bookie, unconfirmed ones too.
read_ledger() {
  docker exec "$bookie" sh -c "
    conf=/tmp/capture-bk.conf
    cp /pulsar/conf/bookkeeper.conf \$conf
    a=\$(grep -h '^advertisedAddress=' \$conf | tail -1 | cut -d= -f2); [ -n \"\$a\" ] || a=\$(hostname -i)
    cd /tmp && timeout 120 java \
      -Dbookkeeper.metadata.client.drivers=org.apache.pulsar.metadata.bookkeeper.PulsarMetadataClientDriver \
      -cp '/pulsar/lib/*' org.apache.bookkeeper.bookie.BookieShell -conf \$conf \
      readledger -ledgerid $1 -firstentryid $2 -lastentryid $3 -msg -b \$a:3181 2>&1" \
    | grep -v ' INFO \| WARN \| ERROR \|^[[:space:]]*at \|^Caused by\|^java\.\|^[[:space:]]*\.\.\. [0-9]* more' > "$4" || true
}

# The faults of the recipe that hit the coordinator's owner, in order.
n=0
for fault in $(grep -o "name: kill-[a-z-]*" "$scenario" | cut -d' ' -f2); do
  until grep -q "\"fault_started\",\"fault\":\"$fault#1\"" "$rundir/history.jsonl" 2>/dev/null; do
    kill -0 "$runner" 2>/dev/null || break 2
    sleep 0.1
  done
  n=$((n + 1))
  # The last view of the log before the kill: its cursor ledger, and the log's ledgers so far.
  read -r cl last ledgers < <(python3 "$here/decode.py" views "$rundir/txnlog.jsonl")
  echo "kill $n ($fault): cursor ledger $cl (last entry $last), log ledgers (ledger:last entry seen) $ledgers"
  read_ledger "$cl" 0 $((last + 2)) "$out/cursor-$n-$cl.txt"
  # The log's last view can be up to 250 ms old: read a little past its last entry.
  for le in ${ledgers//,/ }; do
    read_ledger "${le%%:*}" 0 $((${le##*:} + 200)) "$out/log-${le%%:*}.txt"
  done
done
wait "$runner" || true
cp "$rundir/verdict.json" "$rundir/txnlog.jsonl" "$out/" 2>/dev/null || true
tail -n 20 "$out/run.log" | grep -E "^(PASS|VIOLATION|INCONCLUSIVE|STUCK)" || true
python3 "$here/decode.py" report "$out"
