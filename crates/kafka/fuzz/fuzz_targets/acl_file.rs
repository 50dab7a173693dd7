//! Arbitrary bytes as `acls.json`, and as the codes of a CreateAcls entry and a DeleteAcls
//! filter: the bindings, or a clear error, never a panic. What decodes is matched against
//! itself, as a DescribeAcls would.
#![no_main]

use libfuzzer_sys::fuzz_target;
use logd_kafka::acl::{AclBinding, AclFilter, decode_file};

fuzz_target!(|data: &[u8]| {
    if let Ok(bindings) = decode_file(data) {
        for binding in &bindings {
            assert!(binding.validate().is_ok());
            assert!(AclFilter::all().matches(binding));
        }
    }
    // The first seven bytes as wire codes, the rest split into a name and a principal.
    let Some((codes, rest)) = data.split_first_chunk::<7>() else {
        return;
    };
    let [rt, pt, op, perm, split, ..] = codes.map(|c| c as i8);
    let text = String::from_utf8_lossy(rest);
    let at = (split as u8 as usize).min(text.len());
    let at = (0..=at).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
    let (name, principal) = text.split_at(at);
    let binding = AclBinding::from_wire(rt, name, pt, principal, "*", op, perm);
    if let Ok(binding) = &binding {
        assert!(binding.validate().is_ok());
    }
    if let Ok(filter) = AclFilter::from_wire(rt, Some(name), pt, Some(principal), None, op, perm)
        && let Ok(binding) = &binding
    {
        // A filter of the very same codes and names selects the binding.
        assert!(filter.matches(binding));
    }
});
