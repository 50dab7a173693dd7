//! The body layout of every request logd serves, per API and version: what the walk in
//! `mod.rs` checks a body against. A table, nothing else: adding a served version adds a line
//! here (and `every_served_request_has_a_layout` fails until it does).

use kafka_protocol::messages::ApiKey;

/// One field of a request's layout.
#[derive(Debug, Clone)]
pub(super) enum Field {
    /// A fixed-size integer or boolean.
    Fixed(usize),
    /// `i16` length (-1 for null), then that many bytes.
    Str,
    /// `i32` length (-1 for null), then that many bytes.
    Bytes,
    /// `i32` count (-1 for null), then that many elements of this layout.
    Array(Vec<Field>),
    /// Unsigned varint length + 1 (0 for null), then that many bytes (flexible versions).
    CompactStr,
    /// Unsigned varint count + 1 (0 for null), then that many elements (flexible versions).
    CompactArray(Vec<Field>),
    /// A tagged-field section: unsigned varint count, then per field a varint tag, a varint
    /// size and that many bytes (flexible versions, after each structure).
    Tags,
    /// A tagged-field section with fields the codec knows: it decodes those by their layout,
    /// ignoring the size sent, so each must take exactly its declared size (or the codec would
    /// read from where this walk did not look).
    KnownTags(Vec<(u32, Vec<Field>)>),
    /// A nullable struct: `i8` 1, then its fields; any other byte is null (the codec's
    /// `OptionStruct` reads it so).
    NullableStruct(Vec<Field>),
}

pub(super) use Field::{
    Array, Bytes, CompactArray, CompactStr, Fixed, KnownTags, NullableStruct, Str, Tags,
};

pub(super) const I8: Field = Fixed(1);
pub(super) const I16: Field = Fixed(2);
pub(super) const I32: Field = Fixed(4);
pub(super) const I64: Field = Fixed(8);
pub(super) const BOOL: Field = Fixed(1);

/// Share-group acknowledgements: first and last offset, then the types.
fn acknowledgement_batches() -> Field {
    CompactArray(vec![I64, I64, CompactArray(vec![I8]), Tags])
}

