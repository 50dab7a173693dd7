#!/usr/bin/env bash
# The broker's CPU time per consumed record, for builds of the daemon in the same sitting:
# each build serves N records of 100 bytes (fsync interval) to kcat, which consumes them all
# from the beginning with a large queue; `perf stat -e task-clock` counts the CPU time of every
# logd thread (nanoseconds, user and kernel) while kcat runs. The builds alternate ROUNDS times,
# three consumes each, so drift on the machine falls on all of them; the last line gives each
# build's median.
# Usage: [N=4000000] [ROUNDS=3] benches/consume_cpu.sh LOGD...
# Needs kcat and perf, run as root (or with perf_event_paranoid low enough to watch another
# process).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-4000000} ROUNDS=${ROUNDS:-3}
builds=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"; [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true' EXIT
python3 -c "import sys; sys.stdout.write(('x' * 100 + '\n') * $N)" > "$work/input"
producer_opts=(-X linger.ms=5 -X batch.num.messages=10000 -X queue.buffering.max.messages=1000000)
consumer_opts=(-X fetch.wait.max.ms=10 -X queued.min.messages=1000000)

# Prints "ms of logd CPU per 1M records" for three consumes from build $1.
measure() {
  rm -rf "$work/data"
  # Builds with the console turn it off, so its sampler's CPU is not counted.
  local console_off=()
  if "$1" serve --help | grep -q -- --http-listen; then console_off=(--http-listen none); fi
  "$1" serve --listen 127.0.0.1:0 --data-dir "$work/data" --fsync interval "${console_off[@]}" \
    > "$work/addr" 2>/dev/null &
  pid=$!
  while ! grep -q listening "$work/addr" 2>/dev/null; do sleep 0.05; done
  addr=$(awk '/listening/ {print $4}' "$work/addr")
  kcat -P -t bench -b "$addr" -X acks=all "${producer_opts[@]}" < "$work/input"
  local figures=()
  for _ in 1 2 3; do
    perf stat -e task-clock -x, -o "$work/perf" -p "$pid" -- \
      kcat -C -t bench -b "$addr" -o beginning -e -q "${consumer_opts[@]}" > "$work/out"
    [ "$(wc -l < "$work/out")" -eq "$N" ] || { echo "consumed $(wc -l < "$work/out") of $N" >&2; exit 1; }
    ms=$(awk -F, '/task-clock/ {print $1}' "$work/perf")
    figures+=("$(python3 -c "print(f'{$ms / ($N / 1e6):.1f}')")")
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
  echo "${figures[*]}"
}

echo "logd CPU ms per 1M consumed records (three consumes each), $N records of 100 B"
declare -A all
for round in $(seq "$ROUNDS"); do
  line="round $round:"
  for build in "${builds[@]}"; do
    figures=$(measure "$build")
    all[$build]+="$figures "
    line+=" $build $figures |"
  done
  echo "${line% |}"
done
for build in "${builds[@]}"; do
  echo "median $build: $(echo "${all[$build]}" | tr ' ' '\n' | sed '/^$/d' | sort -n |
    awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')"
done
