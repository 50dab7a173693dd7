//! [`Coordinator`]: every group of an engine behind one lock, with a condition variable so
//! in-process members can wait for each other (a join waits for the other members to rejoin,
//! a follower's sync waits for the leader's assignment), as Kafka parks those requests.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use logd_storage::{StateLog, Storage, Written};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};

use super::error::GroupError;
use super::messages::{JoinRequest, JoinStatus, SyncStatus};
use super::persist::{self, GroupRecord, SettledGroups};
use super::state::Group;
use crate::clock::Clock;

/// Limits the coordinator enforces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfig {
    /// Smallest session timeout a member may ask for (Kafka `group.min.session.timeout.ms`).
    pub min_session_timeout_ms: i64,
    /// Largest session timeout (Kafka `group.max.session.timeout.ms`).
    pub max_session_timeout_ms: i64,
    /// How long the first rebalance of an empty group waits for more members (Kafka
    /// `group.initial.rebalance.delay.ms`, 3000 there). 0 by default for embedded consumers,
    /// which join from one process; the daemon sets Kafka's value.
    pub initial_rebalance_delay_ms: i64,
}

impl Default for GroupConfig {
    fn default() -> GroupConfig {
        GroupConfig {
            min_session_timeout_ms: 6_000,
            max_session_timeout_ms: 1_800_000,
            initial_rebalance_delay_ms: 0,
        }
    }
}

/// Holds every consumer group of one engine.
#[derive(Debug, Default)]
pub struct Coordinator {
    config: GroupConfig,
    groups: Mutex<BTreeMap<String, Group>>,
    changed: Condvar,
    /// Where settled groups are logged; `None` keeps them in memory only.
    log: Option<StateLog<SettledGroups>>,
}

/// Records are written to the group log under the groups lock, so the log holds them in the
/// order they happened; this is the last one written (or why writing failed), waited for once
/// the lock is released.
type Pending = logd_storage::Result<Option<Written>>;

/// Logs a failure to save group state where no caller can be told.
fn log_failure(saved: logd_storage::Result<()>) {
    if let Err(e) = saved {
        tracing::error!(error = %e, "saving group state failed");
    }
}

/// Fold the group log into a snapshot once it is this big.
const GROUP_SNAPSHOT_AFTER_BYTES: u64 = 4 << 20;

/// How long a waiting member sleeps before re-checking deadlines (time may be simulated, so
/// waiting cannot rely on wake-ups alone).
const WAIT_SLICE: Duration = Duration::from_millis(20);

impl Coordinator {
    /// A coordinator with `config` that keeps groups in memory only.
    pub fn new(config: GroupConfig) -> Coordinator {
        Coordinator {
            config,
            ..Coordinator::default()
        }
    }

    /// A coordinator that saves settled groups in `dir` and starts from what was saved there;
    /// restored members' sessions start at `now`. The error says what is wrong with the file.
    pub(crate) fn open(
        config: GroupConfig,
        storage: Arc<dyn Storage>,
        dir: &Path,
        now: i64,
    ) -> Result<Coordinator, String> {
        let (log, saved) = persist::open(storage, dir, GROUP_SNAPSHOT_AFTER_BYTES)?;
        let groups = saved
            .into_iter()
            .map(|saved| {
                let group = Group::restore(saved, now)
                    .with_initial_delay(config.initial_rebalance_delay_ms);
                (group.id().to_owned(), group)
            })
            .collect();
        Ok(Coordinator {
            config,
            groups: Mutex::new(groups),
            log: Some(log),
            ..Coordinator::default()
        })
    }

    /// Runs `f` on group `id` (created if missing), then wakes every waiting member (and saves
    /// the groups if this one settled).
    pub fn with_group<T>(&self, id: &str, f: impl FnOnce(&mut Group) -> T) -> T {
        let (out, saved) = self.with_group_saved(id, f);
        log_failure(saved);
        out
    }

    /// As [`Coordinator::with_group`], and whether what settled is durable.
    fn with_group_saved<T>(
        &self,
        id: &str,
        f: impl FnOnce(&mut Group) -> T,
    ) -> (T, logd_storage::Result<()>) {
        let (out, pending) = {
            let mut groups = self.groups.lock();
            let applied = self.apply(&mut groups, id, f);
            self.changed.notify_all();
            applied
        };
        (out, self.save(pending))
    }

