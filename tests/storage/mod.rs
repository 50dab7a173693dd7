//! Scenarios for `logd-storage` that need real processes.

mod process_crash;
