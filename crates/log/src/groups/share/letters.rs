//! Share groups' dead letters (KIP-1191) from their archiving to their write: where a group's
//! go ([`DeadLetterTarget`]), and those logged but not yet known written ([`PendingLetters`]),
//! each with the idempotent producer id and sequence its batch will carry. A letter is logged
//! in the same state-log record as its record's archiving and written only once that record
//! is durable, so neither happens without the other; a write that a crash interrupted is
//! recognised by its sequence in the dead-letter partition's producer state.

use std::collections::BTreeMap;

use logd_storage::Written;

use super::partition::{ArchiveReason, Archived};
use super::persist::{Letter, LetterId, RejectReason, ShareKey};

/// Where a share group's dead letters go, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeadLetterTarget {
    /// The dead-letter topic (`errors.deadletterqueue.topic.name`).
    pub topic: String,
    /// Its partition count.
    pub partitions: u32,
    /// `errors.deadletterqueue.copy.record.enable`.
    pub copy_record: bool,
    /// This run's producer id for dead letters.
    pub producer_id: i64,
}

/// Letters logged and not yet known written, in write order.
#[derive(Debug, Default)]
pub(crate) struct PendingLetters {
    /// The next sequence per dead-letter partition and producer id.
    next_sequence: BTreeMap<(String, u32, i64), i32>,
    pending: BTreeMap<LetterId, (ShareKey, Letter)>,
    /// The state-log write that logged the newest letter (`None`: none since the restart).
    last_logged: Option<Written>,
}

impl PendingLetters {
    /// Those a restart found logged and not marked written.
    pub fn recovered(saved: &BTreeMap<LetterId, (ShareKey, Letter)>) -> PendingLetters {
        let mut letters = PendingLetters::default();
        for (key, letter) in saved.values() {
            letters.add(key, letter.clone());
        }
        letters
    }

    /// The letters of `archived` (records of `key`) for `target`, with their sequences; none
    /// is pending until [`PendingLetters::logged`].
    pub fn assign(
        &self,
        key: &ShareKey,
        archived: &[Archived],
        target: &DeadLetterTarget,
        reasons: &BTreeMap<i64, RejectReason>,
    ) -> Vec<Letter> {
        let partition = key.2 % target.partitions.max(1);
        let mut sequence = self
            .next_sequence
            .get(&(target.topic.clone(), partition, target.producer_id))
            .copied()
            .unwrap_or(0);
        archived
            .iter()
            .map(|a| {
                let letter = Letter {
                    offset: a.offset,
                    delivery_count: a.delivery_count,
                    rejected: a.reason == ArchiveReason::Rejected,
                    copy_record: target.copy_record,
                    topic: target.topic.clone(),
                    partition,
                    producer_id: target.producer_id,
                    sequence,
                    error: reasons
                        .get(&a.offset)
                        .filter(|_| a.reason == ArchiveReason::Rejected)
                        .cloned(),
                };
                // Kafka's sequences wrap from i32::MAX to 0.
                sequence = sequence.checked_add(1).unwrap_or(0);
                letter
            })
            .collect()
    }

    /// `letters` of `key` were logged by `written`.
    pub fn logged(&mut self, key: &ShareKey, letters: Vec<Letter>, written: Written) {
        for letter in letters {
            self.add(key, letter);
        }
        self.last_logged = Some(written);
    }

    fn add(&mut self, key: &ShareKey, letter: Letter) {
        let next = letter.sequence.checked_add(1).unwrap_or(0);
        self.next_sequence.insert(
            (letter.topic.clone(), letter.partition, letter.producer_id),
            next,
        );
        self.pending.insert(letter.id(), (key.clone(), letter));
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Every pending letter in write order, and the write to wait for before writing them.
    pub fn all(&self) -> (Vec<(ShareKey, Letter)>, Option<Written>) {
        (self.pending.values().cloned().collect(), self.last_logged)
    }

    /// `ids` are written.
    pub fn written(&mut self, ids: &[LetterId]) {
        for id in ids {
            self.pending.remove(id);
        }
    }
}