    /// Runs `f` on group `id` (created if missing) in the locked `groups`; returns its result
    /// and, if the group settled, its record to wait for once the lock is released.
    fn apply<T>(
        &self,
        groups: &mut BTreeMap<String, Group>,
        id: &str,
        f: impl FnOnce(&mut Group) -> T,
    ) -> (T, Pending) {
        let group = groups
            .entry(id.to_owned())
            .or_insert_with(|| self.new_group(id));
        let before = group.settled();
        let out = f(group);
        let pending = if group.settled() != before {
            self.log_settled(group)
        } else {
            Ok(None)
        };
        (out, pending)
    }

    /// Writes `group`'s settled state to the group log (under the groups lock, so records are
    /// in the order the groups settled), if groups are logged at all.
    fn log_settled(&self, group: &Group) -> Pending {
        match group.last_settled() {
            Some(saved) => self.write(GroupRecord::Settled(saved.clone())),
            None => Ok(None),
        }
    }

    fn write(&self, record: GroupRecord) -> Pending {
        match &self.log {
            Some(log) => log.write(record).map(Some),
            None => Ok(None),
        }
    }

    /// Waits for the last record written to be durable (outside the groups lock: members do
    /// not wait on each other's fsyncs). A failed write or fsync poisons the log: groups then
    /// restart from what was durable and their members rejoin, which is what a logd without
    /// saved groups does.
    fn save(&self, pending: Pending) -> logd_storage::Result<()> {
        match (&self.log, pending?) {
            (Some(log), Some(written)) => log.wait(written),
            _ => Ok(()),
        }
    }

    fn new_group(&self, id: &str) -> Group {
        Group::new(id).with_initial_delay(self.config.initial_rebalance_delay_ms)
    }

    /// Expires sessions and ends overdue join phases in every group, so groups nobody calls
    /// (every member gone) still move on. Returns how many groups changed.
    pub fn tick_all(&self, now: i64) -> usize {
        let (changed, pending) = {
            let mut groups = self.groups.lock();
            let (mut changed, mut pending) = (0, Ok(None));
            for group in groups.values_mut() {
                let before = group.settled();
                changed += usize::from(group.tick(now));
                if group.settled() != before && pending.is_ok() {
                    pending = match self.log_settled(group) {
                        Ok(None) => pending,
                        written => written,
                    };
                }
            }
            if changed > 0 {
                self.changed.notify_all();
            }
            (changed, pending)
        };
        log_failure(self.save(pending));
        changed
    }

    /// Runs `f` on group `id` after expiring what `now` has expired in it.
    fn with_ticked_group<T>(&self, id: &str, now: i64, f: impl FnOnce(&mut Group) -> T) -> T {
        self.with_group(id, |g| {
            g.tick(now);
            f(g)
        })
    }

    /// Runs `f` on group `id` if it exists.
    pub fn read_group<T>(&self, id: &str, f: impl FnOnce(&Group) -> T) -> Option<T> {
        self.groups.lock().get(id).map(f)
    }

    /// Ids of the groups the coordinator knows.
    pub fn group_ids(&self) -> Vec<String> {
        self.groups.lock().keys().cloned().collect()
    }

    /// Forgets an empty group; refused while it has members. Whether the coordinator knew it.
    pub fn delete_group(&self, id: &str) -> Result<bool, GroupError> {
        let (known, pending) = {
            let mut groups = self.groups.lock();
            if groups.get(id).is_some_and(|g| !g.members().is_empty()) {
                return Err(GroupError::NonEmptyGroup);
            }
            match groups.remove(id) {
                Some(group) if group.last_settled().is_some() => {
                    (true, self.write(GroupRecord::Removed(id.to_owned())))
                }
                removed => (removed.is_some(), Ok(None)),
            }
        };
        self.save(pending).map_err(|e| {
            tracing::error!(error = %e, "saving group state failed");
            GroupError::CoordinatorNotAvailable
        })?;
        Ok(known)
    }

    /// A join, without waiting. It does not claim the group id for the classic protocol:
    /// callers outside the group code join through [`Log::join_classic`](crate::Log::join_classic).
    pub(crate) fn join(
        &self,
        group: &str,
        request: JoinRequest,
        now: i64,
    ) -> Result<JoinStatus, GroupError> {
        if !(self.config.min_session_timeout_ms..=self.config.max_session_timeout_ms)
            .contains(&request.session_timeout_ms)
        {
            return Err(GroupError::InvalidSessionTimeout);
        }
        self.with_ticked_group(group, now, |g| g.join(request, now))
    }

