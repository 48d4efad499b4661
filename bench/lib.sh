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
SAMPLER_PID=""         # the CPU sampler of the standalone of ours (cpu_window)

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
  cpu_sampler_start
}

cluster_down() {
  cpu_sampler_stop
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

# The CPU a container has used, in µs: cgroup v2 (systemd or cgroupfs driver), the v2 half of
# a hybrid setup, or v1's cpuacct; 0 and status 1 when none of them has it (the container is
# gone).
container_cpu_usec() {
  local id=$1 f
  for f in /sys/fs/cgroup/system.slice/docker-$id.scope/cpu.stat /sys/fs/cgroup/docker/$id/cpu.stat \
      /sys/fs/cgroup/unified/docker/$id/cpu.stat; do
    if [ -f "$f" ]; then awk '/^usage_usec/ { print $2 }' "$f"; return; fi
  done
  f=/sys/fs/cgroup/cpuacct/docker/$id/cpuacct.usage
  if [ -f "$f" ]; then echo $(( $(cat "$f") / 1000 )); else echo 0; return 1; fi
}

# What holds a figure, the broker or the client: while a standalone of ours is up, a sampler
# appends to $WORK_DIR/cpu.samples every 0.5 s the time (Unix ms), the CPU its containers have
# used (µs, their cgroups) and the machine's busy and total CPU time (/proc/stat jiffies).
# `cpu_window A B` (Unix ms: a tool's measured interval) prints the cores the standalone used
# between the first sample at or after A and the last at or before B, the cores everything
# else used (the client under test, docker-proxy on the published port, the rest) and the
# idle ones. Not for a cluster of SERVICE_URL (nothing of it is sampled: NA).
cpu_sampler_start() {
  cpu_sampler_stop
  local ids
  ids=$(docker ps -q --no-trunc --filter "label=pulsar-chaos.run=$CLUSTER_RUN_ID" | tr '\n' ' ')
  [ -n "$ids" ] || { log "warning: no container of run $CLUSTER_RUN_ID to sample"; return; }
  echo "# standalone $CLUSTER_RUN_ID" >>"$WORK_DIR/cpu.samples"
  (
    trap - EXIT INT TERM
    while :; do
      u=0
      for id in $ids; do u=$((u + $(container_cpu_usec "$id" || true))); done
      echo "$(date +%s%3N) $u $(awk '/^cpu / { print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9; exit }' /proc/stat)"
      sleep 0.5
    done >>"$WORK_DIR/cpu.samples"
  ) &
  SAMPLER_PID=$!
}

cpu_sampler_stop() {
  if [ -n "$SAMPLER_PID" ]; then
    kill "$SAMPLER_PID" 2>/dev/null || true
    wait "$SAMPLER_PID" 2>/dev/null || true
    SAMPLER_PID=""
  fi
}

cpu_window() {
  local f="$WORK_DIR/cpu.samples"
  [ -s "$f" ] || { echo "broker_cores=NA other_cores=NA idle_cores=NA"; return; }
  awk -v a="$1" -v b="$2" -v ncpu="$(nproc)" '
    /^#/ { s = 0; next }   # a new standalone: its counters start again
    $1 >= a && $1 <= b && !s { s = 1; t0 = $1; u0 = $2; b0 = $3; a0 = $4 }
    s && $1 <= b { t1 = $1; u1 = $2; b1 = $3; a1 = $4 }
    END {
      if (!s || t1 - t0 < 2000 || u1 < u0 || a1 <= a0) {
        print "broker_cores=NA other_cores=NA idle_cores=NA"; exit
      }
      broker = (u1 - u0) / 1000 / (t1 - t0)
      busy = ncpu * (b1 - b0) / (a1 - a0)
      printf "broker_cores=%.2f other_cores=%.2f idle_cores=%.2f\n", broker, busy - broker, ncpu - busy
    }' "$f"
}

# Per txn size ($2, a list) and tool ($3, a list) of a results TSV ($1: txn_size, repeat, tool,
# messages, seconds, msg_per_s, detail), the medians over the runs of cpu_window's fields (in
# the detail, as key=value) and of the CPU per message they make: the standalone's (the
# broker's, its bookie's and ZooKeeper's) and everything else's, in µs.
cpu_summary() {
  local tsv=$1 sizes=$2 tools=$3 t tool k vals
  echo "# CPU in each tool's measured interval, medians of its runs: cores of the standalone, of everything else (the client under test first), idle; CPU µs per message of the two"
  printf '%-8s %-16s %12s %12s %10s %14s %14s\n' txn_size tool broker_cores other_cores idle broker_us/msg other_us/msg
  for t in $sizes; do
    for tool in $tools; do
      vals=()
      for k in broker_cores other_cores idle_cores broker_us other_us; do
        vals+=("$(awk -F'\t' -v t="$t" -v tool="$tool" -v k="$k" '
          $1 == t && $3 == tool && $6 != "NA" {
            n = split($7, f, /[; ]/); delete v
            for (i = 1; i <= n; i++) if (split(f[i], kv, "=") == 2) v[kv[1]] = kv[2]
            if (!("broker_cores" in v) || v["broker_cores"] == "NA") next
            if (k == "broker_us") printf "%.1f\n", v["broker_cores"] * 1e6 / $6
            else if (k == "other_us") printf "%.1f\n", v["other_cores"] * 1e6 / $6
            else print v[k]
          }' "$tsv" | median)")
      done
      printf '%-8s %-16s %12s %12s %10s %14s %14s\n' "$t" "$tool" "${vals[@]}"
    done
  done
}

# The producing (or transforming) phase of a run of ours as "A B" in Unix ms: it ends at the
# history'"'"'s producer_finished and lasted producer.json'"'"'s elapsed_s. $1: the producer.json.
ours_window() {
  local pj=$1 h start end el
  h="$(dirname "$pj")/history.jsonl"
  start=$(head -1 "$h" | sed -n 's/.*"wall_ms":\([0-9]*\).*/\1/p')
  end=$(grep -m1 '"event":"producer_finished"' "$h" | sed -n 's/^{"t_ms":\([0-9]*\).*/\1/p')
  el=$(json_value "$pj" elapsed_s)
  [ -n "$start" ] && [ -n "$end" ] && [ -n "$el" ] || { echo "0 0"; return; }
  awk -v s="$start" -v e="$end" -v el="$el" 'BEGIN { printf "%.0f %.0f\n", s + e - el * 1000, s + e }'
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
