//! [`Charge`]: one request's quota accounting. Before the handler runs, it finds the quotas
//! that apply to the client (none costs one read of an empty map) and caps a throttled
//! consumer's fetch to what its quota window holds; after, it charges the produce request's
//! bytes, the fetch response's bytes and the handler's CPU time, and says how long the client
//! must wait, which goes into the response's `throttle_time_ms`. As in Kafka (KIP-219), the
//! response leaves at once and the connection is muted for that time. A fetch from a client
//! that still owes a wait (another connection under the same quota, or its request-time quota)
//! is answered empty and charged nothing, so the records come after the wait; otherwise the
//! records go and the wait follows, so a consumer always makes progress.

use std::time::{Duration, Instant};

use kafka_protocol::messages::{ApiKey, FetchRequest, ResponseKind, ShareFetchRequest};
use logd_protocol::quota::QuotaKey;

use super::{ClientQuotas, Limit};

/// The quotas one request is charged against.
#[derive(Debug)]
pub(crate) struct Charge<'a> {
    quotas: &'a ClientQuotas,
    bytes: Option<Limit>,
    request: Option<Limit>,
    /// The handling thread's CPU time when the request started, when `request` applies.
    cpu_start: Option<Duration>,
}

impl ClientQuotas {
    /// Starts charging a request of `key` from `principal` sending `client_id`.
    pub(crate) fn charge(&self, key: ApiKey, principal: &str, client_id: &str) -> Charge<'_> {
        let bytes = match key {
            ApiKey::Produce => self.limit(QuotaKey::ProducerByteRate, principal, client_id),
            ApiKey::Fetch | ApiKey::ShareFetch => {
                self.limit(QuotaKey::ConsumerByteRate, principal, client_id)
            }
            _ => None,
        };
        let request = self.limit(QuotaKey::RequestPercentage, principal, client_id);
        Charge {
            quotas: self,
            bytes,
            cpu_start: request.as_ref().and_then(|_| thread_cpu_time()),
            request,
        }
    }
}

impl Charge<'_> {
    /// Caps a fetch under a consumer byte rate to what a quiet client may take at once.
    pub(crate) fn cap_fetch(&self, fetch: &mut FetchRequest) {
        if let Some(max) = self.fetch_cap() {
            fetch.max_bytes = fetch.max_bytes.min(max);
        }
    }

    /// Caps a ShareFetch so, as Kafka 4.4 caps it (the fetch quota's most in one window).
    pub(crate) fn cap_share_fetch(&self, fetch: &mut ShareFetchRequest) {
        if let Some(max) = self.fetch_cap() {
            fetch.max_bytes = fetch.max_bytes.min(max);
        }
    }

    /// What a fetch under a consumer byte rate may take at once; `None` without one.
    pub(crate) fn fetch_cap(&self) -> Option<i32> {
        self.consumer_rate()
            .map(|limit| limit.burst().clamp(1.0, f64::from(i32::MAX)) as i32)
    }

    /// The consumer byte rate this request is charged against, if any.
    fn consumer_rate(&self) -> Option<&Limit> {
        self.bytes
            .as_ref()
            .filter(|l| l.key() == QuotaKey::ConsumerByteRate)
    }

    /// Charges a ShareFetch response of `response_bytes` to the consumer byte rate, given the
    /// wait already owed for the request: the wait now owed. Unlike a fetch, it is never
    /// answered empty: its records are acquired already (Kafka 4.4 answers a throttled
    /// ShareFetch empty and un-records it, leaving them locked until their lock expires;
    /// logd hands them out and mutes the connection for the wait instead).
    pub(crate) fn share_fetched(&self, response_bytes: usize, owed: Duration) -> Duration {
        match self.consumer_rate() {
            Some(fetch) => {
                let now = Instant::now();
                owed.max(self.quotas.record(fetch, response_bytes as f64, now))
            }
            None => owed,
        }
    }

    /// Charges the handler's CPU time (request percentage) and, for a produce, the request's
    /// `request_bytes`: the wait owed for them.
    pub(crate) fn handled(&mut self, request_bytes: usize) -> Duration {
        let now = Instant::now();
        let mut wait = Duration::ZERO;
        if let Some(request) = &self.request {
            let used = match (self.cpu_start.take(), thread_cpu_time()) {
                (Some(start), Some(end)) => end.saturating_sub(start),
                _ => Duration::ZERO,
            };
            // Kafka charges a request's thread time in percent of a second.
            wait = self.quotas.record(request, used.as_secs_f64() * 100.0, now);
        }
        if let Some(produce) = self
            .bytes
            .as_ref()
            .filter(|l| l.key() == QuotaKey::ProducerByteRate)
        {
            wait = wait.max(self.quotas.record(produce, request_bytes as f64, now));
        }
        wait
    }

    /// Charges a fetch response of `response_bytes`, given the wait already owed for the
    /// request: the wait now owed, and whether the fetch must be answered empty instead
    /// (uncharged) because its client already owed a wait.
    pub(crate) fn fetched(&self, response_bytes: usize, owed: Duration) -> (Duration, bool) {
        let Some(fetch) = self.consumer_rate() else {
            return (owed, !owed.is_zero());
        };
        let now = Instant::now();
        let before = self.quotas.owed(fetch, now);
        if !before.is_zero() || !owed.is_zero() {
            return (before.max(owed), true);
        }
        (self.quotas.record(fetch, response_bytes as f64, now), false)
    }
}

/// The CPU time this thread has used (`None` where the clock cannot be read).
#[allow(unsafe_code)]
fn thread_cpu_time() -> Option<Duration> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to the valid pointer it is given.
    let read = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    (read == 0).then(|| Duration::new(now.tv_sec as u64, now.tv_nsec as u32))
}

/// A wait as `throttle_time_ms`.
pub(crate) fn millis(wait: Duration) -> i32 {
    i32::try_from(wait.as_millis()).unwrap_or(i32::MAX)
}

/// Sets a response's `throttle_time_ms` (the responses without one are left as they are).
pub(crate) fn set_throttle_time(response: &mut ResponseKind, wait: Duration) {
    let ms = millis(wait);
    macro_rules! set {
        ($($kind:ident),* $(,)?) => {
            match response {
                $(ResponseKind::$kind(r) => r.throttle_time_ms = ms,)*
                _ => {}
            }
        };
    }
    set!(
        Produce,
        Fetch,
        ListOffsets,
        Metadata,
        ApiVersions,
        CreateTopics,
        DeleteTopics,
        CreatePartitions,
        InitProducerId,
        DescribeConfigs,
        IncrementalAlterConfigs,
        AlterConfigs,
        FindCoordinator,
        JoinGroup,
        SyncGroup,
        Heartbeat,
        LeaveGroup,
        OffsetCommit,
        OffsetFetch,
        ListGroups,
        DescribeGroups,
        DeleteGroups,
        OffsetDelete,
        DescribeLogDirs,
        DescribeProducers,
        DeleteRecords,
        DescribeCluster,
        DescribeTopicPartitions,
        OffsetForLeaderEpoch,
        DescribeUserScramCredentials,
        AlterUserScramCredentials,
        DescribeAcls,
        CreateAcls,
        DeleteAcls,
        DescribeClientQuotas,
        AlterClientQuotas,
        ShareFetch,
        ShareAcknowledge,
    );
}
