//! Scenario tests for logd.
