//! Opening the engine: the data directory's lock, its topics, the offset store, the producer
//! id block, the group, share and transaction logs recovered (transactions the last stop left
//! half-ended finished), then the engine's own threads started.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use logd_offsets::OffsetStore;
use logd_storage::{RealFs, Storage};
use parking_lot::Mutex;

use crate::appends::AppendSignal;
use crate::clock::{Clock, SystemClock};
use crate::config::Config;
use crate::engine::{Log, Owner, Shared};
use crate::error::{Error, Result};
use crate::groups::classic::Coordinator;
use crate::housekeeping;
use crate::producer_ids::ProducerIds;
use crate::registry::TopicRegistry;
use crate::topic::Topic;

impl Log {
    /// Opens (creating if needed) the engine's data directory on the real file system.
    pub fn open(dir: impl AsRef<Path>, config: Config) -> Result<Log> {
        Log::open_with(Arc::new(RealFs), Arc::new(SystemClock), dir, config)
    }

    /// Opens the engine on `storage` with `clock`.
    pub fn open_with(
        storage: Arc<dyn Storage>,
        clock: Arc<dyn Clock>,
        dir: impl AsRef<Path>,
        config: Config,
    ) -> Result<Log> {
        let dir = dir.as_ref().to_owned();
        let io = |e: std::io::Error| Error::TopicMetadata {
            path: dir.clone(),
            reason: e.to_string(),
        };
        logd_storage::create_dir_durable(&*storage, &dir.join("topics")).map_err(io)?;
        let lock = storage.lock_dir(&dir).map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock => Error::Locked {
                dir: dir.clone(),
                holder: logd_storage::lock_holder(&dir),
            },
            _ => io(e),
        })?;
        // Behind the data directory's own lock (taken above on the real file system), the
        // partitions' files may share a bounded set of descriptors.
        let storage: Arc<dyn Storage> = match config.max_open_files {
            Some(max) => Arc::new(logd_storage::CachedFs::new(storage, max)),
            None => storage,
        };
        let topics_dir = dir.join("topics");
        let mut topics = BTreeMap::new();
        for name in storage.list_dir(&topics_dir).map_err(io)? {
            match Topic::open(&storage, topics_dir.join(&name))? {
                Some(topic) => {
                    topics.insert(name, Arc::new(topic));
                }
                // A create or delete that a crash interrupted: finish deleting it.
                None => storage
                    .remove_dir_all(&topics_dir.join(&name))
                    .map_err(io)?,
            }
        }
        let offsets =
            OffsetStore::open_with(storage.clone(), dir.join("offsets"), config.offsets.clone())?;
        let producer_ids = ProducerIds::open(storage.clone(), &dir)?;
        let coordinator =
            Coordinator::open(config.groups.clone(), storage.clone(), &dir, clock.now_ms())
                .map_err(|reason| Error::GroupState {
                    path: dir.join(crate::groups::classic::GROUPS_DIR),
                    reason,
                })?;
        let group_configs = crate::groups::configs::GroupConfigs::open(storage.clone(), &dir)?;
        let shares = crate::groups::share::ShareStates::open(storage.clone(), &dir)?;
        let txns = crate::txn::Transactions::open(storage.clone(), &dir)?;
        let consumer_groups = crate::groups::consumer::service::ConsumerGroups::open(
            storage.clone(),
            &dir,
            clock.now_ms(),
        )?;
        let shared = Arc::new(Shared {
            coordinator,
            group_configs,
            shares,
            share_groups: Default::default(),
            dir,
            storage,
            config,
            clock,
            topics: TopicRegistry::new(topics),
            offsets,
            producer_ids,
            txns,
            appends: AppendSignal::default(),
            cleaning: Default::default(),
            group_isolation: Default::default(),
            claims: Default::default(),
            consumer_groups,
            housekeeper: Mutex::new(None),
            _lock: lock,
        });
        let log = Log {
            _owner: Some(Arc::new(Owner(Arc::downgrade(&shared)))),
            shared,
        };
        log.recover_shares()?;
        log.finish_interrupted_transactions()?;
        let housekeeping = &log.shared.config.housekeeping;
        if housekeeping.enabled {
            *log.shared.housekeeper.lock() = Some(housekeeping::start(
                Arc::downgrade(&log.shared),
                housekeeping.clone(),
            ));
        }
        Ok(log)
    }
}
