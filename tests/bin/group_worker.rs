//! A retry worker that is a member of group `workers` on a broker or cluster (`GroupRemote`:
//! librdkafka holds the membership), handling `tasks` under `Ordering::PerKey` until it is
//! killed. Task `i` (header `task-id`) fails permanently if `i % 17 == 0`, else transiently
//! `i % 4` times before it succeeds (with 3 attempts, `i % 4 == 3` runs out). Every handler
//! call is written to EVENTS before the handler returns, one line each:
//! `NANOS NAME TASK KEY PARTITION ATTEMPT OUTCOME` (OUTCOME `ok`, `retry` or `poison`); after a
//! poll that ended at a commit the group refused, `NANOS NAME - - - - refused`; when the
//! partitions it owns change, `NANOS NAME - - - - owns 0,3`. A line is in the page cache once
//! written, so a SIGKILL after it keeps it.
//!
//! Options: `--handler-ms N` (the scaling benchmark, `benches/retry_scale.sh`): every record
//! succeeds after the handler sleeps that long, as a handler waiting on a service would;
//! `--commit-before-append`: the deliberately broken order the checker must catch;
//! `--crash-at-append N`: the process SIGKILLs itself as its Nth append of a copy starts (after
//! the commit under the broken order, before it under the right one).
//!
//! `--exactly-once ID`: each hop one transaction, by producer `ID-<partition>`;
//! `--crash-at-append N` then kills the process just after its Nth copy was appended, inside
//! the transaction, before the commit. `--no-group`: no group membership (`Remote`, one worker
//! at a time).
//!
//! `--source TOPIC` and `--group GROUP` replace `tasks` and `workers`, for tests that share a
//! cluster.
//!
//! Usage: `logd-group-worker BOOTSTRAP NAME EVENTS [OPTIONS]`

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use logd_client::{Client, ClientSecurity, GroupRemote, Remote};
use logd_retry::{
    CommitOrder, Failure, Headers, Jitter, Message, Ordering, OutRecord, Outcome, Ownership,
    Result, RetryConfig, RetryPolicy, RetryWorker, Transport,
};

/// What the options ask for.
#[derive(Default)]
struct Options {
    handler_ms: Option<u64>,
    commit_before_append: bool,
    crash_at_append: Option<u64>,
    exactly_once: Option<String>,
    no_group: bool,
    source: Option<String>,
    group: Option<String>,
}

fn options(args: &[String]) -> Option<Options> {
    let mut options = Options::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--handler-ms" => options.handler_ms = Some(args.next()?.parse().ok()?),
            "--commit-before-append" => options.commit_before_append = true,
            "--crash-at-append" => options.crash_at_append = Some(args.next()?.parse().ok()?),
            "--exactly-once" => options.exactly_once = Some(args.next()?.clone()),
            "--no-group" => options.no_group = true,
            "--source" => options.source = Some(args.next()?.clone()),
            "--group" => options.group = Some(args.next()?.clone()),
            _ => return None,
        }
    }
    Some(options)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let parsed = match &args[..] {
        [_, bootstrap, name, events, rest @ ..] => {
            options(rest).map(|options| (bootstrap, name, events, options))
        }
        _ => None,
    };
    let Some((bootstrap, name, events, options)) = parsed else {
        eprintln!("usage: logd-group-worker BOOTSTRAP NAME EVENTS [OPTIONS]");
        return ExitCode::from(2);
    };
    match run(bootstrap, name, events, &options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A transport that kills its own process (SIGKILL: no cleanup, as a crash) when its Nth
/// append starts.
struct CrashAtAppend<T> {
    inner: T,
    appends: u64,
    crash_at: Option<u64>,
}

impl<T: Transport> Transport for CrashAtAppend<T> {
    fn now_ms(&self) -> i64 {
        self.inner.now_ms()
    }

    fn ensure_topic(&mut self, topic: &str, partitions: u32, retention: Option<i64>) -> Result<()> {
        self.inner.ensure_topic(topic, partitions, retention)
    }

    fn partition_count(&mut self, topic: &str) -> Result<u32> {
        self.inner.partition_count(topic)
    }
    fn partitions_if_exists(&mut self, topic: &str) -> Result<Option<u32>> {
        self.inner.partitions_if_exists(topic)
    }

    fn owned_partitions(
        &mut self,
        group: &str,
        topics: &[String],
        partitions: u32,
    ) -> Result<Ownership> {
        self.inner.owned_partitions(group, topics, partitions)
    }

    fn fetch(&mut self, topic: &str, partition: u32, offset: i64) -> Result<Vec<Message>> {
        self.inner.fetch(topic, partition, offset)
    }

    fn append(&mut self, topic: &str, partition: u32, batch: Vec<u8>) -> Result<i64> {
        self.appends += 1;
        if self.crash_at == Some(self.appends) {
            crash();
        }
        self.inner.append(topic, partition, batch)
    }

    fn init_producer_id(&mut self) -> Result<i64> {
        self.inner.init_producer_id()
    }

    fn committed(&mut self, group: &str, topic: &str, partition: u32) -> Result<Option<i64>> {
        self.inner.committed(group, topic, partition)
    }

    fn commit(&mut self, group: &str, topic: &str, partition: u32, offset: i64) -> Result<()> {
        self.inner.commit(group, topic, partition, offset)
    }

    fn init_transactions(&mut self, transactional_id: &str) -> Result<()> {
        self.inner.init_transactions(transactional_id)
    }

    fn append_in_transaction(
        &mut self,
        transactional_id: &str,
        topic: &str,
        partition: u32,
        record: &OutRecord,
    ) -> Result<i64> {
        let offset =
            self.inner
                .append_in_transaction(transactional_id, topic, partition, record)?;
        self.appends += 1;
        if self.crash_at == Some(self.appends) {
            crash();
        }
        Ok(offset)
    }

    fn commit_transaction(
        &mut self,
        transactional_id: &str,
        group: &str,
        offsets: &[(String, u32, i64)],
    ) -> Result<()> {
        self.inner
            .commit_transaction(transactional_id, group, offsets)
    }

    fn marker(&mut self) -> u64 {
        self.inner.marker()
    }

    fn wait(&mut self, marker: u64, timeout: Duration) {
        self.inner.wait(marker, timeout);
    }
}

/// SIGKILLs this process.
#[allow(
    unsafe_code,
    reason = "kill(2) is a system call libc exposes only as unsafe FFI"
)]
fn crash() -> ! {
    // SAFETY: kill with this process's own id and SIGKILL touches no memory of ours.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    // SIGKILL to oneself is delivered before kill(2) returns; abort if it somehow is not.
    std::process::abort()
}

