//! The HTTP listener's console and JSON API against a real daemon: topics, groups and lag as
//! the engine has them, errors as JSON, the page served from the binary with nothing from
//! another origin, and the default address on loopback.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::librdkafka;
use super::metrics::{get, request};
use super::{Daemon, wait_until};

fn json(addr: &str, path: &str) -> (String, Value) {
    let (status, body) = get(addr, path);
    let value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"));
    (status, value)
}

#[test]
fn the_fsync_policy_is_one_setting_from_the_command_line_to_the_console() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        dir.path(),
        &["--http-listen", "127.0.0.1:0", "--fsync", "interval:250"],
    );
    let http = daemon.metrics.clone().unwrap();
    let (_, broker) = json(&http, "/api/v1/broker");
    assert_eq!(broker["fsync"], "interval:250");
    // A topic created without a choice gets it, as Kafka's flush.ms.
    let mut client = logd_client::Client::connect(&daemon.addr).unwrap();
    client.create_topic("flushed", 1, &[]).unwrap();
    let topic = dir.path().join("topics/flushed/topic.json");
    let stored: Value = serde_json::from_slice(&std::fs::read(&topic).unwrap()).unwrap();
    assert_eq!(
        stored["config"]["fsync"],
        serde_json::json!({"interval-ms": 250})
    );
    drop(daemon);
    for bad in ["interval:0", "sometimes"] {
        let (ok, _, stderr) = super::logd(&["serve", "--fsync", bad], "");
        assert!(
            !ok && stderr.contains("fsync is always, never, interval"),
            "{stderr}"
        );
    }
}

#[test]
fn the_api_shows_topics_partitions_groups_and_lag_as_the_engine_has_them() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--http-listen", "127.0.0.1:0"]);
    let http = daemon.metrics.clone().expect("the HTTP address line");
    let lines: Vec<String> = (0..30).map(|i| format!("k{i}:value {i}")).collect();
    librdkafka::produce(&daemon.addr, "orders", "none", &lines);
    // A group reads everything and commits; 5 more records make its lag 5.
    assert_eq!(
        librdkafka::consume_in_group(&daemon.addr, "billing", "orders").len(),
        30
    );
    let more: Vec<String> = (30..35).map(|i| format!("k{i}:value {i}")).collect();
    librdkafka::produce(&daemon.addr, "orders", "none", &more);

    let (status, topics) = json(&http, "/api/v1/topics");
    assert_eq!(status, "HTTP/1.1 200 OK");
    let orders = topics["topics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "orders")
        .unwrap_or_else(|| panic!("{topics}"));
    assert_eq!(orders["records"], 35);
    assert!(orders["size_bytes"].as_u64().unwrap() > 35 * 7, "{orders}");
    let partitions = orders["partitions"].as_u64().unwrap();

    let (_, topic) = json(&http, "/api/v1/topics/orders");
    let shown = topic["partitions"].as_array().unwrap();
    assert_eq!(shown.len() as u64, partitions);
    let ends: i64 = shown
        .iter()
        .map(|p| p["high_watermark"].as_i64().unwrap())
        .sum();
    assert_eq!(ends, 35);
    assert_eq!(topic["id"].as_str().unwrap().len(), 32, "16 bytes in hex");
    let first = &shown[0];
    assert_eq!(first["segments"], 1);
    if first["high_watermark"].as_i64() > Some(0) {
        let (oldest, newest) = (
            first["oldest_timestamp"].as_i64(),
            first["newest_timestamp"].as_i64(),
        );
        assert!(oldest.is_some() && oldest <= newest, "{first}");
    }
    assert_eq!(
        topic["non_default"],
        serde_json::json!([]),
        "created with the defaults"
    );
    let (_, broker) = json(&http, "/api/v1/broker");
    assert_eq!(broker["fsync"], "always", "the daemon's default");
    assert_eq!(broker["data_dir"], dir.path().display().to_string());
    assert!(broker["disk_free_bytes"].as_i64().unwrap() > 0, "{broker}");
    assert_eq!(topic["groups"][0]["group"], "billing");
    assert_eq!(topic["groups"][0]["lag"], 5);

    // Committed offsets are the next to read: the group's lag falls to 0 once it reads again.
    let (_, groups) = json(&http, "/api/v1/groups");
    let billing = &groups["groups"][0];
    assert_eq!(billing["group"], "billing");
    assert_eq!(billing["state"], "Empty", "the consumer left: {billing}");
    assert_eq!(billing["lag"], 5);
    assert!(
        billing["lag_ms"].as_i64().unwrap() >= 0,
        "lag in time: {billing}"
    );
    let (_, history) = json(&http, "/api/v1/history");
    let now = history["samples"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(now["produced"].as_u64().unwrap() >= 35, "{now}");
    assert!(now["fetched"].as_u64().unwrap() >= 30, "{now}");
    assert_eq!(now["groups"]["billing"]["lag"], 5);
    assert!(now["groups"]["billing"]["lag_ms"].is_i64());
    let (_, group) = json(&http, "/api/v1/groups/billing");
    let committed: i64 = group["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["committed"].as_i64().unwrap())
        .sum();
    assert_eq!(committed, 30);
    assert_eq!(
        librdkafka::consume_in_group(&daemon.addr, "billing", "orders").len(),
        5
    );
    wait_until("the lag shown falls to 0", Duration::from_secs(10), || {
        json(&http, "/api/v1/groups/billing").1["offsets"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["lag"] == 0 && o["lag_ms"].is_null())
    });
    assert!(
        json(&http, "/api/v1/groups").1["groups"][0]["lag_ms"].is_null(),
        "caught up"
    );
}

#[test]
fn bad_requests_get_json_errors_and_the_page_needs_nothing_from_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    // The old flag's name still works.
    let daemon = Daemon::start(dir.path(), &["--metrics-listen", "127.0.0.1:0"]);
    let http = daemon.metrics.clone().unwrap();

    let (status, error) = json(&http, "/api/v1/topics/nope");
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    assert_eq!(error["error"], "no topic nope");
    let (status, error) = json(&http, "/api/v1/groups/nobody");
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    assert_eq!(error["error"], "no group nobody");
    let (status, error) = json(&http, "/api/v1/no-such-thing");
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    assert!(error["error"].is_string());
    let (status, _) = request(&http, "DELETE", "/api/v1/topics");
    assert_eq!(status, "HTTP/1.1 405 Method Not Allowed");
    // A name that is not a topic name at all, escaped in the path.
    let (status, error) = json(&http, "/api/v1/topics/%3Cscript%3E");
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    assert_eq!(error["error"], "no topic <script>", "JSON, not HTML");

    // The old name in a config file is the same option (here with a value it refuses).
    let config = dir.path().join("logd.toml");
    std::fs::write(&config, "metrics-listen = \"not an address\"\n").unwrap();
    let (ok, _, stderr) = super::logd(&["serve", "--config", config.to_str().unwrap()], "");
    assert!(!ok && stderr.contains("--http-listen"), "{stderr}");

    let (status, page) = get(&http, "/");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(page.contains("<title>logd console</title>"));
    assert!(page.contains("/api/v1/topics") && page.contains("/api/v1/groups"));
    // Everything it loads comes from logd, and names are set as text, never as markup.
    // (The SVG namespace is a name, not a place the page loads from.)
    let page = page.replace("\"http://www.w3.org/2000/svg\"", "");
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "no other origin"
    );
    assert!(!page.contains("innerHTML"), "text only");
}

