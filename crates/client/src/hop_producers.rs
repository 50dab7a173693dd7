//! [`HopProducers`]: the transactional producers of a remote retry worker's exactly-once hops,
//! one per transactional id (the worker uses one per partition number). Any failure inside a
//! transaction drops that producer, and it starts over (InitProducerId again, which aborts
//! the transaction and resets its sequences, so an append whose fate is unknown is never
//! mistaken for a duplicate) before its next use and before the worker reads commits again.
//! A producer another instance fenced stays fenced until the worker starts it again itself
//! (it took the partition over in a new generation).

use std::collections::HashMap;

use kafka_protocol::ResponseError;
use logd_retry::{Error, OutRecord, Result, Stamp, encode_record};

use crate::blocking::Client;
use crate::error::Error as ClientError;
use crate::txn_producer::TransactionalProducer;

/// Longest a hop's transaction may stay open before the coordinator aborts it (a worker that
/// hangs mid-hop): Kafka's producer default.
const TRANSACTION_TIMEOUT_MS: i32 = 60_000;

/// The producers, by transactional id.
#[derive(Debug, Default)]
pub(crate) struct HopProducers {
    producers: HashMap<String, Slot>,
}

#[derive(Debug, Default)]
struct Slot {
    /// `None` until (re)started: after a failure inside a transaction.
    producer: Option<TransactionalProducer>,
    /// Another instance with the same id took over.
    fenced: bool,
}

impl HopProducers {
    /// Starts producer `id` now (again, if it ran), fencing any other instance.
    pub(crate) fn init(&mut self, client: &mut Client, id: &str) -> Result<()> {
        self.producers.insert(id.to_owned(), Slot::default());
        let started = self.start(client, id)?;
        self.put(id, started);
        Ok(())
    }

    /// Starts again every producer a failure stopped (aborting what it left open), so the
    /// commits read next are final.
    pub(crate) fn settle(&mut self, client: &mut Client) -> Result<()> {
        let stopped: Vec<String> = self
            .producers
            .iter()
            .filter(|(_, slot)| slot.producer.is_none() && !slot.fenced)
            .map(|(id, _)| id.clone())
            .collect();
        for id in stopped {
            let started = self.start(client, &id)?;
            self.put(&id, started);
        }
        Ok(())
    }

    /// Appends `record` inside producer `id`'s transaction.
    pub(crate) fn append(
        &mut self,
        client: &mut Client,
        id: &str,
        topic: &str,
        partition: u32,
        record: &OutRecord,
    ) -> Result<i64> {
        let mut producer = self.take(client, id)?;
        let (producer_id, epoch) = producer.producer();
        let stamp = Stamp {
            producer_id,
            epoch,
            sequence: producer.next_sequence(topic, partition as i32),
            transactional: true,
        };
        let batch = encode_record(record, stamp)?;
        match client.send_in_transaction(&mut producer, topic, partition as i32, batch) {
            Ok(offset) => {
                self.put(id, producer);
                Ok(offset)
            }
            Err(e) => Err(self.failed(id, e)),
        }
    }

    /// Commits `offsets` for `group` in producer `id`'s transaction, and the transaction.
    pub(crate) fn commit(
        &mut self,
        client: &mut Client,
        id: &str,
        group: &str,
        offsets: &[(String, u32, i64)],
    ) -> Result<()> {
        let mut producer = self.take(client, id)?;
        let offsets: Vec<(String, i32, i64)> = offsets
            .iter()
            .map(|(t, p, o)| (t.clone(), *p as i32, *o))
            .collect();
        let committed = client
            .send_offsets_to_transaction(&mut producer, group, &offsets)
            .and_then(|()| client.end_transaction(&mut producer, true));
        match committed {
            Ok(()) => {
                self.put(id, producer);
                Ok(())
            }
            Err(e) => Err(self.failed(id, e)),
        }
    }

    /// Producer `id` out of its slot (started first if need be); [`HopProducers::put`] gives
    /// it back after a success, so a failure leaves the slot empty (to start over).
    fn take(&mut self, client: &mut Client, id: &str) -> Result<TransactionalProducer> {
        let Some(slot) = self.producers.get_mut(id) else {
            return Err(Error::Config(format!(
                "transactional id {id} was never started (init_transactions)"
            )));
        };
        if slot.fenced {
            return Err(fenced(id));
        }
        match slot.producer.take() {
            Some(producer) => Ok(producer),
            None => self.start(client, id),
        }
    }

    fn put(&mut self, id: &str, producer: TransactionalProducer) {
        self.producers.entry(id.to_owned()).or_default().producer = Some(producer);
    }

    /// InitProducerId for `id`.
    fn start(&mut self, client: &mut Client, id: &str) -> Result<TransactionalProducer> {
        client
            .init_transactions(id, TRANSACTION_TIMEOUT_MS)
            .map_err(|e| self.failed(id, e))
    }

    /// After a failure of producer `id`: it starts over at its next use, unless another
    /// instance fenced it.
    fn failed(&mut self, id: &str, e: ClientError) -> Error {
        let slot = self.producers.entry(id.to_owned()).or_default();
        slot.producer = None;
        if let ClientError::Kafka { code, .. } = e
            && (code == ResponseError::ProducerFenced.code()
                || code == ResponseError::InvalidProducerEpoch.code())
        {
            slot.fenced = true;
            return fenced(id);
        }
        Error::Transport(e.to_string())
    }
}

fn fenced(id: &str) -> Error {
    Error::Fenced(format!(
        "transactional id {id} was taken over by another worker (fenced)"
    ))
}
