//! Transaction metrics, computed at each scrape: transactional ids by state, the age of the
//! oldest open transaction, and each partition's last-stable-offset lag (what read_committed
//! readers wait for), only for partitions with one.

use logd::Log;
use logd::txn::TxnState;

use super::Metrics;

impl Metrics {
    pub(super) fn refresh_transactions(&self, log: &Log) {
        self.transactions.clear();
        self.stable_offset_lag.clear();
        let now = log.clock().now_ms();
        let mut oldest: Option<i64> = None;
        let mut states = std::collections::BTreeMap::new();
        for t in log.transactions() {
            *states.entry(t.state.name()).or_insert(0i64) += 1;
            if t.state == TxnState::Ongoing && t.started_ms >= 0 {
                oldest = Some(oldest.map_or(t.started_ms, |o| o.min(t.started_ms)));
            }
        }
        for (state, count) in states {
            self.transactions
                .get_or_create(&vec![("state", state.to_owned())])
                .set(count);
        }
        let age = oldest.map_or(0.0, |started| now.saturating_sub(started) as f64 / 1000.0);
        self.oldest_transaction.set(age);
        for topic in log.list_topics() {
            for partition in 0..log.partition_count(&topic).unwrap_or(0) {
                let Ok(p) = log.partition(&topic, partition) else {
                    continue;
                };
                let lag = p.high_watermark().0 - p.last_stable_offset().0;
                if lag > 0 {
                    self.stable_offset_lag
                        .get_or_create(&vec![
                            ("topic", topic.clone()),
                            ("partition", partition.to_string()),
                        ])
                        .set(lag);
                }
            }
        }
    }
}