/// The body layout of `key` at `version`, for the versions logd serves.
pub(super) fn layout(key: ApiKey, version: i16) -> Option<Vec<Field>> {
    let v = version;
    Some(match key {
        ApiKey::Metadata => match v {
            0..=3 => vec![Array(vec![Str])],
            4..=7 => vec![Array(vec![Str]), BOOL],
            8 => vec![Array(vec![Str]), BOOL, BOOL, BOOL],
            9 => vec![CompactArray(vec![CompactStr, Tags]), BOOL, BOOL, BOOL, Tags],
            // Topics by id (16 bytes) and nullable name.
            10 => vec![
                CompactArray(vec![Fixed(16), CompactStr, Tags]),
                BOOL,
                BOOL,
                BOOL,
                Tags,
            ],
            // Without include_cluster_authorized_operations.
            _ => vec![
                CompactArray(vec![Fixed(16), CompactStr, Tags]),
                BOOL,
                BOOL,
                Tags,
            ],
        },
        ApiKey::Produce => match v {
            3..=8 => vec![Str, I16, I32, Array(vec![Str, Array(vec![I32, Bytes])])],
            // Records as compact (nullable) bytes: the same encoding as a compact string.
            _ => vec![
                CompactStr,
                I16,
                I32,
                CompactArray(vec![
                    CompactStr,
                    CompactArray(vec![I32, CompactStr, Tags]),
                    Tags,
                ]),
                Tags,
            ],
        },
        ApiKey::Fetch => {
            if v >= 12 {
                // A topic is a name (v12) or a 16-byte id (v13+); the replica id left the
                // request for a tagged field in v15.
                let topic = || if v >= 13 { Fixed(16) } else { CompactStr };
                let mut fields = Vec::new();
                if v <= 14 {
                    fields.push(I32);
                }
                fields.extend([I32, I32, I32, I8, I32, I32]);
                // A partition's known tags: the replica's directory id (v17+) and high
                // watermark (v18).
                let partition_tags = KnownTags(vec![(0, vec![Fixed(16)]), (1, vec![I64])]);
                fields.push(CompactArray(vec![
                    topic(),
                    CompactArray(vec![I32, I32, I64, I32, I64, I32, partition_tags]),
                    Tags,
                ]));
                fields.push(CompactArray(vec![topic(), CompactArray(vec![I32]), Tags]));
                fields.push(CompactStr);
                // The request's known tags: the cluster id and (v15+) the replica's state.
                fields.push(KnownTags(vec![
                    (0, vec![CompactStr]),
                    (1, vec![I32, I64, Tags]),
                ]));
                return Some(fields);
            }
            let mut fields = vec![I32, I32, I32, I32, I8];
            if v >= 7 {
                fields.extend([I32, I32]);
            }
            let mut partition = vec![I32];
            if v >= 9 {
                partition.push(I32);
            }
            partition.push(I64);
            if v >= 5 {
                partition.push(I64);
            }
            partition.push(I32);
            fields.push(Array(vec![Str, Array(partition)]));
            if v >= 7 {
                fields.push(Array(vec![Str, Array(vec![I32])]));
            }
            if v >= 11 {
                fields.push(Str);
            }
            fields
        }
        ApiKey::ListOffsets => match v {
            1 => vec![I32, Array(vec![Str, Array(vec![I32, I64])])],
            2 | 3 => vec![I32, I8, Array(vec![Str, Array(vec![I32, I64])])],
            // The client's current leader epoch before each timestamp.
            4 | 5 => vec![I32, I8, Array(vec![Str, Array(vec![I32, I32, I64])])],
            _ => {
                let mut fields = vec![
                    I32,
                    I8,
                    CompactArray(vec![
                        CompactStr,
                        CompactArray(vec![I32, I32, I64, Tags]),
                        Tags,
                    ]),
                ];
                if v >= 10 {
                    fields.push(I32); // timeout_ms
                }
                fields.push(Tags);
                fields
            }
        },
        ApiKey::CreateTopics => match v {
            2..=4 => vec![
                Array(vec![
                    Str,
                    I32,
                    I16,
                    Array(vec![I32, Array(vec![I32])]),
                    Array(vec![Str, Str]),
                ]),
                I32,
                BOOL,
            ],
            _ => vec![
                CompactArray(vec![
                    CompactStr,
                    I32,
                    I16,
                    CompactArray(vec![I32, CompactArray(vec![I32]), Tags]),
                    CompactArray(vec![CompactStr, CompactStr, Tags]),
                    Tags,
                ]),
                I32,
                BOOL,
                Tags,
            ],
        },
        ApiKey::DeleteTopics => match v {
            1..=3 => vec![Array(vec![Str]), I32],
            4 | 5 => vec![CompactArray(vec![CompactStr]), I32, Tags],
            // Topics by name (nullable) or 16-byte id.
            _ => vec![CompactArray(vec![CompactStr, Fixed(16), Tags]), I32, Tags],
        },
        ApiKey::CreatePartitions => match v {
            0 | 1 => vec![
                Array(vec![Str, I32, Array(vec![Array(vec![I32])])]),
                I32,
                BOOL,
            ],
            _ => vec![
                CompactArray(vec![
                    CompactStr,
                    I32,
                    CompactArray(vec![CompactArray(vec![I32]), Tags]),
                    Tags,
                ]),
                I32,
                BOOL,
                Tags,
            ],
        },
        ApiKey::InitProducerId => {
            let mut fields = match v {
                0..=1 => vec![Str, I32],
                _ => vec![CompactStr, I32],
            };
            if v >= 3 {
                fields.extend([I64, I16]);
            }
            if v >= 2 {
                fields.push(Tags);
            }
            fields
        }
        ApiKey::AddPartitionsToTxn => match v {
            0..=2 => vec![Str, I64, I16, Array(vec![Str, Array(vec![I32])])],
            _ => vec![
                CompactStr,
                I64,
                I16,
                CompactArray(vec![CompactStr, CompactArray(vec![I32]), Tags]),
                Tags,
            ],
        },
        ApiKey::AddOffsetsToTxn => match v {
            0..=2 => vec![Str, I64, I16, Str],
            _ => vec![CompactStr, I64, I16, CompactStr, Tags],
        },
        ApiKey::EndTxn => match v {
            0..=2 => vec![Str, I64, I16, BOOL],
            _ => vec![CompactStr, I64, I16, BOOL, Tags],
        },
        ApiKey::TxnOffsetCommit => match v {
            0..=1 => vec![
                Str,
                Str,
                I64,
                I16,
                Array(vec![Str, Array(vec![I32, I64, Str])]),
            ],
            2 => vec![
                Str,
                Str,
                I64,
                I16,
                Array(vec![Str, Array(vec![I32, I64, I32, Str])]),
            ],
            _ => vec![
                CompactStr,
                CompactStr,
                I64,
                I16,
                I32,
                CompactStr,
                CompactStr,
                CompactArray(vec![
                    CompactStr,
                    CompactArray(vec![I32, I64, I32, CompactStr, Tags]),
                    Tags,
                ]),
                Tags,
            ],
        },
        ApiKey::DescribeTransactions => vec![CompactArray(vec![CompactStr]), Tags],
        ApiKey::WriteTxnMarkers => vec![
            CompactArray(vec![
                I64,
                I16,
                BOOL,
                CompactArray(vec![CompactStr, CompactArray(vec![I32]), Tags]),
                I32,
                Tags,
            ]),
            Tags,
        ],
        ApiKey::ListTransactions => match v {
            0 => vec![
                CompactArray(vec![CompactStr]),
                CompactArray(vec![I64]),
                Tags,
            ],
            _ => vec![
                CompactArray(vec![CompactStr]),
                CompactArray(vec![I64]),
                I64,
                Tags,
            ],
        },
        ApiKey::DescribeCluster => match v {
            0 => vec![BOOL, Tags],
            1 => vec![BOOL, I8, Tags],
            _ => vec![BOOL, I8, BOOL, Tags],
        },
        ApiKey::OffsetForLeaderEpoch => match v {
            2 => vec![Array(vec![Str, Array(vec![I32, I32, I32])])],
            3 => vec![I32, Array(vec![Str, Array(vec![I32, I32, I32])])],
            _ => vec![
                I32,
                CompactArray(vec![
                    CompactStr,
                    CompactArray(vec![I32, I32, I32, Tags]),
                    Tags,
                ]),
                Tags,
            ],
        },
        ApiKey::AlterConfigs => match v {
            0 | 1 => vec![Array(vec![I8, Str, Array(vec![Str, Str])]), BOOL],
            _ => vec![
                CompactArray(vec![
                    I8,
                    CompactStr,
                    CompactArray(vec![CompactStr, CompactStr, Tags]),
                    Tags,
                ]),
                BOOL,
                Tags,
            ],
        },
        // Topics, the partition limit, then a nullable cursor (a struct: -1 for null, else
        // 1 and its fields), which the walk checks as a one-field array.
        ApiKey::DescribeTopicPartitions => vec![
            CompactArray(vec![CompactStr, Tags]),
            I32,
            NullableStruct(vec![CompactStr, I32, Tags]),
            Tags,
        ],
        ApiKey::DeleteRecords => match v {
            0 | 1 => vec![Array(vec![Str, Array(vec![I32, I64])]), I32],
            _ => vec![
                CompactArray(vec![CompactStr, CompactArray(vec![I32, I64, Tags]), Tags]),
                I32,
                Tags,
            ],
        },
        // The consumer group protocol (KIP-848); v1 adds the topic regex.
        ApiKey::ConsumerGroupHeartbeat => {
            let mut fields = vec![
                CompactStr,
                CompactStr,
                I32,
                CompactStr,
                CompactStr,
                I32,
                CompactArray(vec![CompactStr]),
            ];
            if v >= 1 {
                fields.push(CompactStr);
            }
            fields.extend([
                CompactStr,
                CompactArray(vec![Fixed(16), CompactArray(vec![I32]), Tags]),
                Tags,
            ]);
            fields
        }
        ApiKey::ConsumerGroupDescribe => vec![CompactArray(vec![CompactStr]), BOOL, Tags],
        // Share groups (KIP-932); a topic id is 16 bytes.
        ApiKey::ShareGroupHeartbeat => vec![
            CompactStr,
            CompactStr,
            I32,
            CompactStr,
            CompactArray(vec![CompactStr]),
            Tags,
        ],
        ApiKey::ShareGroupDescribe => vec![CompactArray(vec![CompactStr]), BOOL, Tags],
        ApiKey::DescribeShareGroupOffsets => vec![
            CompactArray(vec![
                CompactStr,
                CompactArray(vec![CompactStr, CompactArray(vec![I32]), Tags]),
                Tags,
            ]),
            Tags,
        ],
        ApiKey::AlterShareGroupOffsets => vec![
            CompactStr,
            CompactArray(vec![CompactStr, CompactArray(vec![I32, I64, Tags]), Tags]),
            Tags,
        ],
        ApiKey::DeleteShareGroupOffsets => {
            vec![CompactStr, CompactArray(vec![CompactStr, Tags]), Tags]
        }
        ApiKey::ShareFetch => {
            // Version 2 adds the acquire mode (INT8) and is_renew_ack after the batch size.
            let mut fields = vec![CompactStr, CompactStr, I32, I32, I32, I32, I32, I32];
            if v >= 2 {
                fields.extend([I8, BOOL]);
            }
            fields.extend([
                CompactArray(vec![
                    Fixed(16),
                    CompactArray(vec![I32, acknowledgement_batches(), Tags]),
                    Tags,
                ]),
                CompactArray(vec![Fixed(16), CompactArray(vec![I32]), Tags]),
                Tags,
            ]);
            fields
        }
        ApiKey::ShareAcknowledge => {
            // Version 2 adds is_renew_ack after the session epoch.
            let mut fields = vec![CompactStr, CompactStr, I32];
            if v >= 2 {
                fields.push(BOOL);
            }
            fields.extend([
                CompactArray(vec![
                    Fixed(16),
                    CompactArray(vec![I32, acknowledgement_batches(), Tags]),
                    Tags,
                ]),
                Tags,
            ]);
            fields
        }
        ApiKey::DescribeProducers => vec![
            CompactArray(vec![CompactStr, CompactArray(vec![I32]), Tags]),
            Tags,
        ],
        ApiKey::DescribeConfigs => match v {
            1 | 2 => vec![Array(vec![I8, Str, Array(vec![Str])]), BOOL],
            3 => vec![Array(vec![I8, Str, Array(vec![Str])]), BOOL, BOOL],
            _ => vec![
                CompactArray(vec![I8, CompactStr, CompactArray(vec![CompactStr]), Tags]),
                BOOL,
                BOOL,
                Tags,
            ],
        },
        ApiKey::IncrementalAlterConfigs => match v {
            0 => vec![Array(vec![I8, Str, Array(vec![Str, I8, Str])]), BOOL],
            _ => vec![
                CompactArray(vec![
                    I8,
                    CompactStr,
                    CompactArray(vec![CompactStr, I8, CompactStr, Tags]),
                    Tags,
                ]),
                BOOL,
                Tags,
            ],
        },
        ApiKey::FindCoordinator => match v {
            0 => vec![Str],
            1 | 2 => vec![Str, I8],
            3 => vec![CompactStr, I8, Tags],
            // The key type, then a batch of keys.
            _ => vec![I8, CompactArray(vec![CompactStr]), Tags],
        },
        ApiKey::JoinGroup => match v {
            0 => vec![Str, I32, Str, Str, Array(vec![Str, Bytes])],
            1..=4 => vec![Str, I32, I32, Str, Str, Array(vec![Str, Bytes])],
            5 => vec![Str, I32, I32, Str, Str, Str, Array(vec![Str, Bytes])],
            _ => {
                let mut fields = vec![
                    CompactStr,
                    I32,
                    I32,
                    CompactStr,
                    CompactStr,
                    CompactStr,
                    CompactArray(vec![CompactStr, CompactStr, Tags]),
                ];
                if v >= 8 {
                    fields.push(CompactStr); // reason
                }
                fields.push(Tags);
                fields
            }
        },
        ApiKey::SyncGroup => match v {
            0..=2 => vec![Str, I32, Str, Array(vec![Str, Bytes])],
            3 => vec![Str, I32, Str, Str, Array(vec![Str, Bytes])],
            4 => vec![
                CompactStr,
                I32,
                CompactStr,
                CompactStr,
                CompactArray(vec![CompactStr, CompactStr, Tags]),
                Tags,
            ],
            // Protocol type and name before the assignments.
            _ => vec![
                CompactStr,
                I32,
                CompactStr,
                CompactStr,
                CompactStr,
                CompactStr,
                CompactArray(vec![CompactStr, CompactStr, Tags]),
                Tags,
            ],
        },
        ApiKey::Heartbeat => match v {
            0..=2 => vec![Str, I32, Str],
            3 => vec![Str, I32, Str, Str],
            _ => vec![CompactStr, I32, CompactStr, CompactStr, Tags],
        },
        ApiKey::LeaveGroup => match v {
            0..=2 => vec![Str, Str],
            3 => vec![Str, Array(vec![Str, Str])],
            4 => vec![
                CompactStr,
                CompactArray(vec![CompactStr, CompactStr, Tags]),
                Tags,
            ],
            // Each member with its reason.
            _ => vec![
                CompactStr,
                CompactArray(vec![CompactStr, CompactStr, CompactStr, Tags]),
                Tags,
            ],
        },
        ApiKey::OffsetCommit => {
            if v >= 8 {
                // Group, generation, member, instance, then topics of partitions with their
                // offset, leader epoch and metadata.
                return Some(vec![
                    CompactStr,
                    I32,
                    CompactStr,
                    CompactStr,
                    CompactArray(vec![
                        CompactStr,
                        CompactArray(vec![I32, I64, I32, CompactStr, Tags]),
                        Tags,
                    ]),
                    Tags,
                ]);
            }
            let mut fields = vec![Str, I32, Str];
            if v >= 7 {
                fields.push(Str);
            }
            if v <= 4 {
                fields.push(I64);
            }
            let mut partition = vec![I32, I64];
            if v >= 6 {
                partition.push(I32);
            }
            partition.push(Str);
            fields.push(Array(vec![Str, Array(partition)]));
            fields
        }
        ApiKey::OffsetDelete => vec![Str, Array(vec![Str, Array(vec![I32])])],
        ApiKey::OffsetFetch => {
            let flexible_topics = || CompactArray(vec![CompactStr, CompactArray(vec![I32]), Tags]);
            match v {
                1..=5 => vec![Str, Array(vec![Str, Array(vec![I32])])],
                6 => vec![CompactStr, flexible_topics(), Tags],
                7 => vec![CompactStr, flexible_topics(), BOOL, Tags],
                // A batch of groups (v9: with member id and epoch), then require_stable.
                8 => vec![
                    CompactArray(vec![CompactStr, flexible_topics(), Tags]),
                    BOOL,
                    Tags,
                ],
                _ => vec![
                    CompactArray(vec![CompactStr, CompactStr, I32, flexible_topics(), Tags]),
                    BOOL,
                    Tags,
                ],
            }
        }
        ApiKey::ListGroups => match v {
            0..=2 => vec![],
            3 => vec![Tags],
            // The states filter, then (v5) the types filter: arrays of strings.
            4 => vec![CompactArray(vec![CompactStr]), Tags],
            _ => vec![
                CompactArray(vec![CompactStr]),
                CompactArray(vec![CompactStr]),
                Tags,
            ],
        },
        ApiKey::DescribeGroups => match v {
            0..=2 => vec![Array(vec![Str])],
            3 | 4 => vec![Array(vec![Str]), BOOL],
            _ => vec![CompactArray(vec![CompactStr]), BOOL, Tags],
        },
        ApiKey::DeleteGroups => match v {
            0 | 1 => vec![Array(vec![Str])],
            _ => vec![CompactArray(vec![CompactStr]), Tags],
        },
        ApiKey::SaslHandshake => vec![Str],
        ApiKey::DescribeUserScramCredentials => {
            vec![CompactArray(vec![CompactStr, Tags]), Tags]
        }
        ApiKey::AlterUserScramCredentials => vec![
            CompactArray(vec![CompactStr, I8, Tags]),
            CompactArray(vec![CompactStr, I8, I32, CompactStr, CompactStr, Tags]),
            Tags,
        ],
        // Components: entity type, match type, match (nullable); then `strict`.
        ApiKey::DescribeClientQuotas => match v {
            0 => vec![Array(vec![Str, I8, Str]), BOOL],
            _ => vec![
                CompactArray(vec![CompactStr, I8, CompactStr, Tags]),
                BOOL,
                Tags,
            ],
        },
        // Entries: the entity's (type, name) pairs and the ops (key, f64 value, remove);
        // then `validate_only`.
        ApiKey::AlterClientQuotas => match v {
            0 => vec![
                Array(vec![
                    Array(vec![Str, Str]),
                    Array(vec![Str, Fixed(8), BOOL]),
                ]),
                BOOL,
            ],
            _ => vec![
                CompactArray(vec![
                    CompactArray(vec![CompactStr, CompactStr, Tags]),
                    CompactArray(vec![CompactStr, Fixed(8), BOOL, Tags]),
                    Tags,
                ]),
                BOOL,
                Tags,
            ],
        },
        ApiKey::SaslAuthenticate => match v {
            0 | 1 => vec![Bytes],
            _ => vec![CompactStr, Tags],
        },
        ApiKey::DescribeLogDirs => match v {
            1 => vec![Array(vec![Str, Array(vec![I32])])],
            _ => vec![
                CompactArray(vec![CompactStr, CompactArray(vec![I32]), Tags]),
                Tags,
            ],
        },
        // A filter or a binding: type, name, pattern type, principal, host, operation,
        // permission; flexible from v2.
        ApiKey::DescribeAcls | ApiKey::CreateAcls | ApiKey::DeleteAcls => {
            let acl = |flexible: bool| {
                let s = || if flexible { CompactStr } else { Str };
                let mut fields = vec![I8, s(), I8, s(), s(), I8, I8];
                if flexible {
                    fields.push(Tags);
                }
                fields
            };
            match (key, v >= 2) {
                (ApiKey::DescribeAcls, flexible) => acl(flexible),
                (_, false) => vec![Array(acl(false))],
                (_, true) => vec![CompactArray(acl(true)), Tags],
            }
        }
        _ => return None,
    })
}
