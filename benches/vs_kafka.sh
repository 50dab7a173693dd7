#!/usr/bin/env bash
# logd beside Apache Kafka on the same machine, the same clients and the same records: a
# single-node Kafka 4.4 (KRaft, from the jars the tests pin in tests/support/kafka/pom.xml, run
# as bin/kafka-server-start.sh runs it: 1 GiB heap, G1) and the release logd, one at a time, in
# alternated rounds, under matched durability: logd `--fsync always` against Kafka with
# `log.flush.interval.messages=1` (flush.messages=1), and logd `--fsync interval` against
# Kafka's defaults. Per side, mode and round it reports kcat's produce and consume throughput
# (N records of 100 bytes, acks=all), the broker's CPU seconds per million records over those,
# kafka-producer-perf-test's and kafka-consumer-perf-test's throughput (2 N records, the Java
# client's defaults), peak resident and peak anonymous memory, and start-up time (spawn to a
# metadata answer); per mode, produce latency p50/p99/p99.9 from kafka-producer-perf-test at
# half the slower side's median maximum; and the time to serve again after kill -9 with 1 GiB
# stored. Topics are created with kafka-topics on both sides, outside the timings. Then share
# groups with no handler (benches/share_vs_kafka.py, N/2 records, logd `--fsync interval`
# against Kafka's defaults): one partition drained by 4 share-consumer processes and 8
# partitions by 8, acknowledged records/s and the broker's CPU per acknowledged record.
# Needs kcat, java and the jars, and the Python clients (one `cargo test --workspace`
# resolves them into target/).
# Usage: benches/vs_kafka.sh [N] [ROUNDS] [SECTIONS]   (defaults 1000000, 3 and "produce
# latency recovery share"; the share section takes about 2 minutes a round); figures and
# their reading in docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/kafka_node.sh
N=${1:-1000000}
ROUNDS=${2:-3}
SECTIONS=${3:-produce latency recovery share}
section() { [[ " $SECTIONS " == *" $1 "* ]]; }
cargo build --quiet --release --bin logd -p logd-server
LOGD=target/release/logd
KAFKA_LIB=target/test-clients/kafka/lib
CLIENT_LIB=target/test-clients/java/lib
PYTHON=target/test-clients/python/bin/python3
command -v kcat > /dev/null || { echo "needs kcat on PATH (apt-get install kcat)" >&2; exit 1; }
for lib in "$KAFKA_LIB" "$CLIENT_LIB"; do
  [ -d "$lib" ] || { echo "no $lib: run cargo test --workspace once to resolve the jars" >&2; exit 1; }
done
[ -x "$PYTHON" ] || { echo "no $PYTHON: run cargo test --workspace once to provision it" >&2; exit 1; }
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$work"' EXIT
python3 -c "import sys; sys.stdout.write(('x' * 100 + '\n') * $N)" > "$work/input"
port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
cport=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
addr=127.0.0.1:$port

now() { python3 -c "import time; print(time.time())"; }
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f\n", ($14 + $15) / hz}' "/proc/$1/stat"; }
peak_rss_mib() { awk '/VmHWM/ {printf "%.0f\n", $2 / 1024}' "/proc/$1/status"; }
# The peak of process $1's anonymous resident memory (its heap, not the file pages it maps,
# which are the page cache both sides read through), sampled every 0.1 s into $work/anon.
sample_anon() {
  local most=0 kib
  echo 0 > "$work/anon"
  while kib=$(awk '/RssAnon/ {print $2}' "/proc/$1/status" 2> /dev/null) && [ -n "$kib" ]; do
    [ "$kib" -gt "$most" ] && { most=$kib; echo $((most / 1024)) > "$work/anon"; }
    sleep 0.1
  done
}

