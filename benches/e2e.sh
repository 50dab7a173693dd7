#!/usr/bin/env bash
# End-to-end benchmark: N records of 100 bytes produced into a real logd by kcat (librdkafka)
# and consumed back, under fsync interval and always, with logd's peak RSS; kcat's produce
# ceiling, and its consume ceiling, measured in the same run against librdkafka's mock cluster
# (benches/mock_cluster.py, needs confluent-kafka); the same
# consume through logd's own client (is the server the bottleneck?); and the same workload
# through the embedded engine; kcat's produce as an idempotent producer against the plain one;
# kcat over SASL_SSL (SCRAM-SHA-512) against PLAINTEXT on one daemon (needs openssl).
# Needs kcat and python3 with confluent-kafka (after one `cargo test --workspace`,
# PATH=$PWD/target/test-clients/python/bin:$PATH provides it).
# Usage: benches/e2e.sh [N]   (default 1000000); LOGD=path/to/logd measures another build of
# the daemon (an older commit's, to compare) with the same clients.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
cargo build --quiet --release --bin logd -p logd-server
LOGD=${LOGD:-target/release/logd}
cargo build --quiet --release -p logd --example throughput
work=$(mktemp -d)
trap 'rm -rf "$work"; [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; [ -n "${mock:-}" ] && kill "$mock" 2>/dev/null || true' EXIT
python3 -c "import sys; sys.stdout.write(('x' * 100 + '\n') * $N)" > "$work/input"
producer_opts=(-X linger.ms=5 -X batch.num.messages=10000 -X queue.buffering.max.messages=1000000)

seconds() { python3 -c "import time; print(time.time())"; }
# CPU time of process $1 in ns: utime + stime from /proc/PID/stat, which (unlike the threads'
# schedstat) keeps the time of threads that have exited, at the clock tick's resolution.
cpu_ns() { awk -v hz="$(getconf CLK_TCK)" '{printf "%d\n", ($14 + $15) * 1e9 / hz}' "/proc/$1/stat"; }
rate() { python3 -c "print(f'{$N / ($2 - $1):,.0f} records/s  {$N * 100 / ($2 - $1) / 1e6:,.1f} MB/s')"; }

echo "== kcat's produce ceiling (librdkafka mock cluster, same kcat, same input)"
t0=$(seconds)
kcat -P -t bench -b unused:1 -X test.mock.num.brokers=1 "${producer_opts[@]}" < "$work/input" 2>/dev/null
t1=$(seconds)
echo "produce ceiling: $(rate "$t0" "$t1")"

# Consume ceiling: kcat against the mock cluster serving from memory, at the mock's largest
# layout (4 partitions, 45,000 records each); logd is measured below on the same layout with
# the same consumer settings. A large local queue (queued.min.messages) keeps kcat fetching
# instead of pausing whenever its queue holds 100,000 records.
SAME=180000
consumer_opts=(-X fetch.wait.max.ms=10 -X queued.min.messages=1000000)
python3 benches/mock_cluster.py "$SAME" 600 > "$work/mock" &
mock=$!
while ! [ -s "$work/mock" ]; do sleep 0.2; done
mock_addr=$(cat "$work/mock")
echo "== kcat's consume ceiling (mock cluster, $SAME records over 4 partitions, best of 3)"
best_rate() { # best records/s of three consumes from $1
  local best=0
  for _ in 1 2 3; do
    t0=$(seconds)
    n=$(kcat -C -t "$2" -b "$1" -o beginning -e -q "${consumer_opts[@]}" | wc -l)
    t1=$(seconds)
    best=$(python3 -c "print(max($best, $n / ($t1 - $t0)))")
  done
  echo "$best"
}
ceiling=$(best_rate "$mock_addr" bench)
kill "$mock"; wait "$mock" 2>/dev/null || true
python3 -c "print(f'consume ceiling: {$ceiling:,.0f} records/s')"

