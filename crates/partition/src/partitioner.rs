//! Partitioners: keyed records by hash, keyless ones sticky or round-robin.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::hash::{crc32, murmur2};

/// Chooses the partition of each record.
pub trait Partitioner: Send + Sync + std::fmt::Debug {
    /// The partition, in `0..partition_count`, for a record with `key` (`None` for no key).
    /// `partition_count` must be positive.
    fn partition(&self, key: Option<&[u8]>, partition_count: u32) -> u32;

    /// Tells a sticky partitioner that the batch it was filling for `partition` is complete, so
    /// keyless records should move on. Hash partitioners ignore it.
    fn batch_complete(&self, _partition: u32, _partition_count: u32) {}
}

/// Kafka's Java default for keyed records: `toPositive(murmur2(key)) % partitions`
/// (librdkafka's `murmur2` partitioner gives the same). Keyless records go to `keyless`.
#[derive(Debug, Default)]
pub struct KeyHash<K = Sticky> {
    keyless: K,
}

impl<K: Partitioner> KeyHash<K> {
    /// Hashes keys with murmur2 and hands keyless records to `keyless`.
    pub fn new(keyless: K) -> KeyHash<K> {
        KeyHash { keyless }
    }
}

impl<K: Partitioner> Partitioner for KeyHash<K> {
    fn partition(&self, key: Option<&[u8]>, partition_count: u32) -> u32 {
        match key {
            // Java's toPositive masks the sign bit rather than taking the absolute value.
            Some(key) => (murmur2(key) as u32 & 0x7fff_ffff) % partition_count,
            None => self.keyless.partition(None, partition_count),
        }
    }

    fn batch_complete(&self, partition: u32, partition_count: u32) {
        self.keyless.batch_complete(partition, partition_count);
    }
}

/// librdkafka's `consistent`: `crc32(key) % partitions`; a missing key hashes as empty, so
/// every keyless record goes to the same partition.
#[derive(Debug, Default, Clone, Copy)]
pub struct Consistent;

impl Partitioner for Consistent {
    fn partition(&self, key: Option<&[u8]>, partition_count: u32) -> u32 {
        crc32(key.unwrap_or_default()) % partition_count
    }
}

/// librdkafka's default, `consistent_random`: `crc32(key) % partitions` for non-empty keys;
/// empty and missing keys go to `keyless`.
#[derive(Debug, Default)]
pub struct ConsistentRandom<K = Sticky> {
    keyless: K,
}

impl<K: Partitioner> ConsistentRandom<K> {
    /// Hashes non-empty keys with CRC32 and hands the rest to `keyless`.
    pub fn new(keyless: K) -> ConsistentRandom<K> {
        ConsistentRandom { keyless }
    }
}

impl<K: Partitioner> Partitioner for ConsistentRandom<K> {
    fn partition(&self, key: Option<&[u8]>, partition_count: u32) -> u32 {
        match key {
            Some(key) if !key.is_empty() => crc32(key) % partition_count,
            _ => self.keyless.partition(None, partition_count),
        }
    }

    fn batch_complete(&self, partition: u32, partition_count: u32) {
        self.keyless.batch_complete(partition, partition_count);
    }
}

/// Keyless records go to one partition until its batch is complete, then to another
/// (KIP-480): batches fill up instead of spreading one record per partition.
#[derive(Debug)]
pub struct Sticky {
    current: AtomicU32,
    /// SplitMix64 state for choosing the next partition; seedable for tests.
    rng: AtomicU64,
}

impl Default for Sticky {
    fn default() -> Sticky {
        // Any seed works; the sticky choice only has to spread batches.
        Sticky::with_seed(0x853c_49e6_748f_ea9b)
    }
}

impl Sticky {
    /// A sticky partitioner whose partition choices follow `seed`.
    pub fn with_seed(seed: u64) -> Sticky {
        let sticky = Sticky {
            current: AtomicU32::new(u32::MAX),
            rng: AtomicU64::new(seed),
        };
        sticky
            .current
            .store(sticky.next_random(), Ordering::Relaxed);
        sticky
    }

    fn next_random(&self) -> u32 {
        let mut z = self
            .rng
            .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
            .wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) as u32
    }
}

impl Partitioner for Sticky {
    fn partition(&self, _key: Option<&[u8]>, partition_count: u32) -> u32 {
        self.current.load(Ordering::Relaxed) % partition_count
    }

