//! [`ClientQuotas`]: Kafka's client quotas on one broker (KIP-13, KIP-55, KIP-124): each user,
//! client id, or user's client id (named, or the default for every name) may have a produce
//! byte rate, a fetch byte rate and a share of request-handling time. A request's client is
//! charged under the most specific entity with a quota of that kind, in Kafka's order (user and
//! client id, user and default client id, user, default user and client id, default user and
//! default client id, default user, client id, default client id); clients under one entity
//! share its quota, as in Kafka. Over its quota a client is not refused: its response says how
//! long to wait (`throttle_time_ms`) and the broker reads nothing more from its connection
//! meanwhile (see `throttle.rs`); how long is `pace.rs`'s. Quotas are stored in `quotas.json` (`store.rs`) before they
//! apply.

mod pace;
pub mod store;
pub(crate) mod throttle;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use logd_protocol::quota::{CLIENT_ID, QuotaEntity, QuotaKey, USER};
use logd_storage::{RealFs, Storage};
use parking_lot::{Mutex, RwLock};

use crate::error::{Error, Result};
use pace::{BURST, Pace};
pub use store::{QUOTAS_FILE, QuotaMap};

/// Every this many charges, the paces of clients that owe nothing are dropped (a new one is
/// the same), so client ids that come and go under a default quota do not pile up.
const SWEEP_EVERY: u64 = 4096;

/// One change to an entity's quotas: a key set to a value, or removed (`None`).
pub type QuotaChange = (QuotaEntity, Vec<(QuotaKey, Option<f64>)>);

/// Whom a charge counts against: Kafka's quota metric tags (an empty part is not part of the
/// entity whose quota applies). Clients with the same tags share one pace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Tags {
    key: QuotaKey,
    user: String,
    client_id: String,
}

/// The quota a request's client is charged against, and the pace it shares.
#[derive(Debug, Clone)]
pub(crate) struct Limit {
    tags: Tags,
    bound: f64,
}

impl Limit {
    /// What a quiet client may take at once (a consumer's fetch is capped to it, as Kafka
    /// caps it to its quota window, so one response does not owe a long wait).
    pub(crate) fn burst(&self) -> f64 {
        self.bound * BURST.as_secs_f64()
    }

    /// What it limits.
    pub(crate) fn key(&self) -> QuotaKey {
        self.tags.key
    }
}

#[derive(Debug, Default)]
struct Paces {
    by_tags: HashMap<Tags, Pace>,
    charges: u64,
}

/// The client quotas of a data directory, and where each client stands against them.
#[derive(Debug)]
pub struct ClientQuotas {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    current: RwLock<Arc<QuotaMap>>,
    paces: Mutex<Paces>,
    /// Serializes changes (each rewrites the file).
    changing: Mutex<()>,
    /// Why the file could not be read at start, when it could not (changes are refused).
    unreadable: Option<String>,
}

impl ClientQuotas {
    /// The quotas stored in `dir` (none if the file does not exist); a damaged file is an
    /// error, so a broker never starts without quotas it was told to enforce.
    pub fn open(dir: &Path) -> Result<ClientQuotas> {
        ClientQuotas::open_with(Arc::new(RealFs), dir)
    }

    /// [`ClientQuotas::open`] on `storage` (the daemon's measured file system, or `SimFs`).
    pub fn open_with(storage: Arc<dyn Storage>, dir: &Path) -> Result<ClientQuotas> {
        let quotas = store::load(&*storage, dir)?;
        Ok(ClientQuotas {
            storage,
            dir: dir.to_owned(),
            current: RwLock::new(Arc::new(quotas)),
            paces: Mutex::default(),
            changing: Mutex::new(()),
            unreadable: None,
        })
    }

    /// No quotas, and every change refused: a broker whose file could not be read (`reason`)
    /// must not replace it with what it knows.
    pub(crate) fn unreadable(dir: &Path, reason: String) -> ClientQuotas {
        ClientQuotas {
            storage: Arc::new(RealFs),
            dir: dir.to_owned(),
            current: RwLock::default(),
            paces: Mutex::default(),
            changing: Mutex::new(()),
            unreadable: Some(reason),
        }
    }

