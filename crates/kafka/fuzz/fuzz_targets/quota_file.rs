//! Arbitrary bytes as `quotas.json`: the quotas, or a clear error, never a panic. What decodes
//! is what AlterClientQuotas would have stored: each entity and value passes its checks again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use logd_kafka::quota::{QuotaEntity, QuotaKey, store};

fuzz_target!(|data: &[u8]| {
    if let Ok(quotas) = store::decode(data) {
        for (entity, values) in quotas.iter() {
            assert!(QuotaEntity::from_parts(entity.parts()).is_ok());
            assert!(!values.is_empty());
            for (key, value) in values {
                assert_eq!(QuotaKey::check(key.name(), *value), Ok(*key));
            }
        }
    }
});
