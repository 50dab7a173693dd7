//! Every group protocol the engine serves, and what they share: `classic` the classic
//! consumer-group protocol (JoinGroup, SyncGroup, Heartbeat; embedded consumers), `consumer`
//! KIP-848's consumer groups (the pure group state and the service that runs it), `share`
//! KIP-932's share groups (queues on the log), `configs` Kafka's per-group configs (GROUP
//! resources), `isolation` which groups read committed only, `protocol` the one protocol each
//! group id has (every join claims its id there), `admin` the views and
//! administration across all three (list, describe with lag, delete, offset resets).

pub(crate) mod admin;
pub mod classic;
pub mod configs;
pub mod consumer;
pub(crate) mod isolation;
pub mod protocol;
pub mod share;