#[test]
fn by_default_the_console_is_on_loopback_port_9644() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    if let Ok(taken) = TcpListener::bind("127.0.0.1:9644") {
        // Held here, the default address is busy: logd refuses to start and says what to do.
        let (ok, _, stderr) = super::logd(
            &["serve", "--listen", "127.0.0.1:0", "--data-dir", data],
            "",
        );
        assert!(!ok);
        assert!(
            stderr.contains("127.0.0.1:9644") && stderr.contains("--http-listen none"),
            "{stderr}"
        );
        drop(taken);
    }
    // Free (or, if something else on this machine holds it, not ours to test): the daemon
    // serves the console there and prints its address.
    if TcpListener::bind("127.0.0.1:9644").is_ok() {
        let mut child = Command::new(env!("CARGO_BIN_EXE_logd"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir", data])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let lines: Vec<String> = (0..3)
            .map(|_| {
                let mut line = String::new();
                stdout.read_line(&mut line).unwrap();
                line.trim().to_owned()
            })
            .collect();
        assert!(
            lines[0].starts_with("logd listening on 127.0.0.1:"),
            "{lines:?}"
        );
        assert_eq!(lines[1], "logd metrics on http://127.0.0.1:9644/metrics");
        assert_eq!(lines[2], "logd console on http://127.0.0.1:9644/");
        let (status, page) = get("127.0.0.1:9644", "/");
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(page.contains("logd console"));
    }
}

#[test]
fn messages_come_from_storage_from_any_start_with_keys_values_and_headers_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--http-listen", "127.0.0.1:0"]);
    let http = daemon.metrics.clone().unwrap();
    let b = daemon.addr.as_str();
    let (ok, _, stderr) = super::logd(
        &[
            "topics",
            "create",
            "m",
            "--partitions",
            "1",
            "--bootstrap",
            b,
        ],
        "",
    );
    assert!(ok, "{stderr}");
    // Twenty records in gzip batches (decoded for the console), then one with markup and a
    // header, written by logd's own producer.
    let lines: Vec<String> = (0..20).map(|i| format!("k{i}:{{\"n\":{i}}}")).collect();
    librdkafka::produce(b, "m", "gzip", &lines);
    let (ok, _, stderr) = super::logd(
        &[
            "produce",
            "-t",
            "m",
            "-k",
            "|",
            "-H",
            "origin=<b>cli</b>",
            "--bootstrap",
            b,
        ],
        "<script>alert(1)</script>|<img src=x onerror=alert(2)>\n",
    );
    assert!(ok, "{stderr}");

    let (status, page) = json(&http, "/api/v1/topics/m/messages");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(page["high_watermark"], 21);
    let records = page["records"].as_array().unwrap();
    assert_eq!(records.len(), 21, "the default limit is 50");
    assert_eq!(records[3]["offset"], 3);
    assert_eq!(records[3]["key"]["text"], "k3");
    assert_eq!(records[3]["value"]["text"], "{\"n\":3}");
    let last = &records[20];
    assert_eq!(
        last["key"]["text"], "<script>alert(1)</script>",
        "as stored, as text"
    );
    assert_eq!(last["value"]["text"], "<img src=x onerror=alert(2)>");
    assert_eq!(last["headers"][0]["key"]["text"], "origin");
    assert_eq!(last["headers"][0]["value"]["text"], "<b>cli</b>");

    // From an offset, with a limit; the last N; a timestamp.
    let (_, page) = json(&http, "/api/v1/topics/m/messages?offset=5&limit=3");
    let offsets: Vec<i64> = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["offset"].as_i64().unwrap())
        .collect();
    assert_eq!(offsets, [5, 6, 7]);
    assert_eq!(page["next_offset"], 8);
    let (_, page) = json(&http, "/api/v1/topics/m/messages?last=2");
    let offsets: Vec<i64> = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["offset"].as_i64().unwrap())
        .collect();
    assert_eq!(offsets, [19, 20]);
    let sixth = records[6]["timestamp"].as_i64().unwrap();
    let (_, page) = json(
        &http,
        &format!("/api/v1/topics/m/messages?timestamp={sixth}&limit=1"),
    );
    assert!(page["records"][0]["offset"].as_i64().unwrap() <= 6);
    assert!(page["records"][0]["timestamp"].as_i64().unwrap() >= sixth);
    let (_, page) = json(&http, "/api/v1/topics/m/messages?offset=21");
    assert_eq!(
        page["records"].as_array().unwrap().len(),
        0,
        "at the end: nothing yet"
    );

    // Bad input: each refused with what was wrong.
    for (query, status, says) in [
        (
            "offset=22",
            "400 Bad Request",
            "outside the partition's 0 to 21",
        ),
        ("offset=-1", "400 Bad Request", "outside"),
        ("limit=-1", "400 Bad Request", "limit must be 1 to 1000"),
        ("limit=0", "400 Bad Request", "limit must be 1 to 1000"),
        ("limit=ten", "400 Bad Request", "limit must be an integer"),
        ("last=0", "400 Bad Request", "last must be positive"),
        ("offset=1&last=2", "400 Bad Request", "at most one of"),
        ("partition=7", "404 Not Found", "topic m has no partition 7"),
    ] {
        let (got, error) = json(&http, &format!("/api/v1/topics/m/messages?{query}"));
        assert_eq!(got, format!("HTTP/1.1 {status}"), "{query}");
        assert!(
            error["error"].as_str().unwrap().contains(says),
            "{query}: {error}"
        );
    }
    let (got, error) = json(&http, "/api/v1/topics/nope/messages");
    assert_eq!(got, "HTTP/1.1 404 Not Found");
    assert_eq!(error["error"], "no topic nope");
}

