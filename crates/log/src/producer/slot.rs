//! [`BatchSlot`]: the one place the records of a batch share, where the batch's append
//! leaves its outcome and their deliveries wait for it.

use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use crate::error::Error;

/// What a batch's append came to: its base offset, or the error every record of it shares.
pub(super) type Outcome = std::result::Result<i64, Arc<Error>>;

/// One per batch, shared by its records' deliveries.
#[derive(Debug)]
pub(super) struct BatchSlot {
    pub(super) topic: Arc<str>,
    pub(super) partition: u32,
    pub(super) outcome: Mutex<Option<Outcome>>,
    pub(super) done: Condvar,
}
