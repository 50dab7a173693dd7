//! Groups of the next consumer group protocol (KIP-848) in the engine: each group's
//! [`ConsumerGroup`] behind one lock, when each member was last heard from (a member silent for
//! the group's `consumer.session.timeout.ms` is removed at the group's next heartbeat, or by
//! housekeeping), and the commit rule of such groups: a member commits with its current member
//! epoch (STALE_MEMBER_EPOCH otherwise), anyone else only while the group has no members. A
//! group id is one protocol's at a time: a classic group with members refuses consumer-protocol
//! members. Membership is durable (`persist.rs`: each changed member, target and the epochs
//! logged under the lock, waited for outside it, before the heartbeat is answered); on open
//! each member's session starts anew. Committed offsets are in the offset store. A heartbeat's
//! cost is its member's change: sessions are ordered by when each member was last heard from,
//! so expiry looks only at those past their timeout, and only what changed is compared and
//! logged.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use logd_storage::{StateLog, Storage, Written};
use parking_lot::Mutex;

use super::persist::{
    self, ConsumerGroupRecord, GroupChange, SavedGroup, SavedGroups, SavedMember,
};
use crate::engine::Log;
use crate::error::{Error, Result};
use crate::groups::classic::GroupError;
use crate::groups::consumer::{ConsumerGroup, GroupMeta, Heartbeat, HeartbeatAnswer};
use crate::groups::protocol::GroupProtocol;

/// Every consumer-protocol group.
#[derive(Debug)]
pub(crate) struct ConsumerGroups {
    groups: Mutex<BTreeMap<String, Entry>>,
    log: StateLog<SavedGroups>,
}

impl ConsumerGroups {
    /// The groups saved in `dir` (the data directory); each member's session starts at `now`.
    pub(crate) fn open(storage: Arc<dyn Storage>, dir: &Path, now: i64) -> Result<ConsumerGroups> {
        let damaged = |reason: String| Error::GroupState {
            path: dir.join(persist::CONSUMER_GROUPS_DIR),
            reason,
        };
        let (log, saved) = persist::open(storage, dir).map_err(|e| damaged(e.to_string()))?;
        let mut groups = BTreeMap::new();
        for (id, saved) in saved {
            let entry = Entry::restore(saved, now).map_err(|e| damaged(format!("{id}: {e}")))?;
            groups.insert(id, entry);
        }
        Ok(ConsumerGroups {
            groups: Mutex::new(groups),
            log,
        })
    }

    /// Logs `record` (under the groups lock, so records are in the order of the changes).
    fn write(&self, record: ConsumerGroupRecord) -> Result<Written> {
        Ok(self.log.write(record)?)
    }

    /// Waits for a record written under the lock to be durable (outside it).
    fn wait(&self, written: Option<Result<Written>>) -> Result<()> {
        match written {
            Some(written) => Ok(self.log.wait(written?)?),
            None => Ok(()),
        }
    }
}

#[derive(Debug, Default)]
struct Entry {
    group: ConsumerGroup,
    /// Per member: when it was last heard from (ms), its client id and host.
    heard: BTreeMap<String, (i64, String, String)>,
    /// The members by when they were last heard from, oldest first: who expires next.
    by_heard: BTreeSet<(i64, String)>,
    /// Per member: the topic names and the regular expression it subscribed with; what it
    /// subscribes to is the names and every topic the expression matches whole.
    subscriptions: BTreeMap<String, Subscription>,
}

/// A member's subscription as it gave it.
#[derive(Debug, Default, Clone)]
struct Subscription {
    names: BTreeSet<String>,
    regex: Option<(String, regex::Regex)>,
}

impl Entry {
    /// Member `id` heard from at `now` by `client` (client id, host).
    fn hear(&mut self, id: &str, now: i64, client: (String, String)) {
        if let Some((at, _, _)) = self.heard.get(id) {
            self.by_heard.remove(&(*at, id.to_owned()));
        }
        self.by_heard.insert((now, id.to_owned()));
        self.heard.insert(id.to_owned(), (now, client.0, client.1));
    }

