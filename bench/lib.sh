# Shared by bench/producer.sh and bench/verify.sh: a standalone Pulsar started by the harness
# for the length of one script, removed on exit, error, Ctrl-C and SIGTERM. Source it, then
# call `cluster_up` and read SERVICE_URL / ADMIN_URL.
#
# Knobs (environment): PULSAR_CHAOS (the binary), BINARY_PORT / HTTP_PORT (host ports of the
# standalone; non-default so they do not clash with the integration tests' 6650/8080), IMAGE
# (a Pulsar image; default: what `cluster up` picks), SERVICE_URL + ADMIN_URL (use a running
# cluster instead: nothing is started or removed).

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT_DIR=$(dirname "$BENCH_DIR")
PULSAR_CHAOS=${PULSAR_CHAOS:-$ROOT_DIR/target/release/pulsar-chaos}
BINARY_PORT=${BINARY_PORT:-16650}
HTTP_PORT=${HTTP_PORT:-18080}
IMAGE=${IMAGE:-}

CLUSTER_RUN_ID=""      # set while a standalone of ours is up
CLUSTER_EXTERNAL=0
CLUSTER_GEN=0          # how many standalones this script has started
CHILD_PID=""           # the measurement running now (killed on a signal)
WORK_DIR=""            # scratch directory, removed at exit unless KEEP_WORK=1

