#!/usr/bin/env bash
# A member joining a busy group of ten (benches/join_latency.py), in release: the time to its
# first record and the longest the other ten stop, with the classic protocol against KIP-848's
# consumer protocol (confluent-kafka, librdkafka's defaults for each), on logd and then on a
# single-node Apache Kafka 4.4 (KRaft, from the jars the tests pin) as the reference. Figures
# in docs/benchmarks.md. Needs the pinned Python clients and Kafka's jars (`cargo test
# --workspace` resolves both into target/).
# Usage: benches/join_latency.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/kafka_node.sh
python=target/test-clients/python/bin/python3
KAFKA_LIB=target/test-clients/kafka/lib
[ -x "$python" ] || { echo "no $python: run the daemon tests once to provision it" >&2; exit 1; }
[ -d "$KAFKA_LIB" ] || { echo "no $KAFKA_LIB: run cargo test --workspace once" >&2; exit 1; }
cargo build --quiet --release --bin logd
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$work"' EXIT
free_port() { python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])"; }
port=$(free_port)
addr=127.0.0.1:$port
wait_port() {
  until (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null; do
    kill -0 "$pid" 2>/dev/null || { echo "$1 did not start" >&2; exit 1; }
    sleep 0.05
  done
}

target/release/logd --data-dir "$work/logd" --listen "$addr" --http-listen none \
  --group-initial-rebalance-delay-ms 0 > "$work/logd.out" 2>&1 &
pid=$!
wait_port logd
"$python" benches/join_latency.py "$addr" | sed 's/^/logd /'
kill "$pid"; wait "$pid" 2> /dev/null || true; pid=

cport=$(free_port)
kafka_node_properties "$work/kafka.properties" "$addr" "$cport" "$work/kafka"
java -cp "$KAFKA_LIB/*" kafka.tools.StorageTool format -t bG9nZC1qb2luLWthZmthMQ \
  -c "$work/kafka.properties" > /dev/null
java -Xmx1G -Xms1G -XX:+UseG1GC -Djava.awt.headless=true -cp "$KAFKA_LIB/*" kafka.Kafka \
  "$work/kafka.properties" > "$work/kafka.out" 2>&1 &
pid=$!
wait_port kafka
sleep 3
"$python" benches/join_latency.py "$addr" | sed 's/^/kafka /'