    /// Forgets what the engine keeps beside the group of member `id`, which is gone.
    fn forget(&mut self, id: &str) {
        if let Some((at, _, _)) = self.heard.remove(id) {
            self.by_heard.remove(&(at, id.to_owned()));
        }
        self.subscriptions.remove(id);
    }

    /// Member `id`'s client and subscription as saved.
    fn saved_member(&self, id: &str) -> SavedMember {
        let (_, client_id, client_host) = self.heard.get(id).cloned().unwrap_or_default();
        let subscription = self.subscriptions.get(id).cloned().unwrap_or_default();
        SavedMember {
            client_id,
            client_host,
            names: subscription.names,
            regex: subscription.regex.map(|(pattern, _)| pattern),
        }
    }

    /// The record of what changed in group `id` since its epochs were `meta_before` (each
    /// changed member and target, then the epochs if they moved), `None` for nothing. Members
    /// gone are forgotten.
    fn record(&mut self, id: &str, meta_before: &GroupMeta) -> Option<ConsumerGroupRecord> {
        let changes = self.group.take_changes();
        let mut changed = Vec::new();
        for member_id in changes.members {
            let member = match self.group.members().get(&member_id) {
                Some(member) => Some(Box::new((member.clone(), self.saved_member(&member_id)))),
                None => {
                    self.forget(&member_id);
                    None
                }
            };
            changed.push(GroupChange::Member(member_id, member));
        }
        for member_id in changes.targets {
            let target = self.group.target(&member_id).cloned();
            changed.push(GroupChange::Target(member_id, target));
        }
        let meta = self.group.meta();
        if meta != *meta_before {
            changed.push(GroupChange::Meta(meta));
        }
        (!changed.is_empty()).then(|| ConsumerGroupRecord::Changed(id.to_owned(), changed))
    }

    /// The entry saved as `saved`, each member last heard from at `now`.
    fn restore(saved: SavedGroup, now: i64) -> std::result::Result<Entry, String> {
        let group = saved.group.restored()?;
        let mut entry = Entry {
            group,
            ..Entry::default()
        };
        for (id, member) in saved.members {
            if !entry.group.members().contains_key(&id) {
                return Err(format!("client details of {id}, who is no member"));
            }
            let regex = match member.regex {
                None => None,
                Some(pattern) => Some((pattern.clone(), compile(&pattern)?)),
            };
            entry.hear(&id, now, (member.client_id, member.client_host));
            let subscription = Subscription {
                names: member.names,
                regex,
            };
            entry.subscriptions.insert(id, subscription);
        }
        Ok(entry)
    }
}

/// `pattern` compiled to match whole topic names, as Kafka's `matcher(topic).matches()`.
fn compile(pattern: &str) -> std::result::Result<regex::Regex, String> {
    regex::Regex::new(&format!("^(?:{pattern})$")).map_err(|e| format!("{pattern}: {e}"))
}

impl Subscription {
    fn topics(&self, existing: &[String]) -> BTreeSet<String> {
        let mut topics = self.names.clone();
        if let Some((_, regex)) = &self.regex {
            topics.extend(existing.iter().filter(|t| regex.is_match(t)).cloned());
        }
        topics
    }
}

/// What a heartbeat says of the member's subscription: `None` for unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubscriptionChange {
    /// The topic names it subscribes to.
    pub names: Option<BTreeSet<String>>,
    /// A regular expression (RE2 syntax, matching whole topic names) whose topics it also
    /// subscribes to; empty for none.
    pub regex: Option<String>,
}

/// A consumer-protocol member as described.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerMemberDescription {
    /// Its id.
    pub member_id: String,
    /// Its client id.
    pub client_id: String,
    /// Its host.
    pub client_host: String,
    /// Its epoch.
    pub member_epoch: i32,
    /// The topics it subscribes to (by name, and those its expression matched).
    pub subscribed: BTreeSet<String>,
    /// The regular expression it subscribed with, if any.
    pub regex: Option<String>,
    /// The partitions it is to own.
    pub assigned: crate::groups::consumer::Assignment,
    /// Its target.
    pub target: crate::groups::consumer::Assignment,
}

