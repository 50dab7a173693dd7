//! Scenarios for `logd-offsets` that need real processes.

mod process_crash;
