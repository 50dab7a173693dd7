//! The client's tests, one test binary: against an in-process broker, against librdkafka's
//! mock cluster of three brokers, and the crate's dependency boundary.

mod async_client;
mod cluster;
mod dependencies;
