//! Scenario tests for logd: whole programs and processes, as users run them.

mod engine;
#[path = "support/kafka_cluster.rs"]
mod kafka_cluster;
mod offsets;
#[path = "support/provision.rs"]
mod provision;
mod retry;
mod storage;
