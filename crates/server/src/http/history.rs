//! The last hour of the console's charts, sampled every [`SAMPLE_EVERY`] on a thread of its own
//! whether or not a console is open: records produced and fetched over the wire since start
//! (the page turns them into rates), and each group's lag in records and the timestamp of its
//! oldest unconsumed record. `GET /api/v1/history` returns the samples and one taken at the
//! request.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{Extension, State};
use logd::Log;
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::State as Shared;
use super::access::Caller;
use crate::lag::group_lag;
use crate::metrics::Metrics;

/// How often a sample is taken.
const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// Samples kept: an hour's.
const KEPT: usize = 360;

/// One moment.
#[derive(Debug, Clone)]
struct Sample {
    at_ms: i64,
    produced: u64,
    fetched: u64,
    /// Per group: records behind, and the oldest unconsumed record's timestamp.
    groups: BTreeMap<String, (i64, Option<i64>)>,
}

/// The samples, oldest first.
#[derive(Debug, Default)]
pub(crate) struct History {
    samples: Mutex<VecDeque<Sample>>,
}

impl History {
    /// Starts sampling `log` and `metrics` on a thread of its own.
    pub(crate) fn start(log: Log, metrics: Arc<Metrics>) -> std::io::Result<Arc<History>> {
        let history = Arc::new(History::default());
        let sampling = history.clone();
        std::thread::Builder::new()
            .name("logd-console-history".into())
            .spawn(move || {
                loop {
                    let sample = take(&log, &metrics);
                    let mut samples = sampling.samples.lock();
                    if samples.len() == KEPT {
                        samples.pop_front();
                    }
                    samples.push_back(sample);
                    drop(samples);
                    std::thread::sleep(SAMPLE_EVERY);
                }
            })?;
        Ok(history)
    }
}

fn take(log: &Log, metrics: &Metrics) -> Sample {
    let (produced, fetched) = metrics.traffic();
    let groups = log
        .list_groups()
        .into_iter()
        .map(|group| {
            let lag = group_lag(log, &group);
            (group, (lag.records, lag.oldest_unconsumed))
        })
        .collect();
    Sample {
        at_ms: log.clock().now_ms(),
        produced,
        fetched,
        groups,
    }
}

/// `GET /api/v1/history`: the kept samples and one taken now, oldest first.
pub(super) async fn history(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
) -> Json<Value> {
    let mut samples: Vec<Sample> = state.history.samples.lock().iter().cloned().collect();
    samples.push(take(&state.log, &state.metrics));
    let samples: Vec<Value> = samples
        .into_iter()
        .map(|s| {
            let groups: BTreeMap<String, Value> = s
                .groups
                .into_iter()
                // The groups the caller may see, as the group list shows them.
                .filter(|(group, _)| caller.sees_group(group))
                .map(|(group, (lag, oldest))| {
                    let lag_ms = oldest.map(|ts| (s.at_ms - ts).max(0));
                    (group, json!({ "lag": lag, "lag_ms": lag_ms }))
                })
                .collect();
            json!({
                "at_ms": s.at_ms,
                "produced": s.produced,
                "fetched": s.fetched,
                "groups": groups,
            })
        })
        .collect();
    Json(json!({ "every_ms": SAMPLE_EVERY.as_millis() as u64, "samples": samples }))
}