# Starts side $1 (logd or kafka) in mode $2 (always or interval) on a fresh or kept ($3 =
# keep) data directory; sets pid, and up to the seconds until the broker answered metadata.
start() {
  local side=$1 mode=$2 keep=${3:-}
  [ -z "$keep" ] && rm -rf "$work/$side"
  mkdir -p "$work/$side"
  local t0; t0=$(now)
  if [ "$side" = logd ]; then
    "$LOGD" serve --listen "$addr" --data-dir "$work/logd/data" --fsync "$mode" \
      --http-listen none > "$work/logd.out" 2>&1 &
    pid=$!
  else
    local flush=()
    [ "$mode" = always ] && flush=(log.flush.interval.messages=1)
    kafka_node_properties "$work/kafka.properties" "$addr" "$cport" "$work/kafka/data" \
      num.partitions=1 "${flush[@]}"
    if [ -z "$keep" ]; then
      java -cp "$KAFKA_LIB/*" kafka.tools.StorageTool format -t bG9nZC1iZW5jaC1rYWZrYQ \
        -c "$work/kafka.properties" > /dev/null
      t0=$(now)
    fi
    java -Xmx1G -Xms1G -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
      -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent \
      -Djava.awt.headless=true -cp "$KAFKA_LIB/*" kafka.Kafka "$work/kafka.properties" \
      > "$work/kafka.out" 2>&1 &
    pid=$!
  fi
  # The port first (polled every 10 ms), then metadata: librdkafka waits a second before it
  # retries a refused connection, which would round start-up times to seconds.
  until (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null; do
    kill -0 "$pid" 2>/dev/null || { echo "$side did not start:" >&2; tail -20 "$work/$side.out" >&2; exit 1; }
    sleep 0.01
  done
  until kcat -L -b "$addr" -m 1 > /dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || { echo "$side did not start:" >&2; tail -20 "$work/$side.out" >&2; exit 1; }
    sleep 0.05
  done
  up=$(python3 -c "print(f'{$(now) - $t0:.2f}')")
  sample_anon "$pid" &
}

stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }

# Creates topic $1 (one partition) with Kafka's own tool on either side, outside the timings,
# so neither side's figures include a topic's creation.
create() {
  java -Xmx256m -cp "$CLIENT_LIB/*" org.apache.kafka.tools.TopicCommand --bootstrap-server "$addr" \
    --create --topic "$1" --partitions 1 --replication-factor 1 > /dev/null
}

rate() { python3 -c "print(f'{$N / ($2 - $1) / 1e6:.2f}')"; }

# kafka-producer-perf-test's records/s at full speed (2 N records of 100 B, acks=all, the
# Java client's defaults), then kafka-consumer-perf-test's records/s reading them back.
perf_max() {
  create perf
  java -Xmx512m -cp "$CLIENT_LIB/*" org.apache.kafka.tools.ProducerPerformance --topic perf \
    --num-records $((2 * N)) --record-size 100 --throughput -1 \
    --producer-props bootstrap.servers="$addr" acks=all 2>/dev/null \
    | grep "records sent," | tail -1 | sed -E 's/.* ([0-9.]+) records\/sec.*/\1/' \
    | python3 -c "print(f'{float(input()) / 1e6:.2f}')"
  # Its CSV line: fetch.nMsg.sec (the reading, without the group's join) is the last field.
  java -Xmx512m -cp "$CLIENT_LIB/*" org.apache.kafka.tools.ConsumerPerformance \
    --bootstrap-server "$addr" --topic perf --messages $((2 * N)) --timeout 60000 2>/dev/null \
    | tail -1 | python3 -c "print(f'{float(input().split(\",\")[-1]) / 1e6:.2f}')"
}

if section produce; then
echo "side mode round kcat_produce_Mrec_s kcat_consume_Mrec_s cpu_s_per_Mrec \
perf_produce_Mrec_s perf_consume_Mrec_s peak_rss_MiB peak_anon_MiB startup_s"
for mode in always interval; do
  for round in $(seq 1 "$ROUNDS"); do
    for side in logd kafka; do
      start "$side" "$mode"
      create bench
      c0=$(cpu_s "$pid")
      t0=$(now)
      kcat -P -t bench -b "$addr" -X acks=all -X linger.ms=5 -X batch.num.messages=10000 \
        -X queue.buffering.max.messages=1000000 < "$work/input"
      t1=$(now)
      got=$(kcat -C -t bench -b "$addr" -o beginning -e -q -X fetch.wait.max.ms=10 \
        -X queued.min.messages=1000000 | wc -l)
      t2=$(now)
      c1=$(cpu_s "$pid")
      [ "$got" = "$N" ] || { echo "$side consumed $got of $N" >&2; exit 1; }
      perf=$(perf_max | tr '\n' ' ')
      echo "$side $mode $round $(rate "$t0" "$t1") $(rate "$t1" "$t2") \
$(python3 -c "print(f'{($c1 - $c0) / ($N / 1e6):.2f}')") $perf$(peak_rss_mib "$pid") \
$(cat "$work/anon") $up"
      stop
    done
  done
