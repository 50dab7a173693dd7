//! Planning an offset reset: where each partition would go for a target, clamped to what the
//! partition still holds, so a dry run can show the plan (and every clamp) before it is applied.

/// Where to move a group's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetTarget {
    /// The first offset still in the partition.
    Earliest,
    /// The partition's end: only new records will be read.
    Latest,
    /// A given offset.
    Offset(i64),
    /// The first offset whose timestamp is at least this (ms); the end if there is none.
    Timestamp(i64),
    /// The current committed offset plus this (negative moves back); from the end when nothing
    /// is committed.
    ShiftBy(i64),
}

/// The offsets a partition holds: `[log_start, log_end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionRange {
    /// First offset still stored.
    pub log_start: i64,
    /// Next offset to be written.
    pub log_end: i64,
}

/// One partition's line in a reset plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedReset {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// The committed offset now, if any.
    pub current: Option<i64>,
    /// Where the target asked to go, before clamping.
    pub requested: i64,
    /// Where the group will go: `requested` clamped to `[log_start, log_end]`.
    pub target: i64,
}

impl PlannedReset {
    /// True if the requested offset was outside the partition and was clamped.
    pub fn clamped(&self) -> bool {
        self.requested != self.target
    }
}

impl ResetTarget {
    /// Plans one partition. `offset_for_timestamp` answers the partition's first offset with a
    /// timestamp at least the given one (only called for [`ResetTarget::Timestamp`]).
    pub fn plan(
        self,
        topic: &str,
        partition: i32,
        current: Option<i64>,
        range: PartitionRange,
        offset_for_timestamp: impl FnOnce(i64) -> Option<i64>,
    ) -> PlannedReset {
        let requested = match self {
            ResetTarget::Earliest => range.log_start,
            ResetTarget::Latest => range.log_end,
            ResetTarget::Offset(offset) => offset,
            ResetTarget::Timestamp(ts) => offset_for_timestamp(ts).unwrap_or(range.log_end),
            ResetTarget::ShiftBy(delta) => current.unwrap_or(range.log_end).saturating_add(delta),
        };
        PlannedReset {
            topic: topic.to_owned(),
            partition,
            current,
            requested,
            target: requested.clamp(range.log_start, range.log_end.max(range.log_start)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RANGE: PartitionRange = PartitionRange {
        log_start: 100,
        log_end: 500,
    };

    fn plan(target: ResetTarget, current: Option<i64>) -> PlannedReset {
        target.plan("t", 0, current, RANGE, |ts| (ts <= 400).then_some(ts))
    }

    #[test]
    fn targets_resolve_and_clamp() {
        assert_eq!(plan(ResetTarget::Earliest, Some(300)).target, 100);
        assert_eq!(plan(ResetTarget::Latest, None).target, 500);
        let early = plan(ResetTarget::Offset(5), Some(300));
        assert_eq!(
            (early.requested, early.target, early.clamped()),
            (5, 100, true)
        );
        let late = plan(ResetTarget::Offset(9_000), None);
        assert_eq!((late.target, late.clamped()), (500, true));
        assert!(!plan(ResetTarget::Offset(250), None).clamped());
        assert_eq!(plan(ResetTarget::Timestamp(250), None).target, 250);
        assert_eq!(
            plan(ResetTarget::Timestamp(450), None).target,
            500,
            "no record that new: the end"
        );
        assert_eq!(plan(ResetTarget::ShiftBy(-50), Some(300)).target, 250);
        let shifted = plan(ResetTarget::ShiftBy(-1_000), Some(300));
        assert_eq!((shifted.requested, shifted.target), (-700, 100));
        assert_eq!(
            plan(ResetTarget::ShiftBy(-10), None).target,
            490,
            "no commit: shift from the end"
        );
    }
}