    fn batch_complete(&self, partition: u32, partition_count: u32) {
        if partition_count <= 1 || self.partition(None, partition_count) != partition {
            return;
        }
        // Move to a different partition, chosen at random, as the Java client does.
        let step = 1 + self.next_random() % (partition_count - 1);
        self.current
            .store((partition + step) % partition_count, Ordering::Relaxed);
    }
}

/// Every record to the next partition in turn, keys ignored.
#[derive(Debug, Default)]
pub struct RoundRobin {
    next: AtomicU32,
}

impl Partitioner for RoundRobin {
    fn partition(&self, _key: Option<&[u8]>, partition_count: u32) -> u32 {
        self.next.fetch_add(1, Ordering::Relaxed) % partition_count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys of librdkafka's tests/0048-partitioner.c, `do_test_partitioners`.
    const KEYS: [Option<&[u8]>; 5] = [
        None,
        Some(b""),
        Some(b"23456"),
        Some(b"this is another string with more length to it perhaps"),
        Some(b"hejsan"),
    ];

    #[test]
    fn consistent_matches_librdkafkas_expected_partitions() {
        // Expected values from the same test: CRC32 of each key ("crc32" on OS X).
        let hashes = [0x0u32, 0x0, 0xb1b4_51d7, 0xb015_0df7, 0xd077_037e];
        for partitions in [7u32, 17] {
            for (key, hash) in KEYS.iter().zip(hashes) {
                assert_eq!(
                    Consistent.partition(*key, partitions),
                    hash % partitions,
                    "{key:?}"
                );
            }
            let random = ConsistentRandom::new(Sticky::with_seed(1));
            for (key, hash) in KEYS.iter().zip(hashes).skip(2) {
                assert_eq!(random.partition(*key, partitions), hash % partitions);
            }
        }
    }

    #[test]
    fn key_hash_matches_librdkafkas_murmur2_partitions() {
        // Expected values from the same test, computed with Kafka's Java murmur2 (its
        // tests/java/Murmur2Cli) and masked positive; the null key hashes as empty there.
        let hashes = [
            0x106e_08d9u32,
            0x106e_08d9,
            0x058d_780f,
            0x4f77_03da,
            0x5ec1_9395,
        ];
        let partitioner = KeyHash::new(Sticky::default());
        for partitions in [7u32, 17] {
            for (key, hash) in KEYS.iter().zip(hashes).skip(1) {
                assert_eq!(
                    partitioner.partition(*key, partitions),
                    hash % partitions,
                    "{key:?}"
                );
            }
        }
    }

    #[test]
    fn a_negative_murmur2_is_masked_not_negated() {
        // murmur2("21") = -973932308: Java takes & 0x7fffffff, which differs from abs().
        let expected = (-973_932_308i32 as u32 & 0x7fff_ffff) % 10;
        assert_eq!(
            KeyHash::new(RoundRobin::default()).partition(Some(b"21"), 10),
            expected
        );
        assert_ne!(expected, 973_932_308 % 10);
    }

    #[test]
    fn sticky_keeps_a_partition_until_the_batch_completes() {
        let sticky = Sticky::with_seed(42);
        let first = sticky.partition(None, 6);
        assert!((0..50).all(|_| sticky.partition(None, 6) == first));
        sticky.batch_complete(first, 6);
        let second = sticky.partition(None, 6);
        assert_ne!(second, first, "moves on after the batch");
        // A completion for a partition it already left changes nothing.
        sticky.batch_complete(first, 6);
        assert_eq!(sticky.partition(None, 6), second);
        // Over many batches every partition is used.
        let mut seen = [false; 6];
        for _ in 0..200 {
            let p = sticky.partition(None, 6);
            seen[p as usize] = true;
            sticky.batch_complete(p, 6);
        }
        assert!(seen.iter().all(|s| *s));
        assert_eq!(Sticky::default().partition(None, 1), 0);
    }

    #[test]
    fn round_robin_cycles_through_every_partition() {
        let rr = RoundRobin::default();
        let got: Vec<u32> = (0..8).map(|_| rr.partition(Some(b"ignored"), 4)).collect();
        assert_eq!(got, vec![0, 1, 2, 3, 0, 1, 2, 3]);
    }
}
