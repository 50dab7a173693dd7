//! Scenario tests for logd: whole programs and processes, as users run them.

mod engine;
mod offsets;
mod retry;
mod storage;
