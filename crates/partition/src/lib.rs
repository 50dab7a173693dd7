//! `logd-partition`: which partition a record goes to. Keyed records hash exactly as the
//! clients users already run (Kafka's Java client: murmur2; librdkafka: CRC32), so the same
//! key lands in the same partition whichever of them wrote it. Keyless records go sticky (one
//! partition per batch, KIP-480) or round-robin.

mod hash;
mod partitioner;

pub use hash::{crc32, murmur2};
pub use partitioner::{Consistent, ConsistentRandom, KeyHash, Partitioner, RoundRobin, Sticky};
