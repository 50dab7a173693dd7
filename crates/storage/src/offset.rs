//! [`Offset`], the position of a record in a partition.

use std::fmt;

/// A record's offset in its partition: 0 for the first record ever appended, then +1 per
/// record. Offsets are never reused, even after retention deletes old records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Offset(pub i64);

impl fmt::Display for Offset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}
