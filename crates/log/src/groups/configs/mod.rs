//! Group configs: Kafka's per-group settings (`share.record.lock.duration.ms`,
//! `consumer.session.timeout.ms`, `errors.deadletterqueue.topic.name`, ...), set and described
//! through [`Log::alter_group_configs`] and [`Log::group_configs`] (the broker's
//! IncrementalAlterConfigs and DescribeConfigs on GROUP resources), with Kafka 4.4's names,
//! defaults, checks and messages (`defs.rs`), durable in `group_configs.json` (`store.rs`).
//!
//! As in Kafka, a group's configs are its own resource: they can be set before the group
//! exists and outlive its deletion.

mod defs;
mod store;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use logd_storage::Storage;
use parking_lot::Mutex;

pub use defs::GroupConfigType;
pub(crate) use defs::duration_ms;
use store::GroupConfigMap;
pub use store::decode;

use crate::engine::Log;
use crate::error::{Error, Result};

/// One of a group's configs as described.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfigEntry {
    /// Kafka's name.
    pub name: &'static str,
    /// The value in effect: set on the group, or the default.
    pub value: String,
    /// Whether it is set on the group (Kafka's `GROUP_CONFIG` source) rather than the default.
    pub set: bool,
    /// Its type.
    pub config_type: GroupConfigType,
    /// The broker config it falls back to (DescribeConfigs' synonym).
    pub synonym: &'static str,
    /// The default.
    pub default: &'static str,
}

/// Every group's configs, behind one lock that also orders the file's rewrites.
#[derive(Debug)]
pub(crate) struct GroupConfigs {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    groups: Mutex<GroupConfigMap>,
}

impl GroupConfigs {
    /// The configs stored in the data directory `dir`; a damaged file is an error, so that a
    /// change never replaces configs that could not be read.
    pub(crate) fn open(storage: Arc<dyn Storage>, dir: &Path) -> Result<GroupConfigs> {
        let groups = store::load(&*storage, dir)?;
        Ok(GroupConfigs {
            storage,
            dir: dir.to_owned(),
            groups: Mutex::new(groups),
        })
    }

    fn describe(&self, group: &str) -> Vec<GroupConfigEntry> {
        let groups = self.groups.lock();
        let set = groups.get(group);
        defs::DEFS
            .iter()
            .filter_map(|def| {
                let value = set.and_then(|configs| configs.get(def.name));
                (value.is_some() || !def.internal).then(|| GroupConfigEntry {
                    name: def.name,
                    value: value.map_or_else(|| def.default.to_owned(), Clone::clone),
                    set: value.is_some(),
                    config_type: def.config_type(),
                    synonym: def.synonym,
                    default: def.default,
                })
            })
            .collect()
    }

    /// The value of config `name` in effect for `group` (empty for a name not defined).
    pub(crate) fn value(&self, group: &str, name: &str) -> String {
        let groups = self.groups.lock();
        match groups.get(group).and_then(|configs| configs.get(name)) {
            Some(value) => value.clone(),
            None => defs::def(name).map_or_else(String::new, |d| d.default.to_owned()),
        }
    }

    /// The integer config `name` in effect for `group` (stored values passed their checks).
    pub(crate) fn int(&self, group: &str, name: &str) -> i64 {
        self.value(group, name).parse().unwrap_or_default()
    }

    fn alter(
        &self,
        group: &str,
        changes: &[(&str, Option<&str>)],
        validate_only: bool,
    ) -> Result<()> {
        if group.is_empty() {
            return Err(Error::InvalidGroupConfig(
                "the group id must not be empty".into(),
            ));
        }
        let mut groups = self.groups.lock();
        let mut configs = groups.get(group).cloned().unwrap_or_default();
        // Kafka first refuses unknown names among the values set (deleting an unknown name is
        // a no-op), then each value.
        if let Some((name, _)) = changes
            .iter()
            .find(|(name, value)| value.is_some() && defs::def(name).is_none())
        {
            return Err(Error::InvalidGroupConfig(format!(
                "Unknown group config name: {name}"
            )));
        }
        for (name, value) in changes {
            match (defs::def(name), value) {
                (Some(def), Some(value)) => {
                    let parsed = def.parse(value).map_err(Error::InvalidGroupConfig)?;
                    configs.insert(def.name.to_owned(), parsed);
                }
                _ => {
                    configs.remove(*name);
                }
            }
        }
        if validate_only {
            return Ok(());
        }
        let mut next = groups.clone();
        if configs.is_empty() {
            next.remove(group);
        } else {
            next.insert(group.to_owned(), configs);
        }
        if next != *groups {
            store::save(&*self.storage, &self.dir, &next)?;
            *groups = next;
        }
        Ok(())
    }
}

impl Log {
    /// Group `group`'s configs: every one of Kafka's that is not internal, with its value in
    /// effect, and any internal one set on the group (as Kafka's DescribeConfigs shows them).
    /// A group that does not exist has its defaults.
    pub fn group_configs(&self, group: &str) -> Vec<GroupConfigEntry> {
        self.shared.group_configs.describe(group)
    }

    /// Sets (`Some(value)`) or returns to the default (`None`) configs of group `group`, all
    /// or none, durably before it returns; with `validate_only`, only checks them. A value
    /// Kafka would refuse is [`Error::InvalidGroupConfig`] with Kafka's message.
    pub fn alter_group_configs(
        &self,
        group: &str,
        changes: &[(&str, Option<&str>)],
        validate_only: bool,
    ) -> Result<()> {
        self.shared
            .group_configs
            .alter(group, changes, validate_only)?;
        if !validate_only {
            tracing::info!(group, "group configs altered");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
