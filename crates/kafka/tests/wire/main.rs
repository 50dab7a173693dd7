//! The broker's wire-level tests, one test binary: each module drives `Broker` with the
//! requests a client sends (through `Broker::handle_frame`, or over a loopback connection where
//! only a connection shows the behaviour). One binary links the crate once, where one binary
//! per file linked it seventeen times.

mod acls;
mod admin_apis;
mod cluster_apis;
mod common;
mod consumer_protocol;
mod data_versions;
mod fetch;
mod group_protocols;
mod groups;
mod idempotence;
mod metadata;
mod partition_ranges;
mod quotas;
mod sasl;
mod served;
mod share_groups;
mod share_versions;
mod transactions;
mod users;
mod versions;