/// A consumer-protocol group as described (ConsumerGroupDescribe).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupDescription {
    /// Kafka's state name: `Empty`, `Assigning`, `Reconciling` or `Stable`.
    pub state: &'static str,
    /// The group epoch.
    pub group_epoch: i32,
    /// The epoch of the targets.
    pub assignment_epoch: i32,
    /// The assignor the targets come from.
    pub assignor: &'static str,
    /// Its members.
    pub members: Vec<ConsumerMemberDescription>,
}

impl Log {
    /// A ConsumerGroupHeartbeat in `group` from `client` (client id, host), its subscription
    /// changed by `subscription` (`beat.subscribed` is what it resolves to: its names, and
    /// the topics its regular expression matches that `visible` lets it see, as Kafka filters
    /// them by the member's DESCRIBE permission); members silent for the group's session
    /// timeout are removed first. A regular expression that does not compile is
    /// [`Error::InvalidRegularExpression`].
    pub fn consumer_heartbeat(
        &self,
        group: &str,
        beat: Heartbeat,
        subscription: SubscriptionChange,
        client: (&str, &str),
        visible: &dyn Fn(&str) -> bool,
    ) -> Result<HeartbeatAnswer> {
        if beat.member_epoch == 0 {
            // A join: the id must be free or this protocol's (one protocol per group id).
            self.claim_group(group, GroupProtocol::Consumer, || {
                self.consumer_beat(group, beat, subscription, client, visible)
            })
        } else {
            self.consumer_beat(group, beat, subscription, client, visible)
        }
    }

    /// [`Log::consumer_heartbeat`] once a join has claimed the group id.
    fn consumer_beat(
        &self,
        group: &str,
        mut beat: Heartbeat,
        subscription: SubscriptionChange,
        client: (&str, &str),
        visible: &dyn Fn(&str) -> bool,
    ) -> Result<HeartbeatAnswer> {
        let regex = match subscription.regex.as_deref() {
            None => None,
            Some("") => Some(None),
            Some(pattern) => {
                let compiled = compile(pattern).map_err(Error::InvalidRegularExpression)?;
                Some(Some((pattern.to_owned(), compiled)))
            }
        };
        let now = self.clock().now_ms();
        let timeout = self
            .shared
            .group_configs
            .int(group, "consumer.session.timeout.ms");
        let mut existing = self.list_topics();
        existing.retain(|topic| visible(topic));
        let consumer_groups = &self.shared.consumer_groups;
        let (answer, written) = {
            let mut groups = consumer_groups.groups.lock();
            let is_new = !groups.contains_key(group);
            let entry = groups.entry(group.to_owned()).or_default();
            let meta_before = entry.group.meta();
            let member_id = beat.member_id.clone();
            let saved_before = entry.saved_member(&member_id);
            let run = || -> Result<HeartbeatAnswer> {
                expire(group, entry, now, timeout);
                if beat.member_epoch >= 0 {
                    if beat.member_epoch == 0 {
                        entry
                            .subscriptions
                            .insert(beat.member_id.clone(), Subscription::default());
                    }
                    if let Some(mine) = entry.subscriptions.get_mut(&beat.member_id) {
                        if let Some(names) = subscription.names {
                            mine.names = names;
                        }
                        if let Some(regex) = regex {
                            mine.regex = regex;
                        }
                        // What it subscribes to now: topics created since can match its expression.
                        beat.subscribed = Some(mine.topics(&existing));
                    }
                }
                let mut subscribed: BTreeSet<String> =
                    entry.group.subscribed_topics().cloned().collect();
                subscribed.extend(beat.subscribed.iter().flatten().cloned());
                let topics: BTreeMap<String, u32> = subscribed
                    .into_iter()
                    .filter_map(|t| Some((t.clone(), self.partition_count(&t).ok()?)))
                    .collect();
                let (member, epoch) = (beat.member_id.clone(), beat.member_epoch);
                let answer = entry.group.heartbeat(beat, &topics)?;
                if epoch >= 0 {
                    entry.hear(&member, now, (client.0.to_owned(), client.1.to_owned()));
                    // Its client or its pattern changed with nothing else: still a change.
                    if entry.saved_member(&member) != saved_before
                        && entry.group.members().contains_key(&member)
                    {
                        entry.group.note_changed(&member);
                    }
                }
                Ok(answer)
            };
            let answer = run();
            let written = match is_new && entry.group.members().is_empty() {
                // A heartbeat that created nothing leaves nothing behind.
                true => {
                    groups.remove(group);
                    None
                }
                false => {
                    // A refused heartbeat leaves no trace of a member it would have added
                    // (a join refused UNRELEASED_INSTANCE_ID).
                    if !entry.group.members().contains_key(&member_id) {
                        entry.forget(&member_id);
                    }
                    let record = entry.record(group, &meta_before);
                    record.map(|record| consumer_groups.write(record))
                }
            };
            (answer, written)
        };
        // Durable before the member hears of it.
        consumer_groups.wait(written)?;
        answer
    }