fn run(
    bootstrap: &str,
    name: &str,
    events: &str,
    options: &Options,
) -> Result<(), Box<dyn std::error::Error>> {
    let events = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(events)?;
    let security = ClientSecurity::default();
    let client = Client::connect_with(bootstrap, &security)?;
    let config = RetryConfig {
        ordering: Ordering::PerKey,
        policy: RetryPolicy {
            base: Duration::from_millis(20),
            cap: Duration::from_millis(100),
            max_attempts: 3,
            jitter: Jitter::Full,
        },
        tiers: vec![Duration::from_millis(50), Duration::from_millis(200)],
        commit_order: match options.commit_before_append {
            true => CommitOrder::BeforeAppend,
            false => CommitOrder::AfterAppend,
        },
        transactional_id: options.exactly_once.clone(),
        ..RetryConfig::new(
            options.group.as_deref().unwrap_or("workers"),
            options.source.as_deref().unwrap_or("tasks"),
        )
    };
    match options.no_group {
        true => work(Remote::new(client), config, name, &events, options),
        false => {
            let member = GroupRemote::new(client, bootstrap, &security)?;
            work(member, config, name, &events, options)
        }
    }
}

fn work(
    transport: impl Transport,
    config: RetryConfig,
    name: &str,
    events: &std::fs::File,
    options: &Options,
) -> Result<(), Box<dyn std::error::Error>> {
    let transport = CrashAtAppend {
        inner: transport,
        appends: 0,
        crash_at: options.crash_at_append,
    };
    let mut worker = RetryWorker::new(transport, config, None)?;
    let failed_write = std::cell::Cell::new(None);
    let mut handler = |m: &Message, attempt: u32| {
        let task: u32 = m
            .header_str("task-id")
            .and_then(|t| t.parse().ok())
            .unwrap_or(0);
        let (outcome, said) = if let Some(ms) = options.handler_ms {
            std::thread::sleep(Duration::from_millis(ms));
            (Outcome::Success, "ok")
        } else if task.is_multiple_of(17) {
            let poison = Failure::new("Poison", format!("task {task}"));
            (Outcome::Permanent(poison), "poison")
        } else if attempt <= task % 4 {
            let flaky = Failure::new("Flaky", format!("task {task} try {attempt}"));
            (Outcome::Transient(flaky), "retry")
        } else {
            (Outcome::Success, "ok")
        };
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let key = String::from_utf8_lossy(m.key.as_deref().unwrap_or_default()).into_owned();
        let line = format!(
            "{nanos} {name} {task} {key} {} {attempt} {said} {}@{}\n",
            m.partition, m.topic, m.offset
        );
        if let Err(e) = (&*events).write_all(line.as_bytes()) {
            failed_write.set(Some(e));
        }
        outcome
    };
    let mut refused = 0;
    let mut owned = Vec::new();
    loop {
        let poll = worker.poll_once(&mut handler)?;
        if let Some(e) = failed_write.take() {
            return Err(e.into());
        }
        // A commit the group refused: the record handled last is redelivered, and may be
        // handled again by whoever owns its partition next.
        if worker.stats().refused_commits > refused {
            refused = worker.stats().refused_commits;
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            writeln!(&*events, "{nanos} {name} - - - - refused")?;
        }
        if worker.owned() != owned {
            owned = worker.owned();
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let list: Vec<String> = owned.iter().map(u32::to_string).collect();
            writeln!(&*events, "{nanos} {name} - - - - owns {}", list.join(","))?;
        }
        if poll.handled == 0 {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
