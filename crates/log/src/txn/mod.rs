//! Transactions (KIP-98, KIP-447; Kafka's transaction version 1): the coordinator that keeps
//! each transactional id's producer id, epoch and open transaction durably
//! (`coordinator.rs` over `persist.rs`), and what the engine does with its decisions
//! (`crate::txn_admin`): the commit or abort markers written to every partition of a
//! transaction, the offsets it commits, the timeout that aborts what a dead producer left
//! open.

mod coordinator;
mod persist;
#[cfg(test)]
mod tests;

pub(crate) use coordinator::{Finishing, Init, Transactions};
pub use coordinator::{TRANSACTION_MAX_TIMEOUT_MS, TRANSACTIONAL_ID_EXPIRATION_MS, TxnDescription};
pub use persist::{PendingOffset, TxnState};
