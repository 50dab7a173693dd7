//! Durable transaction state, as Kafka keeps it in `__transaction_state`: per transactional
//! id its producer id and epoch, timeout, state, the partitions and groups in its open
//! transaction and the offsets it commits to them, on a `logd_storage::StateLog` in `txns/`
//! of the data directory. Every change logs the id's whole new metadata (Kafka's
//! `TransactionLog` does the same), so recovery is "the last record wins". The format is in
//! `docs/format.md`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

use logd_storage::{StateLog, StateLogConfig, StateMachine, Storage};
use serde::{Deserialize, Serialize};

/// The state log's directory in the data directory.
pub(crate) const TXNS_DIR: &str = "txns";
/// Fold the log into a snapshot once it is this big.
const SNAPSHOT_AFTER_BYTES: u64 = 8 << 20;

/// Where a transactional id's transaction is (Kafka's `TransactionState`, minus
/// `PrepareEpochFence`: fencing here aborts at once, so it is a `PrepareAbort` with the epoch
/// already raised, and minus `Dead`: an expired id is removed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TxnState {
    /// No transaction open.
    Empty,
    /// A transaction is open: partitions or groups were added.
    Ongoing,
    /// Committing: its markers are being written.
    PrepareCommit,
    /// Aborting: its markers are being written.
    PrepareAbort,
    /// The last transaction committed.
    CompleteCommit,
    /// The last transaction aborted.
    CompleteAbort,
}

impl TxnState {
    /// Kafka's name for the state, as DescribeTransactions and ListTransactions give it.
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
        }
    }

    /// The state Kafka names `name`, if any.
    pub fn from_name(name: &str) -> Option<TxnState> {
        [
            TxnState::Empty,
            TxnState::Ongoing,
            TxnState::PrepareCommit,
            TxnState::PrepareAbort,
            TxnState::CompleteCommit,
            TxnState::CompleteAbort,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }

    /// Markers are being written.
    pub(crate) fn is_preparing(self) -> bool {
        matches!(self, TxnState::PrepareCommit | TxnState::PrepareAbort)
    }
}

/// An offset a transaction commits for a group, visible once it commits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingOffset {
    /// The offset to commit.
    pub offset: i64,
    /// The commit's metadata.
    pub metadata: String,
}

/// One transactional id's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TxnMeta {
    pub producer_id: i64,
    pub epoch: i16,
    /// The epoch before the last bump, -1 if none: a retried InitProducerId names it.
    pub last_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnState,
    /// The partitions in the open (or completing) transaction.
    pub partitions: BTreeSet<(String, u32)>,
    /// The groups in it (AddOffsetsToTxn), with the offsets it commits to each.
    pub groups: BTreeMap<String, BTreeMap<(String, i32), PendingOffset>>,
    /// When the open transaction began (ms), -1 when none is open.
    pub started_ms: i64,
    /// When the metadata last changed (ms): an idle id expires from it.
    pub updated_ms: i64,
}

/// Every transactional id, and which one each producer id serves.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct SavedTxns {
    pub ids: BTreeMap<String, TxnMeta>,
    pub producers: HashMap<i64, String>,
}

/// What the transaction log records.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum TxnRecord {
    /// `id`'s metadata is now `meta`.
    Put { id: String, meta: TxnMeta },
    /// `id` expired.
    Remove { id: String },
}

impl StateMachine for SavedTxns {
    type Record = TxnRecord;

    fn apply(&mut self, record: TxnRecord) {
        match record {
            TxnRecord::Put { id, meta } => {
                if let Some(old) = self.ids.get(&id)
                    && old.producer_id != meta.producer_id
                {
                    self.producers.remove(&old.producer_id);
                }
                self.producers.insert(meta.producer_id, id.clone());
                self.ids.insert(id, meta);
            }
            TxnRecord::Remove { id } => {
                if let Some(old) = self.ids.remove(&id) {
                    self.producers.remove(&old.producer_id);
                }
            }
        }
    }
}

/// Opens the transaction log in `dir` (the data directory).
pub(crate) fn open(
    storage: Arc<dyn Storage>,
    dir: &Path,
) -> logd_storage::Result<StateLog<SavedTxns>> {
    StateLog::open(
        storage,
        dir.join(TXNS_DIR),
        StateLogConfig {
            name: TXNS_DIR,
            snapshot_after_bytes: SNAPSHOT_AFTER_BYTES,
        },
    )
}