for fsync in interval always; do
  echo "== logd, fsync $fsync"
  rm -rf "$work/data"
  "$LOGD" serve --listen 127.0.0.1:0 --data-dir "$work/data" --fsync "$fsync" > "$work/addr" 2>/dev/null &
  pid=$!
  while ! grep -q listening "$work/addr" 2>/dev/null; do sleep 0.05; done
  addr=$(awk '/listening/ {print $4}' "$work/addr")
  # The same produce as an idempotent producer, into its own topic, right before: the
  # producer-state checks cost what they cost in this same run.
  t0=$(seconds)
  kcat -P -t bench-idem -b "$addr" -X acks=all -X enable.idempotence=true "${producer_opts[@]}" < "$work/input"
  t1=$(seconds)
  idem=$(python3 -c "print($N / ($t1 - $t0))")
  echo "produce (kcat, acks=all, enable.idempotence=true): $(rate "$t0" "$t1")"
  t0=$(seconds)
  kcat -P -t bench -b "$addr" -X acks=all "${producer_opts[@]}" < "$work/input"
  t1=$(seconds)
  python3 -c "print(f'idempotent / plain produce: {$idem / ($N / ($t1 - $t0)):.3f}')"
  # A short fetch wait, so detecting the end of the log costs 10 ms rather than 500.
  kcat -C -t bench -b "$addr" -o beginning -e -q -X fetch.wait.max.ms=10 > /dev/null
  t2=$(seconds)
  target/release/logd consume -t bench --bootstrap "$addr" > /dev/null
  t3=$(seconds)
  echo "produce (kcat, acks=all): $(rate "$t0" "$t1")"
  echo "consume (kcat): $(rate "$t1" "$t2")"
  echo "consume (logd consume, same daemon): $(rate "$t2" "$t3")"
  target/release/logd topics create same --partitions 4 --bootstrap "$addr" > /dev/null
  head -n "$SAME" "$work/input" | kcat -P -t same -b "$addr" -X acks=all "${producer_opts[@]}"
  same=$(best_rate "$addr" same)
  python3 -c "print(f'consume (kcat, same layout as the ceiling): {$same:,.0f} records/s = {$same / $ceiling:.2f} x ceiling')"
  cpu0=$(cpu_ns "$pid")
  t0=$(seconds)
  kcat -C -t bench -b "$addr" -o beginning -e -q "${consumer_opts[@]}" > /dev/null
  t1=$(seconds)
  cpu1=$(cpu_ns "$pid")
  echo "consume (kcat, all N, large queue): $(rate "$t0" "$t1")"
  python3 -c "print(f'logd CPU time per 1M consumed records: {($cpu1 - $cpu0) / 1e6 * 1e6 / $N:.1f} ms')"
  echo "peak RSS: $(awk '/VmHWM/ {printf "%.0f MiB", $2 / 1024}' /proc/$pid/status)"
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
done

echo "== logd over SASL_SSL (SCRAM-SHA-512, TLS 1.3) against PLAINTEXT, same daemon, fsync interval"
# A throwaway CA and server certificate (openssl), one user, and a daemon with both listeners;
# kcat produces and consumes N records through each, alternately.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=bench-ca \
  -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -days 1 \
  -copy_extensions copy -out "$work/server.pem" 2>/dev/null
rm -rf "$work/data"
echo bench-password | "$LOGD" users create bench --data-dir "$work/data" --password-stdin > /dev/null
"$LOGD" serve --listen 127.0.0.1:0 --listener SECURE=SASL_SSL://127.0.0.1:0 --data-dir "$work/data" \
  --fsync interval --tls-cert "$work/server.pem" --tls-key "$work/server.key" > "$work/addr" 2>/dev/null &
pid=$!
while [ "$(grep -c listening "$work/addr" 2>/dev/null)" -lt 2 ]; do sleep 0.05; done
plain=$(awk 'NR==1 {print $4}' "$work/addr")
secure=$(awk 'NR==2 {print $4}' "$work/addr" | sed 's|.*://||')
sasl_ssl=(-X security.protocol=SASL_SSL -X sasl.mechanisms=SCRAM-SHA-512 -X sasl.username=bench
  -X sasl.password=bench-password -X "ssl.ca.location=$work/ca.pem")
for round in 1 2; do
  for way in plain secure; do
    if [ "$way" = plain ]; then addr=$plain; extra=(); else addr=$secure; extra=("${sasl_ssl[@]}"); fi
    topic="tls-$way-$round"
    t0=$(seconds)
    kcat -P -t "$topic" -b "$addr" "${extra[@]}" -X acks=all "${producer_opts[@]}" < "$work/input"
    t1=$(seconds)
    kcat -C -t "$topic" -b "$addr" "${extra[@]}" -o beginning -e -q "${consumer_opts[@]}" > /dev/null
    t2=$(seconds)
    echo "round $round, $way: produce $(rate "$t0" "$t1"); consume $(rate "$t1" "$t2")"
    produced=$(python3 -c "print($N / ($t1 - $t0))")
    consumed=$(python3 -c "print($N / ($t2 - $t1))")
    if [ "$way" = plain ]; then plain_rates=("$produced" "$consumed"); else secure_rates=("$produced" "$consumed"); fi
  done
  python3 -c "print(f'round $round, SASL_SSL / PLAINTEXT: produce {${secure_rates[0]} / ${plain_rates[0]}:.2f}, consume {${secure_rates[1]} / ${plain_rates[1]}:.2f}')"
done
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=

echo "== embedded engine (same N, fsync always)"
target/release/examples/throughput "$N" always
