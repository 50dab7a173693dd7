#!/usr/bin/env bash
# The offset store under consumers that never pause: a release logd with `--fsync always`,
# CONSUMERS consumers (each its own group and partition) committing over CONNECTIONS
# connections for SECONDS (benches/commits.rs), the offsets directory's size every 30 s; then
# kill -9 and the time until the restarted daemon answers again with the state the run left.
# Figures in docs/benchmarks.md.
# Usage: benches/commits.sh [CONSUMERS] [CONNECTIONS] [SECONDS]   (defaults 10000, 100, 600)
set -euo pipefail
cd "$(dirname "$0")/.."
CONSUMERS=${1:-10000}
CONNECTIONS=${2:-100}
SECONDS_RUN=${3:-600}
cargo build --quiet --release --bin logd -p logd-server
cargo bench --quiet -p logd-benches --bench commits --no-run 2> /dev/null
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2> /dev/null; rm -rf "$work"' EXIT
port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
addr=127.0.0.1:$port
serve() {
  target/release/logd serve --listen "$addr" --data-dir "$work/data" --fsync always \
    --http-listen none >> "$work/logd.out" 2>&1 &
  pid=$!
  until (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null; do
    kill -0 "$pid" 2> /dev/null || { echo "logd did not start" >&2; tail "$work/logd.out" >&2; exit 1; }
    sleep 0.01
  done
}
serve
target/release/logd topics create ledger --partitions 8 --bootstrap "$addr" > /dev/null
cargo bench --quiet -p logd-benches --bench commits -- "$addr" "$work/data" "$CONSUMERS" \
  "$CONNECTIONS" "$SECONDS_RUN"
kill -9 "$pid"; wait "$pid" 2> /dev/null || true
t0=$(date +%s.%N)
serve
t1=$(date +%s.%N)
echo "restart after kill -9: serving in $(python3 -c "print(f'{$t1 - $t0:.2f}')") s with offsets/ of $(du -sh "$work/data/offsets" | cut -f1)"
kill "$pid"; wait "$pid" 2> /dev/null || true; pid=