    /// Waits, after a join answered `status` at `started`, until the join phase completes (or
    /// `timeout` passes). Returns [`JoinStatus::Joined`], or [`JoinStatus::MemberIdRequired`]
    /// for a KIP-394 first join.
    pub(crate) fn wait_joined(
        &self,
        group: &str,
        mut status: JoinStatus,
        clock: &dyn Clock,
        started: std::time::Instant,
        timeout: Duration,
    ) -> Result<JoinStatus, GroupError> {
        loop {
            let member_id = match status {
                JoinStatus::Waiting { member_id } => member_id,
                done => return Ok(done),
            };
            if started.elapsed() >= timeout {
                return Err(GroupError::Timeout);
            }
            status = self.wait_then(group, clock, |g, _| g.poll_join(&member_id))?;
        }
    }

    /// Waits for a change (or a slice of time), expires what is due in group `id`, then runs
    /// `f` on it. Wakes the other waiters only if expiry changed something: waiters that woke
    /// each other on every check would spin.
    fn wait_then<T>(&self, id: &str, clock: &dyn Clock, f: impl FnOnce(&mut Group, i64) -> T) -> T {
        let (out, pending) = {
            let mut groups = self.groups.lock();
            self.changed.wait_for(&mut groups, WAIT_SLICE);
            let now = clock.now_ms();
            self.apply(&mut groups, id, |group| {
                if group.tick(now) {
                    self.changed.notify_all();
                }
                f(group, now)
            })
        };
        log_failure(self.save(pending));
        out
    }

    /// Syncs and waits for this member's assignment (the leader passes everyone's).
    pub fn sync_and_wait(
        &self,
        group: &str,
        member_id: &str,
        generation: i32,
        assignments: Option<Vec<(String, Bytes)>>,
        clock: &dyn Clock,
        timeout: Duration,
    ) -> Result<Bytes, GroupError> {
        let started = std::time::Instant::now();
        let now = clock.now_ms();
        // The first call wakes the waiters: the leader's assignment is what they wait for.
        let (status, saved) = self.with_group_saved(group, |g| {
            g.tick(now);
            g.sync(member_id, generation, assignments, now)
        });
        // As Kafka: the leader is answered once the group's new state is durable, or told the
        // coordinator is not available (its members then rejoin).
        if let Err(e) = saved {
            tracing::error!(error = %e, "saving group state failed");
            return Err(GroupError::CoordinatorNotAvailable);
        }
        let mut status = status?;
        loop {
            if let SyncStatus::Assigned(bytes) = status {
                return Ok(bytes);
            }
            if started.elapsed() >= timeout {
                return Err(GroupError::Timeout);
            }
            status = self.wait_then(group, clock, |g, now| {
                g.sync(member_id, generation, None, now)
            })?;
        }
    }

    /// A heartbeat (also expires other members' sessions).
    pub fn heartbeat(
        &self,
        group: &str,
        member_id: &str,
        generation: i32,
        now: i64,
    ) -> Result<(), GroupError> {
        self.with_ticked_group(group, now, |g| g.heartbeat(member_id, generation, now))
    }

    /// A member leaves.
    pub fn leave(&self, group: &str, member_id: &str, now: i64) -> Result<(), GroupError> {
        self.with_group(group, |g| g.leave(member_id, now))
    }

    /// FENCED_INSTANCE_ID if static `instance` is held by another member than `member_id`.
    pub fn check_instance(
        &self,
        group: &str,
        instance: &str,
        member_id: &str,
    ) -> Result<(), GroupError> {
        self.read_group(group, |g| g.check_instance(instance, member_id))
            .unwrap_or(Ok(()))
    }

    /// The longest rebalance timeout among a group's members (zero for an unknown group).
    pub fn rebalance_timeout(&self, group: &str) -> Duration {
        let ms = self
            .read_group(group, Group::rebalance_timeout_ms)
            .unwrap_or(0);
        Duration::from_millis(ms.max(0) as u64)
    }

    /// A static member leaves by its instance id (LeaveGroup v3+); a member id, if given, must
    /// be the instance's current holder.
    pub fn leave_instance(
        &self,
        group: &str,
        instance_id: &str,
        member_id: Option<&str>,
        now: i64,
    ) -> Result<String, GroupError> {
        self.with_group(group, |g| g.leave_instance(instance_id, member_id, now))
    }

    /// Whether a commit from `member_id` at `generation` is accepted.
    pub fn validate_commit(
        &self,
        group: &str,
        member_id: &str,
        generation: i32,
        now: i64,
    ) -> Result<(), GroupError> {
        self.with_ticked_group(group, now, |g| g.validate_commit(member_id, generation))
    }
}
