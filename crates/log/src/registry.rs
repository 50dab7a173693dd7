//! [`TopicRegistry`]: the engine's open topics by name. Names are unique (a creation checks
//! and inserts under one write lock, so two creations of one name cannot both succeed), and
//! a topic's stable id, minted here, is its own for life.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::error::{Error, Result};
use crate::topic::Topic;

/// The open topics.
#[derive(Debug, Default)]
pub(crate) struct TopicRegistry {
    topics: RwLock<BTreeMap<String, Arc<Topic>>>,
}

impl TopicRegistry {
    /// The topics found when the engine opened.
    pub(crate) fn new(topics: BTreeMap<String, Arc<Topic>>) -> TopicRegistry {
        TopicRegistry {
            topics: RwLock::new(topics),
        }
    }

    /// The topic named `name`.
    pub(crate) fn get(&self, name: &str) -> Result<Arc<Topic>> {
        self.topics
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::UnknownTopic(name.to_owned()))
    }

    /// Registers the topic `make` creates, unless `name` is taken (then `make` is not called).
    pub(crate) fn create(
        &self,
        name: &str,
        make: impl FnOnce() -> Result<Topic>,
    ) -> Result<Arc<Topic>> {
        let mut topics = self.topics.write();
        if topics.contains_key(name) {
            return Err(Error::TopicExists(name.to_owned()));
        }
        let topic = Arc::new(make()?);
        topics.insert(name.to_owned(), topic.clone());
        Ok(topic)
    }

    /// Unregisters `name`; its files are the caller's to remove.
    pub(crate) fn remove(&self, name: &str) -> Result<Arc<Topic>> {
        self.topics
            .write()
            .remove(name)
            .ok_or_else(|| Error::UnknownTopic(name.to_owned()))
    }

    /// Topic names, sorted.
    pub(crate) fn names(&self) -> Vec<String> {
        self.topics.read().keys().cloned().collect()
    }

    /// The name of the topic whose stable id is `id`; the zero id (Kafka's "no id") names
    /// none.
    pub(crate) fn name_of(&self, id: &[u8; 16]) -> Option<String> {
        if *id == [0; 16] {
            return None;
        }
        self.topics
            .read()
            .iter()
            .find(|(_, topic)| topic.id == *id)
            .map(|(name, _)| name.clone())
    }

    /// Every topic, by name, as of now.
    pub(crate) fn snapshot(&self) -> Vec<(String, Arc<Topic>)> {
        self.topics
            .read()
            .iter()
            .map(|(name, topic)| (name.clone(), topic.clone()))
            .collect()
    }

    /// Every topic, as of now.
    pub(crate) fn all(&self) -> Vec<Arc<Topic>> {
        self.topics.read().values().cloned().collect()
    }
}

/// A fresh stable id for topic `name`, unique enough for one machine: name, time and process
/// mixed by two different hashes.
pub(crate) fn new_topic_id(name: &str, now_ms: i64) -> [u8; 16] {
    let seed = format!(
        "{name}/{now_ms}/{}/{:?}",
        std::process::id(),
        std::time::Instant::now()
    );
    let a = logd_partition::murmur2(seed.as_bytes()) as u32;
    let b = logd_partition::crc32(seed.as_bytes());
    let c = logd_partition::murmur2(format!("{seed}#").as_bytes()) as u32;
    let d = logd_partition::crc32(format!("#{seed}").as_bytes());
    let mut id = [0u8; 16];
    for (chunk, word) in id.chunks_mut(4).zip([a, b, c, d]) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    id
}
