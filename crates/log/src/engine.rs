//! [`Log`]: the embeddable engine. Owns the data directory: topics with their partition logs,
//! the offset store and the group coordinator; hands out producers and consumers. Every append
//! goes through [`Log::append`], which wakes waiting consumers. This file is the handle, what
//! it shares ([`Shared`], each part a type of its own) and the append path; the topic
//! operations are `topic_admin.rs`, the group ones `group_admin.rs`, what the engine's threads
//! run `maintenance.rs`. Opening it is `open.rs`; its threads (`housekeeping.rs`, `cleaner.rs`)
//! hold it weakly through [`Shared`].
//!
//! Layout: `.lock`, `topics/<name>/…` (see `topic.rs`), `offsets/` (`logd-offsets`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use logd_offsets::OffsetStore;
use logd_storage::batch::BatchHeader;
use logd_storage::{AppendInfo, DirLock, Storage};
use parking_lot::Mutex;

use crate::appends::AppendSignal;
use crate::clock::Clock;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::groups::classic::Coordinator;
use crate::housekeeper::Housekeeper;
use crate::producer_ids::ProducerIds;
use crate::registry::TopicRegistry;

/// The engine. Cheap to clone; clones share everything. Dropping the last clone closes the
/// engine before the drop returns (waiting for a housekeeping round under way), so its data
/// directory can be opened again at once.
#[derive(Debug, Clone)]
pub struct Log {
    /// Declared before `shared`, so dropped first: see [`Owner`]. `None` on the handles the
    /// engine's own threads hold for a round.
    pub(crate) _owner: Option<Arc<Owner>>,
    pub(crate) shared: Arc<Shared>,
}

/// Shared by the handles embedders hold, not by the engine's threads. The last to go stops
/// those threads and waits for them; without it, a round under way holding the last
/// reference closed the engine (and unlocked its directory) on its own thread a moment after
/// the embedder's drop returned, and an immediate reopen was refused as `Locked`.
#[derive(Debug)]
pub(crate) struct Owner(pub(crate) std::sync::Weak<Shared>);

impl Drop for Owner {
    fn drop(&mut self) {
        if let Some(shared) = self.0.upgrade() {
            let housekeeper = shared.housekeeper.lock().take();
            drop(housekeeper);
        }
    }
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) dir: PathBuf,
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) config: Config,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) topics: TopicRegistry,
    pub(crate) offsets: OffsetStore,
    pub(crate) coordinator: Coordinator,
    pub(crate) group_configs: crate::groups::configs::GroupConfigs,
    pub(crate) shares: crate::groups::share::ShareStates,
    pub(crate) share_groups: crate::groups::share::ShareGroups,
    pub(crate) producer_ids: ProducerIds,
    pub(crate) txns: crate::txn::Transactions,
    pub(crate) appends: AppendSignal,
    /// The cleaner's memory of each compacted partition.
    pub(crate) cleaning: crate::cleaner_state::CleanerState,
    /// Which groups read committed records only (for their lag).
    pub(crate) group_isolation: crate::groups::isolation::GroupIsolation,
    /// Groups of the next consumer group protocol (KIP-848).
    pub(crate) consumer_groups: crate::groups::consumer::service::ConsumerGroups,
    /// The lock each join claims its group id under (one protocol per id).
    pub(crate) claims: crate::groups::protocol::ProtocolClaims,
    /// Declared before the lock: dropping it stops (and joins) the housekeeping thread first.
    pub(crate) housekeeper: Mutex<Option<Housekeeper>>,
    pub(crate) _lock: DirLock,
}

impl Log {
    /// A handle for one round of the engine's own threads: its drop never closes the engine.
    pub(crate) fn for_round(shared: Arc<Shared>) -> Log {
        Log {
            _owner: None,
            shared,
        }
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// The engine's clock.
    pub fn clock(&self) -> &dyn Clock {
        &*self.shared.clock
    }

    /// Appends record batches to a partition (as `PartitionLog::append`) and wakes consumers.
    ///
    /// Batches of idempotent producers are checked against the partition's producer state: a
    /// retry of a stored batch stores nothing and returns the original offsets
    /// ([`AppendInfo::duplicate`]). A producer id this engine never handed out is refused
    /// ([`Error::UnknownProducerId`]).
    ///
    /// A transactional batch is refused unless its producer's transaction is open and holds
    /// the partition ([`Error::InvalidTxnState`]; [`Error::ProducerFenced`] for another epoch):
    /// no batch opens a transaction a marker will not close.
    pub fn append(&self, topic: &str, partition: u32, batches: &mut [u8]) -> Result<AppendInfo> {
        self.check_producer_ids(batches, topic, partition)?;
        let topic = self.topic_for_produce(topic)?;
        let now_ms = self.shared.clock.now_ms();
        let log = topic.partition(partition)?;
        // A topic with a codec of its own stores every batch in it (Kafka `compression.type`).
        let codec = topic.config.read().compression.codec();
        let mut recompressed = match codec {
            Some(codec) => {
                logd_storage::batch::recompress(batches, codec, log.max_decompressed_bytes())?
            }
            None => None,
        };
        let batches = match &mut recompressed {
            Some(rewritten) => rewritten.as_mut_slice(),
            None => batches,
        };
        let info = log.append_at(batches, now_ms)?;
        if info.duplicate {
            topic.count_duplicate();
        } else {
            self.notify_appended();
        }
        Ok(info)
    }

    /// Refuses batches claiming a producer id no `init_producer_id` returned, and
    /// transactional batches outside their producer's open transaction. Headers only;
    /// malformed input is left to the partition's validation.
    fn check_producer_ids(&self, batches: &[u8], topic: &str, partition: u32) -> Result<()> {
        let mut position = 0;
        while let Ok(header) = BatchHeader::parse(&batches[position..], position) {
            if header.producer_id >= 0 && !self.shared.producer_ids.handed_out(header.producer_id) {
                return Err(Error::UnknownProducerId {
                    producer_id: header.producer_id,
                });
            }
            if header.is_transactional() {
                let (id, epoch) = (header.producer_id, header.producer_epoch);
                (self.shared.txns).verify_produce(id, epoch, topic, partition)?;
            }
            position = match position.checked_add(header.total_len()) {
                Some(next) if next < batches.len() => next,
                _ => break,
            };
        }
        Ok(())
    }

    /// A producer id never handed out before, for an idempotent producer (Kafka's
    /// InitProducerId); its epoch starts at 0. Ids survive restarts and crashes: none is ever
    /// handed out twice.
    pub fn init_producer_id(&self) -> Result<i64> {
        self.shared.producer_ids.allocate()
    }

    fn notify_appended(&self) {
        self.shared.appends.notify();
    }

    /// A counter that grows with every append; pass it to [`Log::wait_for_append`].
    pub fn append_count(&self) -> u64 {
        self.shared.appends.count()
    }

    /// Blocks until an append after `seen` (a value of [`Log::append_count`]) or `timeout`: how
    /// long-polling readers wait without spinning.
    pub fn wait_for_append(&self, seen: u64, timeout: Duration) {
        self.shared.appends.wait(seen, timeout);
    }

    /// The offset store.
    pub fn offsets(&self) -> &OffsetStore {
        &self.shared.offsets
    }

    /// The group coordinator.
    pub fn coordinator(&self) -> &Coordinator {
        &self.shared.coordinator
    }
}