log() { printf '[%s %s] %s\n' "$(basename "$0" .sh)" "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

need_binary() {
  if [ ! -x "$PULSAR_CHAOS" ]; then
    log "$PULSAR_CHAOS is missing: building it"
    (cd "$ROOT_DIR" && cargo build --release --locked) >&2
  fi
}

# A field of the one-line JSON `cluster up --json` prints (the first occurrence).
json_field() { grep -o "\"$1\":\"[^\"]*\"" <<<"$2" | head -1 | sed 's/.*":"\(.*\)"/\1/'; }

cluster_up() {
  if [ -n "${SERVICE_URL:-}" ] || [ -n "${ADMIN_URL:-}" ]; then
    [ -n "${SERVICE_URL:-}" ] && [ -n "${ADMIN_URL:-}" ] || die "set both SERVICE_URL and ADMIN_URL"
    CLUSTER_EXTERNAL=1
    log "using the running cluster at $SERVICE_URL ($ADMIN_URL)"
    return
  fi
  local args=(cluster up --topology standalone --json --binary-port "$BINARY_PORT" --http-port "$HTTP_PORT")
  [ -n "$IMAGE" ] && args+=(--image "$IMAGE")
  log "starting a standalone on ports $BINARY_PORT/$HTTP_PORT"
  local out
  "$PULSAR_CHAOS" "${args[@]}" >"$WORK_DIR/cluster-up.json" 2>"$WORK_DIR/cluster-up.err" &
  CHILD_PID=$!
  if ! wait "$CHILD_PID"; then
    CHILD_PID=""
    cat "$WORK_DIR/cluster-up.err" >&2
    die "cluster up failed"
  fi
  CHILD_PID=""
  out=$(cat "$WORK_DIR/cluster-up.json")
  CLUSTER_GEN=$((CLUSTER_GEN + 1))
  CLUSTER_RUN_ID=$(json_field run_id "$out")
  SERVICE_URL=$(json_field service_url "$out")
  ADMIN_URL=$(json_field admin_url "$out")
  [ -n "$CLUSTER_RUN_ID" ] && [ -n "$SERVICE_URL" ] && [ -n "$ADMIN_URL" ] || die "cannot read cluster up's output: $out"
  log "standalone up: run $CLUSTER_RUN_ID, $SERVICE_URL, $ADMIN_URL ($(json_field image "$out"))"
}

cluster_down() {
  if [ -n "$CLUSTER_RUN_ID" ]; then
    log "removing the standalone (run $CLUSTER_RUN_ID)"
    "$PULSAR_CHAOS" cluster down --run "$CLUSTER_RUN_ID" >&2 || log "warning: cluster down --run $CLUSTER_RUN_ID failed"
    CLUSTER_RUN_ID=""
  fi
}

# True when the cluster answers its admin API. (The integration tests' `pulsar-chaos clean`
# removes every labelled container, ours included.)
cluster_alive() {
  curl -sf -m 10 "$ADMIN_URL/admin/v2/clusters" >/dev/null 2>&1
}

# After a failed measurement: start a new standalone if ours is gone. Returns 0 when a new one
# was started (the caller retries), 1 when the cluster is still there (a real failure).
replace_if_gone() {
  [ "$CLUSTER_EXTERNAL" = 1 ] && return 1
  if cluster_alive; then return 1; fi
  log "the standalone (run $CLUSTER_RUN_ID) is gone or not answering: starting another"
  cluster_down
  SERVICE_URL="" ADMIN_URL=""
  cluster_up
  return 0
}

# B's jars: pulsar-testclient 4.0.6 (4.0.7 of it is not on the mirror) with 4.0.7 libraries.
testclient_jars() {
  TESTCLIENT_DIR=${TESTCLIENT_DIR:-$HOME/.cache/pulsar-chaos/testclient-4.0.6-on-4.0.7}
  if ls "$TESTCLIENT_DIR"/pulsar-testclient-*.jar >/dev/null 2>&1; then return; fi
  command -v java >/dev/null && command -v mvn >/dev/null \
    || die "java and mvn are needed for pulsar-perf (apt-get install maven default-jre-headless)"
  log "copying pulsar-testclient's jars into $TESTCLIENT_DIR (once)"
  mvn -q -B -f "$BENCH_DIR/testclient/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$TESTCLIENT_DIR" >&2
}

# `pulsar-chaos run` of $1/scenario.yaml on the cluster; on success PRODUCER_JSON names the
# run's producer.json. $2 says which run it was in a failure message.
run_scenario() {
  local dir=$1 what=$2
  if ! run_child "$PULSAR_CHAOS" run "$dir/scenario.yaml" --service-url "$SERVICE_URL" \
      --admin-url "$ADMIN_URL" --progress none --out "$dir/runs" >"$dir/stdout" 2>"$dir/stderr"; then
    log "A failed ($what):"; tail -5 "$dir/stderr" >&2; cat "$dir/stdout" >&2
    return 1
  fi
  PRODUCER_JSON=$(ls "$dir"/runs/*/producer.json 2>/dev/null | head -1)
  [ -n "$PRODUCER_JSON" ] || { log "A: no producer.json in $dir/runs"; return 1; }
}

# A number or boolean of a pretty-printed JSON file ($1) by its key ($2).
json_value() { sed -n "s/.*\"$2\": *\([0-9a-z.eE+-]*\).*/\1/p" "$1"; }

# Run a command in the background and wait for it, so a signal reaches the trap at once.
run_child() {
  "$@" &
  CHILD_PID=$!
  local rc=0
  wait "$CHILD_PID" || rc=$?
  CHILD_PID=""
  return "$rc"
}

on_exit() {
  local rc=$?
  trap - EXIT INT TERM
  # A signal can arrive while a child's output is redirected to a file: back to the terminal.
  exec 1>&3 2>&4
  if [ -n "$CHILD_PID" ]; then
    kill -TERM "$CHILD_PID" 2>/dev/null || true
    wait "$CHILD_PID" 2>/dev/null || true
  fi
  cluster_down
  if [ -n "$WORK_DIR" ] && [ -d "$WORK_DIR" ]; then
    if [ "${KEEP_WORK:-0}" = 1 ] || [ "$rc" != 0 ]; then
      log "scratch files kept in $WORK_DIR"
    else
      rm -rf "$WORK_DIR"
    fi
  fi
  exit "$rc"
}

on_signal() {
  exec 1>&3 2>&4
  log "interrupted"
  exit 130
}

bench_setup() {
  need_binary
  WORK_DIR=$(mktemp -d "${TMPDIR:-/tmp}/pulsar-chaos-bench.XXXXXX")
  exec 3>&1 4>&2   # the script's own stdout and stderr, for the traps
  trap on_exit EXIT
  trap on_signal INT TERM
}

# The tools of round $1 in the order they run: as given ($2...) in odd rounds, reversed in even
# ones. A standalone speeds up over its first minutes (JIT, caches: a kept one went from 4,285
# to 5,895 inputs/s over ten transform runs), so a fixed order gave the later tool of every pair
# the faster broker; reversed every other round, the drift falls on each tool alike.
round_order() {
  local rep=$1; shift
  if [ $((rep % 2)) = 1 ]; then echo "$@"; else printf '%s\n' "$@" | tac | tr '\n' ' '; fi
}

# The median of the numbers on stdin (one a line); "NA" when there are none.
median() {
  sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "NA"; exit }
    if (NR % 2) printf "%.6g\n", v[(NR + 1) / 2]; else printf "%.6g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
