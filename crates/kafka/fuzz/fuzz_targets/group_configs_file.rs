//! Arbitrary bytes as `group_configs.json`: the configs, or a clear error, never a panic (the
//! values go through Kafka's parsers, ISO-8601 durations included). What decodes names each
//! group and sets at least one config on it.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(groups) = logd::groups::configs::decode(data) {
        for (group, configs) in &groups {
            assert!(!group.is_empty() && !configs.is_empty());
        }
    }
});
