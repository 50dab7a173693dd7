#!/usr/bin/env bash
# Transactions of 10 and of 1,000 records from 1, 8, 32 and 64 producers at once
# (benches/txn_parallel.py, confluent-kafka),
# against the release logd with `--fsync always` and Apache Kafka 4.4 (one KRaft node from the
# pinned jars, benches/kafka_node.sh) with `log.flush.interval.messages=1`, one broker at a time
# in the same run: each side's transactions/s and records/s at each count, and the cores the
# broker and the clients used. Figures in docs/benchmarks.md. Needs java, the jars and the Python clients (one
# `cargo test --workspace` resolves them into target/).
# Usage: benches/txn_parallel.sh [SECONDS] [COUNTS] [SIZES]   (defaults 10, "1 8 32 64" and
# "10 1000")
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/kafka_node.sh
SECONDS_EACH=${1:-10}
COUNTS=${2:-1 8 32 64}
SIZES=${3:-10 1000}
cargo build --quiet --release --bin logd -p logd-server
KAFKA_LIB=target/test-clients/kafka/lib
PYTHON=target/test-clients/python/bin/python3
[ -d "$KAFKA_LIB" ] || { echo "no $KAFKA_LIB: run cargo test --workspace once" >&2; exit 1; }
[ -x "$PYTHON" ] || { echo "no $PYTHON: run cargo test --workspace once" >&2; exit 1; }
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$work"' EXIT
free_port() { python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])"; }
port=$(free_port)
cport=$(free_port)
addr=127.0.0.1:$port
ready() {
  until "$PYTHON" -c "from confluent_kafka.admin import AdminClient; AdminClient({'bootstrap.servers': '$addr'}).list_topics(timeout=1)" 2> /dev/null; do
    kill -0 "$pid" 2> /dev/null || { echo "$1 did not start" >&2; tail -20 "$work/$1.out" >&2; exit 1; }
    sleep 0.2
  done
}
for side in logd kafka; do
  rm -rf "$work/data"
  if [ "$side" = logd ]; then
    target/release/logd serve --listen "$addr" --data-dir "$work/data" --fsync always \
      --http-listen none > "$work/logd.out" 2>&1 &
  else
    kafka_node_properties "$work/kafka.properties" "$addr" "$cport" "$work/data" \
      log.flush.interval.messages=1
    java -cp "$KAFKA_LIB/*" kafka.tools.StorageTool format -t bG9nZC1iZW5jaC1rYWZrYQ \
      -c "$work/kafka.properties" > /dev/null
    java -Xmx1G -Xms1G -XX:+UseG1GC -Djava.awt.headless=true -cp "$KAFKA_LIB/*" kafka.Kafka \
      "$work/kafka.properties" > "$work/kafka.out" 2>&1 &
  fi
  pid=$!
  ready "$side"
  for size in $SIZES; do
    for n in $COUNTS; do
      echo "$side: $("$PYTHON" benches/txn_parallel.py "$addr" "$n" "$SECONDS_EACH" "$size" "$pid")"
    done
  done
  kill "$pid"; wait "$pid" 2> /dev/null || true; pid=
done