    /// Every entity's quotas now.
    pub fn entries(&self) -> Arc<QuotaMap> {
        self.current.read().clone()
    }

    /// Applies `changes` (stored durably first; entities left without a quota are dropped).
    /// What clients were charged stays, so a lowered quota applies from the next request.
    pub fn alter(&self, changes: &[QuotaChange]) -> Result<()> {
        if let Some(reason) = &self.unreadable {
            return Err(Error::Quotas {
                path: self.dir.join(QUOTAS_FILE),
                reason: format!(
                    "unreadable at start ({reason}); repair or remove it, then restart"
                ),
            });
        }
        let _changing = self.changing.lock();
        let mut next = (**self.current.read()).clone();
        for (entity, values) in changes {
            let quotas = next.entry(entity.clone()).or_default();
            for (key, value) in values {
                match value {
                    Some(value) => quotas.insert(*key, *value),
                    None => quotas.remove(key),
                };
            }
            if quotas.is_empty() {
                next.remove(entity);
            }
        }
        store::save(&*self.storage, &self.dir, &next)?;
        *self.current.write() = Arc::new(next);
        Ok(())
    }

    /// The `key` quota a client of `principal` (`User:NAME`) sending `client_id` is charged
    /// against, if any applies.
    pub(crate) fn limit(&self, key: QuotaKey, principal: &str, client_id: &str) -> Option<Limit> {
        let quotas = self.current.read().clone();
        if quotas.is_empty() {
            return None;
        }
        let user = principal.strip_prefix("User:").unwrap_or(principal);
        let entity = |u: Option<Option<&str>>, c: Option<Option<&str>>| QuotaEntity {
            user: u.map(|u| u.map(str::to_owned)),
            client_id: c.map(|c| c.map(str::to_owned)),
        };
        // Kafka's order, each with the tags its clients share a rate under.
        let both = (user, client_id);
        let candidates = [
            (entity(Some(Some(user)), Some(Some(client_id))), both),
            (entity(Some(Some(user)), Some(None)), both),
            (entity(Some(Some(user)), None), (user, "")),
            (entity(Some(None), Some(Some(client_id))), both),
            (entity(Some(None), Some(None)), both),
            (entity(Some(None), None), (user, "")),
            (entity(None, Some(Some(client_id))), ("", client_id)),
            (entity(None, Some(None)), ("", client_id)),
        ];
        candidates
            .into_iter()
            .find_map(|(entity, (user, client_id))| {
                let bound = *quotas.get(&entity)?.get(&key)?;
                Some(Limit {
                    tags: Tags {
                        key,
                        user: user.to_owned(),
                        client_id: client_id.to_owned(),
                    },
                    bound,
                })
            })
    }

    /// Charges `value` against `limit` at `now`; how long its client must wait (zero within
    /// the quota).
    pub(crate) fn record(&self, limit: &Limit, value: f64, now: Instant) -> Duration {
        let mut paces = self.paces.lock();
        paces.charges += 1;
        if paces.charges.is_multiple_of(SWEEP_EVERY) {
            paces.by_tags.retain(|_, pace| !pace.is_idle(now));
        }
        let pace = paces.by_tags.entry(limit.tags.clone()).or_default();
        let wait = pace.charge(value, limit.bound, now);
        match limit.tags.key {
            // Kafka bounds a request-time throttle by one window.
            QuotaKey::RequestPercentage => wait.min(BURST),
            _ => wait,
        }
    }

    /// How long `limit`'s clients must still wait at `now`.
    pub(crate) fn owed(&self, limit: &Limit, now: Instant) -> Duration {
        self.paces
            .lock()
            .by_tags
            .get(&limit.tags)
            .map_or(Duration::ZERO, |pace| pace.owed(now))
    }
}

#[cfg(test)]
mod tests;