    /// Removes the members of every consumer-protocol group whose session ran out by `now`,
    /// so a group whose members all died empties without a heartbeat.
    pub(crate) fn expire_consumer_members(&self, now: i64) {
        let consumer_groups = &self.shared.consumer_groups;
        let mut written = Vec::new();
        {
            let mut groups = consumer_groups.groups.lock();
            for (group, entry) in groups.iter_mut() {
                let timeout = self
                    .shared
                    .group_configs
                    .int(group, "consumer.session.timeout.ms");
                // Most rounds expire no one: the oldest session says so without a copy.
                let due = entry
                    .by_heard
                    .first()
                    .is_some_and(|(at, _)| now - at > timeout);
                if !due {
                    continue;
                }
                let meta_before = entry.group.meta();
                if expire(group, entry, now, timeout)
                    && let Some(record) = entry.record(group, &meta_before)
                {
                    written.push(consumer_groups.write(record));
                }
            }
        }
        for written in written {
            if let Err(e) = consumer_groups.wait(Some(written)) {
                tracing::error!(error = %e, "saving consumer group state failed");
            }
        }
    }

    /// The heartbeat interval of consumer group `group` (`consumer.heartbeat.interval.ms`).
    pub fn consumer_heartbeat_interval_ms(&self, group: &str) -> i64 {
        self.shared
            .group_configs
            .int(group, "consumer.heartbeat.interval.ms")
    }

    /// Every group that has had consumer-protocol members and was not deleted, sorted.
    pub fn consumer_group_ids(&self) -> Vec<String> {
        self.shared
            .consumer_groups
            .groups
            .lock()
            .keys()
            .cloned()
            .collect()
    }

    /// Forgets consumer-protocol group `group` (DeleteGroups); refused while it has members.
    /// Whether there was one.
    pub(crate) fn delete_consumer_group(&self, group: &str) -> Result<bool> {
        let consumer_groups = &self.shared.consumer_groups;
        let written = {
            let mut groups = consumer_groups.groups.lock();
            match groups.get(group) {
                Some(entry) if !entry.group.members().is_empty() => {
                    return Err(GroupError::NonEmptyGroup.into());
                }
                Some(_) => {
                    groups.remove(group);
                    consumer_groups.write(ConsumerGroupRecord::Removed(group.to_owned()))
                }
                None => return Ok(false),
            }
        };
        consumer_groups.wait(Some(written))?;
        Ok(true)
    }

    /// Consumer-protocol group `group`'s epoch and members, `None` if it never had any (or
    /// was deleted).
    pub fn consumer_group_members(
        &self,
        group: &str,
    ) -> Option<(i32, Vec<ConsumerMemberDescription>)> {
        self.describe_consumer_group(group)
            .map(|d| (d.group_epoch, d.members))
    }

