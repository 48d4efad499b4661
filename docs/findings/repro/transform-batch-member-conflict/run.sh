#!/bin/sh
# Build against the official Java client of the given version and run against a Pulsar with
# transactions on (e.g. one from `target/release/pulsar-chaos cluster up --pulsar-version V`).
#   ./run.sh [CLIENT_VERSION (4.2.4)] [SERVICE_URL (pulsar://127.0.0.1:6650)]
# Exit 0: Pulsar refused the second acknowledgement (expected); 1: it accepted it (the bug).
set -e
cd "$(dirname "$0")"
v="${1:-4.2.4}"
mvn -q -B -o -DskipTests -Dpulsar.version="$v" package
exec java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
  -jar "target/batch-member-conflict-$v.jar" "${2:-pulsar://127.0.0.1:6650}"
