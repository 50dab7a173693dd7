//! Scenario tests for logd: whole programs and processes, as users run them.

mod offsets;
mod storage;
