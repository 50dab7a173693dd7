#!/usr/bin/env bash
# Memory and many clients against a release logd: 40 half-sent 30 MiB requests against a
# 64 MiB request budget, 40 unread 50 MiB fetches, 10,000 open connections, 1,000 slowloris
# connections; each with the broker's anonymous memory and a healthy client's p99 latencies;
# and bursts of 200 SCRAM logins over TLS beside a connected producer (its p99, idle and during).
# These are daemon tests (crates/server/tests/daemon/memory.rs and security.rs), built in
# release and run one at a time; their `logd memory:` and `logd security:` lines are the
# figures (docs/benchmarks.md).
# Usage: benches/connections.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release -p logd-server --test daemon -- memory:: security::two_hundred \
  --test-threads 1 2>&1 | grep -oE 'logd (memory|security):.*|^test result.*'
