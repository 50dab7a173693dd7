//! [`ConnectionStats`]: what the open connections are doing now, counted by `server.rs` and
//! read by monitoring.

use std::sync::atomic::{AtomicU64, AtomicUsize};

/// What the open connections are doing now, for monitoring: each is in one state.
#[derive(Debug, Default)]
pub struct ConnectionStats {
    /// Waiting for a request to begin.
    pub idle: AtomicUsize,
    /// Waiting for room in the request budget, or reading a request's body.
    pub reading: AtomicUsize,
    /// Having a request handled (long-polls and parked group joins included).
    pub handling: AtomicUsize,
    /// Writing a response.
    pub writing: AtomicUsize,
    /// Bytes of responses being written to clients now.
    pub sending_bytes: AtomicU64,
}