#[test]
fn protected_mode_keeps_the_console_on_loopback_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let (ok, _, stderr) = super::logd(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--http-listen",
            "0.0.0.0:0",
            "--data-dir",
            data,
        ],
        "",
    );
    assert!(!ok);
    assert!(
        stderr.contains("protected mode") && stderr.contains("--allow-unauthenticated"),
        "{stderr}"
    );
    let daemon = Daemon::start(
        dir.path(),
        &["--http-listen", "0.0.0.0:0", "--allow-unauthenticated"],
    );
    let http = daemon.metrics.clone().unwrap();
    assert!(http.starts_with("0.0.0.0:"), "{http}");
    assert_eq!(get(&http, "/health").0, "HTTP/1.1 200 OK");
}

/// Sends `body` with `method` and `content_type` on a connection of its own: the status line
/// and the body.
fn exchange(
    addr: &str,
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
) -> (String, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

fn post(addr: &str, path: &str, content_type: &str, body: &str) -> (String, String) {
    exchange(addr, "POST", path, content_type, body)
}

#[test]
fn dead_letters_are_grouped_listed_and_replayed_after_a_dry_run() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--http-listen", "127.0.0.1:0"]);
    let http = daemon.metrics.clone().unwrap();
    let b = daemon.addr.as_str();
    for topic in ["orders", "orders.dlq"] {
        let (ok, _, e) = super::logd(&["topics", "create", topic, "--bootstrap", b], "");
        assert!(ok, "{e}");
    }
    // Letters as the retry layer writes them: three timeouts that ran out of attempts, two
    // permanent failures.
    let letters = |class: &str, reason: &str, lines: &str| {
        let headers = [
            format!("logd.dlq.error.class={class}"),
            format!("logd.dlq.reason={reason}"),
            "logd.dlq.error.message=it failed".into(),
            "logd.dlq.original.topic=orders".into(),
            "logd.dlq.original.partition=0".into(),
            "logd.dlq.original.offset=7".into(),
            "logd.dlq.attempts=5".into(),
            "tenant=acme".into(),
        ];
        let mut args = vec!["produce", "-t", "orders.dlq", "-k", "|", "--bootstrap", b];
        for header in &headers {
            args.extend(["-H", header]);
        }
        let (ok, _, e) = super::logd(&args, lines);
        assert!(ok, "{e}");
    };
    letters("Timeout", "max-attempts", "a|1\nb|2\nc|3\n");
    letters("BadInput", "permanent", "d|4\ne|5\n");

    let (_, all) = json(&http, "/api/v1/dead-letters");
    let dlq = &all["topics"][0];
    assert_eq!(dlq["topic"], "orders.dlq");
    assert_eq!(dlq["pending"], 5);
    let groups: Vec<(String, i64)> = dlq["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            assert_eq!(g["original_topic"], "orders");
            assert!(g["first_seen"].as_i64() <= g["last_seen"].as_i64());
            (
                g["error_class"].as_str().unwrap().to_owned(),
                g["count"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(groups, [("BadInput".into(), 2), ("Timeout".into(), 3)]);

    let (_, listed) = json(&http, "/api/v1/dead-letters/orders.dlq?error_class=Timeout");
    assert_eq!(listed["matching"], 3);
    let first = &listed["letters"][0];
    assert_eq!(first["key"]["text"], "a");
    assert_eq!(first["attempts"], 5);
    assert_eq!(first["reason"], "max-attempts");
    assert_eq!(first["error_message"], "it failed");
    assert_eq!(first["original"]["topic"], "orders");
    assert_eq!(first["original"]["offset"], 7);
    assert_eq!(
        first["headers"],
        serde_json::json!([{"key": {"text": "tenant"}, "value": {"text": "acme"}}]),
        "logd's own headers left out"
    );

    // A dry run plans and writes nothing.
    let timeouts = r#"{"error_class": "Timeout", "dry_run": true}"#;
    let (status, plan) = post(
        &http,
        "/api/v1/dead-letters/orders.dlq/replay",
        "application/json",
        timeouts,
    );
    assert_eq!(status, "HTTP/1.1 200 OK", "{plan}");
    let plan: Value = serde_json::from_str(&plan).unwrap();
    assert_eq!(plan["replays"].as_array().unwrap().len(), 3);
    assert_eq!(plan["replays"][0]["target"], "orders");
    let sample: Vec<&str> = plan["sample"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["key"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(sample, ["a", "b", "c"], "the first letters, whole: {plan}");
    assert_eq!(
        json(&http, "/api/v1/topics/orders").1["partitions"][0]["high_watermark"],
        0
    );
    assert_eq!(
        json(&http, "/api/v1/dead-letters").1["topics"][0]["pending"],
        5
    );

    // Not JSON (what a form on another site can send): refused, nothing written.
    let (status, _) = post(
        &http,
        "/api/v1/dead-letters/orders.dlq/replay",
        "text/plain",
        r#"{"error_class": "Timeout"}"#,
    );
    assert_eq!(status, "HTTP/1.1 415 Unsupported Media Type");
    assert_eq!(
        json(&http, "/api/v1/topics/orders").1["partitions"][0]["high_watermark"],
        0
    );

    // The replay: the three timeouts go back to orders, with their replay count.
    let (status, done) = post(
        &http,
        "/api/v1/dead-letters/orders.dlq/replay",
        "application/json",
        r#"{"error_class": "Timeout"}"#,
    );
    assert_eq!(status, "HTTP/1.1 200 OK", "{done}");
    let (_, replayed) = json(&http, "/api/v1/topics/orders/messages");
    let keys: Vec<&str> = replayed["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["a", "b", "c"]);
    assert!(
        replayed["records"][0]["headers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["key"]["text"] == "logd.dlq.replay.count" && h["value"]["text"] == "1")
    );
    // The permanent failures the filter left out are still pending.
    let (_, after) = json(&http, "/api/v1/dead-letters");
    assert_eq!(after["topics"][0]["pending"], 2);
    assert_eq!(after["topics"][0]["groups"][0]["error_class"], "BadInput");
    let (_, permanent) = json(&http, "/api/v1/dead-letters/orders.dlq");
    let places: Vec<(i64, i64)> = permanent["letters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["partition"].as_i64().unwrap(),
                l["offset"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(places.len(), 2, "{permanent}");

    // One letter by its place: only it goes, and the listing records who replayed it where.
    let (first_partition, first_offset) = places[1];
    let one =
        format!(r#"{{"letters": [{{"partition": {first_partition}, "offset": {first_offset}}}]}}"#);
    let (status, done) = post(
        &http,
        "/api/v1/dead-letters/orders.dlq/replay",
        "application/json",
        &one,
    );
    assert_eq!(status, "HTTP/1.1 200 OK", "{done}");
    let done: Value = serde_json::from_str(&done).unwrap();
    assert_eq!(done["replays"].as_array().unwrap().len(), 1);
    assert_eq!(done["replays"][0]["offset"], first_offset);
    let (_, pending) = json(&http, "/api/v1/dead-letters/orders.dlq");
    assert_eq!(pending["matching"], 1);
    assert_eq!(pending["letters"][0]["offset"], places[0].1);
    let (_, all) = json(&http, "/api/v1/dead-letters/orders.dlq?all=true");
    let replayed_one = all["letters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["offset"] == first_offset && l["partition"] == first_partition)
        .unwrap();
    assert_eq!(replayed_one["replays"][0]["target"], "orders");
    assert_eq!(replayed_one["replays"][0]["by"], "User:ANONYMOUS");
    assert_eq!(replayed_one["replays"][0]["replay_count"], 1);

    // Its timeline: where it came from, its hops through a retry tier (written here as the
    // retry layer writes them), the dead-letter entry and the replay.
    let (ok, _, e) = super::logd(
        &["topics", "create", "orders.retry.1s", "--bootstrap", b],
        "",
    );
    assert!(ok, "{e}");
    for (attempt, due) in [(1, 1_000), (2, 3_000)] {
        let mut args = vec![
            "produce",
            "-t",
            "orders.retry.1s",
            "-p",
            "0",
            "--bootstrap",
            b,
        ];
        let headers = [
            "logd.retry.original.topic=orders".to_owned(),
            "logd.retry.original.partition=0".into(),
            "logd.retry.original.offset=7".into(),
            format!("logd.retry.attempt={attempt}"),
            format!("logd.retry.due.ts={due}"),
        ];
        for header in &headers {
            args.extend(["-H", header]);
        }
        let (ok, _, e) = super::logd(&args, "a hop\n");
        assert!(ok, "{e}");
    }
    let (ok, _, e) = super::logd(
        &[
            "produce",
            "-t",
            "orders.retry.1s",
            "-p",
            "0",
            "-H",
            "logd.retry.original.offset=8",
            "--bootstrap",
            b,
        ],
        "another record's hop\n",
    );
    assert!(ok, "{e}");
    let (status, timeline) = json(
        &http,
        &format!("/api/v1/dead-letters/orders.dlq/letters/{first_partition}/{first_offset}"),
    );
    assert_eq!(status, "HTTP/1.1 200 OK", "{timeline}");
    let events: Vec<(String, Value)> = timeline["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["event"].as_str().unwrap().to_owned(), e["topic"].clone()))
        .collect();
    assert_eq!(
        events,
        [
            ("produced".into(), "orders".into()),
            ("retry".into(), "orders.retry.1s".into()),
            ("retry".into(), "orders.retry.1s".into()),
            ("dead-lettered".into(), "orders.dlq".into()),
            ("replayed".into(), "orders".into()),
        ],
        "{timeline}"
    );
    assert_eq!(timeline["events"][1]["attempt"], 1);
    assert_eq!(timeline["events"][2]["due"], 3_000);
    assert_eq!(timeline["events"][3]["reason"], "permanent");
    assert_eq!(timeline["events"][4]["by"], "User:ANONYMOUS");
    assert_eq!(timeline["complete"], true);
    let (status, _) = json(&http, "/api/v1/dead-letters/orders.dlq/letters/0/999");
    assert_eq!(status, "HTTP/1.1 404 Not Found");

    // The rest, then nothing: a replay never sends a letter twice by accident.
    let (_, rest) = post(
        &http,
        "/api/v1/dead-letters/orders.dlq/replay",
        "application/json",
        "{}",
    );
    let rest: Value = serde_json::from_str(&rest).unwrap();
    assert_eq!(rest["replays"].as_array().unwrap().len(), 1);
    assert_eq!(
        json(&http, "/api/v1/dead-letters").1["topics"][0]["pending"],
        0
    );
    let (_, again) = post(
        &http,
        "/api/v1/dead-letters/orders.dlq/replay",
        "application/json",
        "{}",
    );
    let again: Value = serde_json::from_str(&again).unwrap();
    assert_eq!(again["replays"].as_array().unwrap().len(), 0);
    assert_eq!(
        json(&http, "/api/v1/dead-letters/orders.dlq?all=true").1["matching"],
        5
    );

    // Bad requests.
    let (status, error) = json(&http, "/api/v1/dead-letters/orders");
    assert_eq!(status, "HTTP/1.1 400 Bad Request");
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("not a dead-letter topic")
    );
    let (status, _) = json(&http, "/api/v1/dead-letters/gone.dlq");
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    let (status, error) = post(
        &http,
        "/api/v1/dead-letters/orders.dlq/replay",
        "application/json",
        r#"{"to": "nowhere"}"#,
    );
    assert_eq!(status, "HTTP/1.1 400 Bad Request");
    assert!(error.contains("no topic nowhere"), "{error}");
}

/// A JSON request with `method`: the status line and the body (null if it is not JSON).
fn send(addr: &str, method: &str, path: &str, body: &str) -> (String, Value) {
    let (status, body) = exchange(addr, method, path, "application/json", body);
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

#[test]
fn topics_and_groups_change_under_the_engines_rules() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--http-listen", "127.0.0.1:0"]);
    let http = daemon.metrics.clone().unwrap();
    let b = daemon.addr.as_str();

    let (status, made) = send(
        &http,
        "POST",
        "/api/v1/topics",
        r#"{"name": "made", "partitions": 3}"#,
    );
    assert_eq!(status, "HTTP/1.1 201 Created", "{made}");
    assert_eq!(made["partitions"], 3);
    let (status, error) = send(&http, "POST", "/api/v1/topics", r#"{"name": "made"}"#);
    assert_eq!(status, "HTTP/1.1 409 Conflict");
    assert!(error["error"].as_str().unwrap().contains("already exists"));
    let (status, error) = send(&http, "POST", "/api/v1/topics", r#"{"name": "bad name!"}"#);
    assert_eq!(status, "HTTP/1.1 400 Bad Request");
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("invalid topic name"),
        "{error}"
    );
    let (status, _) = post(
        &http,
        "/api/v1/topics",
        "text/plain",
        r#"{"name": "sneaky"}"#,
    );
    assert_eq!(status, "HTTP/1.1 415 Unsupported Media Type");
    assert_eq!(
        json(&http, "/api/v1/topics/sneaky").0,
        "HTTP/1.1 404 Not Found"
    );

    let (status, _) = send(
        &http,
        "POST",
        "/api/v1/topics/made/partitions",
        r#"{"count": 5}"#,
    );
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(
        json(&http, "/api/v1/topics/made").1["partitions"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    let (status, error) = send(
        &http,
        "POST",
        "/api/v1/topics/made/partitions",
        r#"{"count": 2}"#,
    );
    assert_eq!(status, "HTTP/1.1 400 Bad Request", "{error}");
    // The same rule, in the same words, as CreatePartitions over Kafka's protocol: the
    // console's changes go through the broker's admin layer.
    assert!(
        error
            .to_string()
            .contains("Topic currently has 5 partitions"),
        "{error}"
    );
    let (status, error) = send(
        &http,
        "POST",
        "/api/v1/topics/made/partitions",
        r#"{"count": 5}"#,
    );
    assert_eq!(status, "HTTP/1.1 400 Bad Request", "{error}");
    assert!(
        error
            .to_string()
            .contains("Topic already has 5 partitions."),
        "{error}"
    );

    // A group that read all 10 records: a planned reset changes nothing, an executed one does.
    let lines: Vec<String> = (0..10).map(|i| format!("k{i}:v")).collect();
    librdkafka::produce(b, "made", "none", &lines);
    assert_eq!(librdkafka::consume_in_group(b, "readers", "made").len(), 10);
    let lag = || {
        json(&http, "/api/v1/groups/readers").1["offsets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["lag"].as_i64().unwrap())
            .sum::<i64>()
    };
    assert_eq!(lag(), 0);
    let (status, plan) = send(
        &http,
        "POST",
        "/api/v1/groups/readers/reset-offsets",
        r#"{"to": "earliest"}"#,
    );
    assert_eq!(status, "HTTP/1.1 200 OK", "{plan}");
    assert_eq!(plan["executed"], false);
    assert!(
        plan["plan"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["target"] == 0)
    );
    assert_eq!(lag(), 0, "a plan only");
    let (status, _) = send(
        &http,
        "POST",
        "/api/v1/groups/readers/reset-offsets",
        r#"{"to": "earliest", "execute": true}"#,
    );
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(lag(), 10);
    for (body, says) in [
        (r#"{"to": "offset"}"#, "needs a value"),
        (r#"{"to": "sideways"}"#, "to must be earliest"),
    ] {
        let (status, error) = send(&http, "POST", "/api/v1/groups/readers/reset-offsets", body);
        assert_eq!(status, "HTTP/1.1 400 Bad Request", "{body}");
        assert!(error["error"].as_str().unwrap().contains(says), "{error}");
    }

    // With a member, the group is not reset or deleted (as Kafka refuses).
    let member = librdkafka::Member::join(b, "readers", "made", 10_000);
    wait_until("the member joined", Duration::from_secs(30), || {
        json(&http, "/api/v1/groups/readers").1["members"]
            .as_array()
            .unwrap()
            .len()
            == 1
    });
    let (status, error) = send(
        &http,
        "POST",
        "/api/v1/groups/readers/reset-offsets",
        r#"{"to": "latest", "execute": true}"#,
    );
    assert_eq!(status, "HTTP/1.1 409 Conflict", "{error}");
    let (status, _) = send(&http, "DELETE", "/api/v1/groups/readers", "");
    assert_eq!(status, "HTTP/1.1 409 Conflict");
    drop(member);
    wait_until("the member left", Duration::from_secs(30), || {
        json(&http, "/api/v1/groups/readers").1["members"]
            .as_array()
            .unwrap()
            .is_empty()
    });
    let (status, _) = send(&http, "DELETE", "/api/v1/groups/readers", "");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(
        json(&http, "/api/v1/groups/readers").0,
        "HTTP/1.1 404 Not Found"
    );

    // A topic is deleted only with its name typed again.
    let (status, error) = send(
        &http,
        "DELETE",
        "/api/v1/topics/made",
        r#"{"confirm": "mad"}"#,
    );
    assert_eq!(status, "HTTP/1.1 400 Bad Request");
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("type the topic's name")
    );
    assert_eq!(json(&http, "/api/v1/topics/made").0, "HTTP/1.1 200 OK");
    let (status, _) = send(
        &http,
        "DELETE",
        "/api/v1/topics/made",
        r#"{"confirm": "made"}"#,
    );
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(
        json(&http, "/api/v1/topics/made").0,
        "HTTP/1.1 404 Not Found"
    );
}

#[test]
fn search_scans_in_steps_that_say_how_far_they_got() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--http-listen", "127.0.0.1:0"]);
    let http = daemon.metrics.clone().unwrap();
    let b = daemon.addr.as_str();
    let (ok, _, e) = super::logd(&["topics", "create", "s", "--bootstrap", b], "");
    assert!(ok, "{e}");
    // 3,000 records in lz4 batches; "needle" in the values of three, far apart.
    let lines: Vec<String> = (0..3000)
        .map(|i| match i {
            10 | 1500 | 2990 => format!("k{i}:a needle at {i}"),
            _ => format!("k{i}:hay {i}"),
        })
        .collect();
    librdkafka::produce(b, "s", "lz4", &lines);
    let (ok, _, e) = super::logd(
        &[
            "produce",
            "-t",
            "s",
            "-H",
            "trace=needle-in-a-header",
            "--bootstrap",
            b,
        ],
        "plain value\n",
    );
    assert!(ok, "{e}");

    // One call over everything.
    let (status, all) = json(&http, "/api/v1/topics/s/search?q=needle");
    assert_eq!(status, "HTTP/1.1 200 OK", "{all}");
    let offsets = |page: &Value| -> Vec<i64> {
        page["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["offset"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(offsets(&all), [10, 1500, 2990, 3000], "values and a header");
    assert_eq!(all["done"], true);
    assert_eq!(all["scanned"], 3001);
    assert_eq!(
        offsets(&json(&http, "/api/v1/topics/s/search?q=needle&in=value").1),
        [10, 1500, 2990]
    );
    assert_eq!(
        offsets(&json(&http, "/api/v1/topics/s/search?q=needle&in=header").1),
        [3000]
    );
    assert_eq!(
        offsets(&json(&http, "/api/v1/topics/s/search?q=k1500&in=key").1),
        [1500]
    );
    let (_, range) = json(&http, "/api/v1/topics/s/search?q=needle&from=11&to=2990");
    assert_eq!(offsets(&range), [1500], "from inclusive, to exclusive");

    // In steps of 700 records: the first finds one match and says it is not done; a step that
    // finds nothing is not "no messages" either.
    let (_, first) = json(&http, "/api/v1/topics/s/search?q=needle&scan=700");
    assert_eq!(offsets(&first), [10]);
    assert_eq!(
        (first["scanned"].as_i64(), first["done"].as_bool()),
        (Some(700), Some(false))
    );
    let mut found = offsets(&first);
    let mut from = first["scanned_through"].as_i64().unwrap();
    assert_eq!(from, 700);
    let mut steps = 1;
    loop {
        let (_, step) = json(
            &http,
            &format!("/api/v1/topics/s/search?q=needle&scan=700&from={from}"),
        );
        steps += 1;
        if step["matches"].as_array().unwrap().is_empty() && step["done"] == false {
            assert!(
                step["scanned_through"].as_i64().unwrap() > from,
                "progress: {step}"
            );
        }
        found.extend(offsets(&step));
        from = step["scanned_through"].as_i64().unwrap();
        if step["done"] == true {
            break;
        }
    }
    assert_eq!(found, [10, 1500, 2990, 3000]);
    assert_eq!(steps, 5, "3,001 records in steps of 700");
    // A limit on matches stops right after the last one it returns.
    let (_, limited) = json(&http, "/api/v1/topics/s/search?q=needle&limit=2");
    assert_eq!(offsets(&limited), [10, 1500]);
    assert_eq!(
        (
            limited["scanned_through"].as_i64(),
            limited["done"].as_bool()
        ),
        (Some(1501), Some(false))
    );

    for (query, says) in [
        ("", "q, the text to find, is required"),
        ("q=x&in=body", "in must be any, key, value or header"),
        ("q=x&scan=0", "scan must be 1 to 10000000"),
        ("q=x&limit=5000", "limit must be 1 to 1000"),
        ("q=x&from=9999", "outside the partition"),
        ("q=x&from=1&from_timestamp=5", "not both"),
    ] {
        let (status, error) = json(&http, &format!("/api/v1/topics/s/search?{query}"));
        assert_eq!(status, "HTTP/1.1 400 Bad Request", "{query}");
        assert!(
            error["error"].as_str().unwrap().contains(says),
            "{query}: {error}"
        );
    }
}

#[test]
fn a_record_produced_from_the_console_is_stored_as_a_clients_would_be() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--http-listen", "127.0.0.1:0"]);
    let http = daemon.metrics.clone().unwrap();
    let b = daemon.addr.as_str();
    let (ok, _, e) = super::logd(
        &[
            "topics",
            "create",
            "p",
            "--partitions",
            "4",
            "--bootstrap",
            b,
        ],
        "",
    );
    assert!(ok, "{e}");
    let body = r#"{"key": "user-7", "value": "{\"n\": 1}", "headers": [{"key": "trace", "value": "abc"}, {"key": "empty", "value": null}]}"#;
    let (status, done) = send(&http, "POST", "/api/v1/topics/p/messages", body);
    assert_eq!(status, "HTTP/1.1 201 Created", "{done}");
    // Keyed: the partition Kafka's Java client picks (murmur2), as librdkafka's consumer sees.
    let partition = done["partition"].as_i64().unwrap();
    let expected = (logd_partition::murmur2(b"user-7") as u32 & 0x7fff_ffff) % 4;
    assert_eq!(partition, i64::from(expected));
    let read = librdkafka::consume(b, "p", rdkafka::Offset::Beginning);
    assert_eq!(read.len(), 1);
    assert_eq!(i64::from(read[0].partition), partition);
    assert_eq!(read[0].key.as_deref(), Some("user-7"));
    assert_eq!(read[0].value, "{\"n\": 1}");
    let (_, page) = json(
        &http,
        &format!("/api/v1/topics/p/messages?partition={partition}"),
    );
    let record = &page["records"][0];
    assert_eq!(record["headers"][0]["value"]["text"], "abc");
    assert!(
        record["headers"][1]["value"].is_null(),
        "a null header value stays null"
    );

    let (status, error) = send(
        &http,
        "POST",
        "/api/v1/topics/p/messages",
        r#"{"value": "x", "partition": 9}"#,
    );
    assert_eq!(status, "HTTP/1.1 400 Bad Request");
    assert!(error["error"].as_str().unwrap().contains("no partition 9"));
    let (status, _) = send(
        &http,
        "POST",
        "/api/v1/topics/nope/messages",
        r#"{"value": "x"}"#,
    );
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    let big = format!(r#"{{"value": "{}"}}"#, "x".repeat(1_500_000));
    let (status, error) = send(&http, "POST", "/api/v1/topics/p/messages", &big);
    assert_eq!(status, "HTTP/1.1 413 Payload Too Large", "{error}");
    let (status, _) = post(
        &http,
        "/api/v1/topics/p/messages",
        "text/plain",
        r#"{"value": "x"}"#,
    );
    assert_eq!(status, "HTTP/1.1 415 Unsupported Media Type");
    assert_eq!(
        librdkafka::consume(b, "p", rdkafka::Offset::Beginning).len(),
        1,
        "nothing else stored"
    );
}

#[test]
fn messages_of_several_partitions_come_in_time_order_and_export_as_json_lines() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--http-listen", "127.0.0.1:0"]);
    let http = daemon.metrics.clone().unwrap();
    let (ok, _, e) = super::logd(
        &[
            "topics",
            "create",
            "spread",
            "--partitions",
            "3",
            "--bootstrap",
            &daemon.addr,
        ],
        "",
    );
    assert!(ok, "{e}");
    // v0 to v5 over partitions 0, 1, 2, 0, 1, 2, a few ms apart.
    for i in 0..6 {
        let body = format!(r#"{{"value": "v{i}", "partition": {}}}"#, i % 3);
        let (status, _) = send(&http, "POST", "/api/v1/topics/spread/messages", &body);
        assert_eq!(status, "HTTP/1.1 201 Created");
        std::thread::sleep(Duration::from_millis(3));
    }
    let values = |page: &Value| -> Vec<(i64, String)> {
        page["records"]
            .as_array()
            .unwrap_or_else(|| panic!("{page}"))
            .iter()
            .map(|r| {
                (
                    r["partition"].as_i64().unwrap(),
                    r["value"]["text"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let (_, first) = json(
        &http,
        "/api/v1/topics/spread/messages?partition=all&limit=4",
    );
    assert_eq!(
        values(&first),
        [
            (0, "v0".into()),
            (1, "v1".into()),
            (2, "v2".into()),
            (0, "v3".into())
        ]
    );
    // The live tail and the next page continue from each partition's next offset.
    let after: Vec<String> = first["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| format!("{}:{}", p["partition"], p["next_offset"]))
        .collect();
    assert_eq!(after, ["0:2", "1:1", "2:1"]);
    let (_, rest) = json(
        &http,
        &format!(
            "/api/v1/topics/spread/messages?partition=0,1,2&after={}",
            after.join(",")
        ),
    );
    assert_eq!(values(&rest), [(1, "v4".into()), (2, "v5".into())]);
    let (_, two) = json(&http, "/api/v1/topics/spread/messages?partition=2,0");
    assert_eq!(
        values(&two),
        [
            (0, "v0".into()),
            (2, "v2".into()),
            (0, "v3".into()),
            (2, "v5".into())
        ]
    );
    let (_, newest) = json(&http, "/api/v1/topics/spread/messages?partition=all&last=2");
    assert_eq!(values(&newest), [(1, "v4".into()), (2, "v5".into())]);
    let (_, latest) = json(
        &http,
        "/api/v1/topics/spread/messages?partition=all&latest=true",
    );
    assert_eq!(values(&latest), []);
    let ends: Vec<i64> = latest["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["next_offset"].as_i64().unwrap())
        .collect();
    assert_eq!(ends, [2, 2, 2], "a live tail from the end");
    for (query, status) in [
        ("partition=all&offset=1", "400 Bad Request"),
        ("partition=0,x", "400 Bad Request"),
        ("partition=0,7", "404 Not Found"),
        ("partition=all&after=0-1", "400 Bad Request"),
        ("partition=all&format=xml", "400 Bad Request"),
        ("partition=all&latest=yes", "400 Bad Request"),
        ("partition=0&latest=true&offset=1", "400 Bad Request"),
    ] {
        let (got, body) = json(&http, &format!("/api/v1/topics/spread/messages?{query}"));
        assert_eq!(got, format!("HTTP/1.1 {status}"), "{query}: {body}");
    }

    // Export: the same records, a JSON object a line, as a file.
    let mut stream = std::net::TcpStream::connect(&http).unwrap();
    write!(
        stream,
        "GET /api/v1/topics/spread/messages?partition=all&format=jsonl HTTP/1.1\r\nHost: {http}\r\n\
         Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(
        head.contains("content-type: application/x-ndjson"),
        "{head}"
    );
    assert!(
        head.contains("content-disposition: attachment; filename=\"spread.jsonl\""),
        "{head}"
    );
    let lines: Vec<Value> = body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let exported: Vec<&str> = lines
        .iter()
        .map(|r| r["value"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(exported, ["v0", "v1", "v2", "v3", "v4", "v5"]);
    assert_eq!(lines[4]["partition"], 1);
}
