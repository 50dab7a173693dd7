//! `logd-storage`: one partition's records in segment files, with sparse indexes, a fsync
//! policy, crash recovery and retention. Synchronous `std` only: no threads, no async, no
//! wall-clock reads in decisions tests must repeat (callers pass `now`).

pub mod batch;
mod error;

pub use error::{Error, Result};