    /// Consumer-protocol group `group` whole, `None` if it never had members (or was
    /// deleted).
    pub fn describe_consumer_group(&self, group: &str) -> Option<ConsumerGroupDescription> {
        let groups = self.shared.consumer_groups.groups.lock();
        let entry = groups.get(group)?;
        let members = entry
            .group
            .members()
            .iter()
            .map(|(id, m)| {
                let (_, client_id, client_host) = entry.heard.get(id).cloned().unwrap_or_default();
                ConsumerMemberDescription {
                    member_id: id.clone(),
                    client_id,
                    client_host,
                    member_epoch: m.reconciled.member_epoch,
                    subscribed: m.subscribed.clone(),
                    regex: entry
                        .subscriptions
                        .get(id)
                        .and_then(|s| s.regex.as_ref().map(|(pattern, _)| pattern.clone())),
                    assigned: m.reconciled.assigned.clone(),
                    target: entry.group.target(id).cloned().unwrap_or_default(),
                }
            })
            .collect();
        Some(ConsumerGroupDescription {
            state: entry.group.state_name(),
            group_epoch: entry.group.group_epoch(),
            assignment_epoch: entry.group.assignment_epoch(),
            assignor: entry.group.assignor().name(),
            members,
        })
    }

    /// Whether an OffsetFetch (v9) by `member` with `epoch` may read `group`'s offsets: anyone
    /// without a member id and epoch (an admin), else for a group of the consumer protocol
    /// with members only a member with its current epoch (STALE_MEMBER_EPOCH,
    /// UNKNOWN_MEMBER_ID), as Kafka checks it.
    pub fn validate_group_fetch(&self, group: &str, member: &str, epoch: i32) -> Result<()> {
        if member.is_empty() && epoch < 0 {
            return Ok(());
        }
        let groups = self.shared.consumer_groups.groups.lock();
        let Some(entry) = groups.get(group).filter(|e| !e.group.members().is_empty()) else {
            return Ok(());
        };
        let Some(found) = entry.group.members().get(member) else {
            return Err(GroupError::UnknownMember.into());
        };
        if found.reconciled.member_epoch != epoch {
            return Err(GroupError::StaleMemberEpoch.into());
        }
        Ok(())
    }

    /// Whether an OffsetCommit (or TxnOffsetCommit) by `member` with `epoch` may commit in
    /// `group`: for a group of the consumer protocol with members, the member's current epoch
    /// (else STALE_MEMBER_EPOCH, or UNKNOWN_MEMBER_ID); otherwise the classic group's rules.
    pub fn validate_group_commit(
        &self,
        group: &str,
        member: &str,
        epoch: i32,
        now: i64,
    ) -> Result<()> {
        {
            let groups = self.shared.consumer_groups.groups.lock();
            if let Some(entry) = groups.get(group)
                && !entry.group.members().is_empty()
            {
                if epoch < 0 && member.is_empty() {
                    return Err(GroupError::UnknownMember.into());
                }
                let Some(found) = entry.group.members().get(member) else {
                    return Err(GroupError::UnknownMember.into());
                };
                if found.reconciled.member_epoch != epoch {
                    return Err(GroupError::StaleMemberEpoch.into());
                }
                return Ok(());
            }
        }
        self.shared
            .coordinator
            .validate_commit(group, member, epoch, now)
            .map_err(Error::from)
    }
}

/// Removes the members of `group` silent for longer than `timeout_ms`; whether there were any.
/// It looks only at those: the members are ordered by when they were last heard from.
fn expire(group: &str, entry: &mut Entry, now: i64, timeout_ms: i64) -> bool {
    let mut expired = false;
    while let Some((at, member)) = entry.by_heard.first().cloned() {
        if now - at <= timeout_ms {
            break;
        }
        expired = true;
        tracing::info!(
            group,
            member = member.as_str(),
            "consumer-group member's session expired"
        );
        entry.forget(&member);
        entry.group.remove(&member);
    }
    expired
}