done > "$work/rounds"
cat "$work/rounds"
fi

if section latency && [ -s "$work/rounds" ]; then
# Latency at half the slower side's median kafka-producer-perf-test maximum, per mode, with the
# client settings of that maximum (the Java producer's defaults: linger.ms=5, batches of 16 KiB):
# 10 s of records after a 1 s warm-up that the figures leave out.
echo
echo "side mode rate_rec_s p50_ms p99_ms p999_ms   (kafka-producer-perf-test, acks=all, 100 B)"
for mode in always interval; do
  slower=$(awk -v m="$mode" '$2 == m {print $1, $7}' "$work/rounds" | python3 -c "
import sys, statistics
rates = {}
for line in sys.stdin:
    side, r = line.split(); rates.setdefault(side, []).append(float(r))
print(int(min(statistics.median(v) for v in rates.values()) * 1e6 / 2))")
  for side in logd kafka; do
    start "$side" "$mode"
    create latency
    out=$(java -Xmx256m -cp "$CLIENT_LIB/*" org.apache.kafka.tools.ProducerPerformance \
      --topic latency --num-records $((slower * 11)) --warmup-records "$slower" --record-size 100 \
      --throughput "$slower" --producer-props bootstrap.servers="$addr" acks=all \
      2>/dev/null | grep "steady state records sent")
    echo "$side $mode $slower $(echo "$out" | sed -E 's/.* ([0-9.]+) ms 50th, ([0-9.]+) ms 95th, ([0-9.]+) ms 99th, ([0-9.]+) ms 99.9th.*/\1 \3 \4/')"
    stop
  done
done
fi

if section recovery; then
# Time to serve again after kill -9 with 1 GiB stored (interval mode for both: the data is
# what either keeps in its page cache or on disk).
echo
echo "side recovery_after_kill9_s   (1 GiB of 1 KiB records, kill -9, restart until the last is read)"
python3 -c "import sys; sys.stdout.write(('y' * 1023 + '\n') * 1048576)" > "$work/gib"
for side in logd kafka; do
  start "$side" interval
  create big
  kcat -P -t big -b "$addr" -X acks=all -X linger.ms=5 -X queue.buffering.max.messages=1000000 \
    < "$work/gib"
  kill -9 "$pid"; wait "$pid" 2>/dev/null || true
  t0=$(now)
  start "$side" interval keep
  # Serving again: the last record stored before the kill can be read.
  until [ -n "$(kcat -C -t big -b "$addr" -o -1 -c 1 -e -q 2>/dev/null)" ]; do sleep 0.05; done
  echo "$side $(python3 -c "print(f'{$(now) - $t0:.2f}')")"
  stop
done
fi

if section share; then
# Share groups with no handler: records/s acknowledged and broker CPU per acknowledged record.
echo
echo "side layout round acked_rec_s cpu_us_per_acked twice   (share groups, $((N / 2)) records of 100 B, partitions x consumers, no handler)"
for layout in 1x4 8x8; do
  for round in $(seq 1 "$ROUNDS"); do
    for side in logd kafka; do
      start "$side" interval
      out=$("$PYTHON" benches/share_vs_kafka.py "$addr" "$pid" $((N / 2)) "${layout%x*}" \
        "${layout#*x}" "$layout-$round" 2> "$work/share.err") \
        || { echo "$side $layout: $(tail -3 "$work/share.err")" >&2; exit 1; }
      echo "$side $layout $round $out"
      stop
    done
  done
done
fi
