//! The console in a real browser: Debian's headless chromium driven by Playwright (Python)
//! against a real daemon. It opens the overview, reads a topic's messages (markup in keys,
//! values and headers shown as text, never run), searches, follows new records, produces a
//! record and finds it by a header search, watches a group's lag fall to 0 while a consumer
//! reads (and a group's partitions without a commit, shown with `-`), reads the traffic
//! charts' axes and latest value, triages the dead letters of the retry layer's seed scenario (the letter's timeline hop
//! by hop, its error class replayed after a dry run), replays one letter of another topic,
//! creates a topic, resets a group after its plan, deletes a topic by typing its name, and
//! checks the layout at a laptop's and a phone's width, saving a screenshot of each view
//! under `target/console-screenshots/`.

use std::path::Path;

use super::{Daemon, librdkafka, logd, python_script, system_chromium};

/// Drives the console at `sys.argv[1]` with the browser at `sys.argv[2]`, saving screenshots
/// in `sys.argv[3]` and producing through the broker at `sys.argv[4]`; prints one JSON object
/// with what it saw.
const BROWSER: &str = r##"
import json, sys, time
from playwright.sync_api import sync_playwright

url, chromium, shots, kafka = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
seen = {"dialogs": 0}
with sync_playwright() as p:
    browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.on("dialog", lambda d: (seen.__setitem__("dialogs", seen["dialogs"] + 1), d.dismiss()))
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(url)
    page.wait_for_selector("#topics button:text-is('web')")
    page.wait_for_selector("#groups button:text-is('billing')")
    seen["group_row"] = page.inner_text("#groups tr:has(button:text-is('billing'))")
    seen["rates"] = page.inner_text("#rates")
    # The traffic charts have a value axis with its unit, a time axis and the latest value.
    page.wait_for_selector("#produce-chart polyline")
    seen["produce_chart"] = page.locator("#produce-chart text").all_text_contents()
    # The value axis, drawn by the page's own chart function over ranges from idle to billions:
    # its three labels never repeat.
    seen["axis_labels"] = page.evaluate("""() => {
      const scratch = document.createElementNS("http://www.w3.org/2000/svg", "svg");
      scratch.id = "axis-scratch";
      document.body.appendChild(scratch);
      const out = [];
      for (const highest of [0, 1, 2, 3, 4, 5, 7, 10, 11, 99, 999, 1000, 1001, 2500, 49999, 1.5e6, 7e9]) {
        chart("axis-scratch", [0, highest], [0, 1000], "records");
        out.push([highest, [...scratch.querySelectorAll("text.value-label")].map(t => t.textContent)]);
      }
      scratch.remove();
      return out;
    }""")
    page.screenshot(path=f"{shots}/overview-1280.png", full_page=True)

    # A topic's messages: the markup comes back as text.
    page.click("#topics button:text-is('web')")
    page.wait_for_selector("#message-rows tr")
    row = page.locator("#message-rows tr").first
    seen["key"] = row.locator("td").nth(2).inner_text()
    seen["value"] = row.locator("td").nth(3).inner_text()
    seen["headers"] = row.locator("td").nth(4).inner_text()
    page.select_option("#m-format", "hex")
    seen["value_hex"] = page.locator("#message-rows tr").first.locator("td").nth(3).inner_text()
    seen["xss"] = page.evaluate("window.__xss === undefined ? null : window.__xss")
    seen["script_elements_in_rows"] = page.locator("#message-rows script, #message-rows img").count()
    page.screenshot(path=f"{shots}/messages-1280.png", full_page=True)

    # Search, and the live tail of a record produced meanwhile.
    page.fill("#s-q", "__xss=2")
    page.select_option("#s-in", "value")
    page.click("#search-form button[type=submit]")
    page.wait_for_function("document.getElementById('search-progress').textContent.startsWith('Searched')")
    seen["search"] = page.inner_text("#search-progress")
    page.click("#messages-form button[type=submit]")
    page.wait_for_selector("#message-rows tr")
    page.check("#m-follow")
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": kafka})
    producer.produce("web", key=b"tail", value=b"a record produced while following")
    producer.flush(10)
    # (Values are shown in hex since the step above; keys stay text.)
    page.wait_for_selector("#message-rows pre:text-is('tail')")
    page.uncheck("#m-follow")
    seen["tailed_rows"] = page.locator("#message-rows tr").count()

    # Produce from the page, with a header, and find the record by a header search.
    page.fill("#p-key", "from-the-page")
    page.fill("#p-value", "typed in a browser")
    page.fill("#p-headers", "origin=console, trace=t-42")
    page.click("#produce-form button")
    page.wait_for_function("document.getElementById('notice').textContent.startsWith('Produced to web')")
    page.fill("#s-q", "t-42")
    page.select_option("#s-in", "header")
    page.click("#search-form button[type=submit]")
    page.wait_for_function("document.getElementById('search-progress').textContent.startsWith('Searched')")
    seen["header_search"] = page.inner_text("#search-progress")
    seen["header_search_key"] = page.locator("#message-rows tr").first.locator("td").nth(2).inner_text()

    # A search within a range of offsets: the record at 2 is outside 0 to 2, inside 2 to 3.
    page.select_option("#s-in", "key")
    page.fill("#s-q", "from-the-page")
    page.select_option("#s-range", "offsets")
    for low, high, key in [("0", "2", "range_search_before"), ("2", "3", "range_search_at")]:
        page.fill("#s-from", low)
        page.fill("#s-to", high)
        page.evaluate("document.getElementById('search-progress').textContent = ''")
        page.click("#search-form button[type=submit]")
        page.wait_for_function("document.getElementById('search-progress').textContent.startsWith('Searched')")
        seen[key] = page.inner_text("#search-progress")
    page.select_option("#s-range", "all")

    # A group's lag falls while a consumer reads: billing catches up on jobs.
    page.wait_for_selector("#groups button:text-is('billing')")
    from confluent_kafka import Consumer
    consumer = Consumer({"bootstrap.servers": kafka, "group.id": "billing",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["jobs"])
    read = 0
    while read < 5:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            read += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    page.wait_for_function(
        "[...document.querySelectorAll('#groups tr')]"
        ".some(r => r.cells[0].textContent === 'billing' && r.cells[3].textContent === '0')")
    seen["group_row_caught_up"] = page.inner_text("#groups tr:has(button:text-is('billing'))")

    # Dead letters made by the retry layer's seed scenario: the letter's timeline, then its
    # error class replayed after a dry run.
    tasks_row = page.locator("#dlq-groups tr:has(td:text-is('tasks.dlq'))")
    seen["seed_group"] = tasks_row.inner_text()
    tasks_row.locator("button:text-is('letters')").click()
    page.wait_for_selector("#letter-rows tr")
    page.locator("#letter-rows tr").first.locator("button:text-is('timeline')").click()
    page.wait_for_selector("#timeline:not([hidden]) #timeline-rows tr")
    seen["timeline"] = [r.split("\t")[0] for r in page.locator("#timeline-rows tr").all_inner_texts()]
    page.screenshot(path=f"{shots}/dead-letters-1280.png", full_page=True)
    tasks_row.locator("button:text-is('replay…')").click()
    page.wait_for_function("document.getElementById('replay-summary').textContent.startsWith('Dry run')")
    seen["dry_run"] = page.inner_text("#replay-summary")
    seen["dry_run_sample"] = page.inner_text("#replay-sample")
    page.click("#replay-confirm")
    page.wait_for_function("document.getElementById('replay-summary').textContent.startsWith('Replayed')")
    seen["replayed"] = page.inner_text("#replay-summary")
    page.wait_for_function(
        "![...document.querySelectorAll('#dlq-groups tr')].some(r => r.cells[0].textContent === 'tasks.dlq')")

    # One letter of another topic, after its own dry run; the rest of its class stays.
    orders_row = page.locator("#dlq-groups tr:has(td:text-is('orders.dlq'))")
    orders_row.locator("button:text-is('letters')").click()
    page.wait_for_selector("#letters:not([hidden]) #letter-rows tr")
    page.fill("#replay-to", "web")
    page.locator("#letter-rows tr").first.locator("button:text-is('replay…')").click()
    page.wait_for_function("document.getElementById('replay-summary').textContent.startsWith('Dry run')")
    seen["letter_dry_run"] = page.inner_text("#replay-summary")
    page.click("#replay-confirm")
    page.wait_for_function("document.getElementById('replay-summary').textContent.startsWith('Replayed')")
    seen["letter_replayed"] = page.inner_text("#replay-summary")
    page.wait_for_function(
        "[...document.querySelectorAll('#dlq-groups tr')]"
        ".some(r => r.cells[0].textContent === 'orders.dlq' && r.cells[4].textContent === '2')")
    page.wait_for_function(
        "[...document.querySelectorAll('#topics tr')]"
        ".some(r => r.cells[0].textContent === 'web' && r.cells[2].textContent === '4')")
    page.fill("#replay-to", "")

    # A member holding partitions its group never committed on: listed with "-" for the
    # commit and the lag, and the partition's end, as Kafka's tools show them.
    watcher = Consumer({"bootstrap.servers": kafka, "group.id": "watchers",
                        "auto.offset.reset": "earliest", "enable.auto.commit": False})
    watcher.subscribe(["web"])
    deadline = time.time() + 30
    while not watcher.assignment() and time.time() < deadline:
        watcher.poll(0.5)
    page.wait_for_selector("#groups button:text-is('watchers')")
    page.click("#groups button:text-is('watchers')")
    page.wait_for_selector("#group-detail:not([hidden]) #group-offsets tr")
    seen["uncommitted_rows"] = page.locator("#group-offsets tr").all_inner_texts()
    seen["group_chart"] = page.locator("#group-chart text").all_text_contents()
    watcher.close()

    # Changes: create a topic, reset a group after its plan, delete the topic by name.
    page.fill("#new-name", "made-here")
    page.fill("#new-partitions", "2")
    page.click("#create-form button")
    page.wait_for_selector("#topics button:text-is('made-here')")
    page.click("#groups button:text-is('billing')")
    page.wait_for_selector("#group-detail:not([hidden])")
    page.select_option("#reset-to", "earliest")
    page.click("#reset-form button[type=submit]")
    page.wait_for_selector("#reset-plan:not([hidden]) #reset-rows tr")
    seen["reset_plan"] = page.inner_text("#reset-rows")
    page.click("#reset-apply")
    page.wait_for_function(
        "[...document.querySelectorAll('#groups tr')]"
        ".some(r => r.cells[0].textContent === 'billing' && r.cells[3].textContent === '7')")
    page.click("#topics button:text-is('made-here')")
    page.wait_for_selector("#topic-title:text-is('Topic made-here')")
    page.fill("#delete-confirm", "made-here")
    page.click("#delete-topic-form button")
    page.wait_for_function(
        "![...document.querySelectorAll('#topics tr')].some(r => r.cells[0].textContent === 'made-here')")
    seen["notice"] = page.inner_text("#notice")
    page.screenshot(path=f"{shots}/changes-1280.png", full_page=True)

    # A phone's width: the page itself does not scroll sideways (wide tables scroll inside
    # their own section).
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(200)
    seen["phone_scroll_width"] = page.evaluate("document.documentElement.scrollWidth")
    page.screenshot(path=f"{shots}/overview-390.png", full_page=True)
    # Each view at a phone's width, as the section it is (a topic's messages, the letters and
    # a timeline opened again: deleting a topic and a replay close them).
    page.click("#topics button:text-is('web')")
    page.wait_for_selector("#messages:not([hidden]) #message-rows tr")
    page.locator("#dlq-groups tr:has(td:text-is('orders.dlq'))").locator("button:text-is('letters')").click()
    page.wait_for_selector("#letters:not([hidden]) #letter-rows tr")
    page.locator("#letter-rows tr").first.locator("button:text-is('timeline')").click()
    page.wait_for_selector("#timeline:not([hidden]) #timeline-rows tr")
    for name, section in [("messages", "#messages"), ("dead-letters", "#letters"),
                          ("timeline", "#timeline"), ("group", "#group-detail")]:
        page.locator(section).screenshot(path=f"{shots}/{name}-390.png")
    seen["other_origins"] = [r for r in requests if not r.startswith(url.rstrip("/"))]
    browser.close()
print(json.dumps(seen))
"##;

#[test]
fn the_console_works_in_a_real_browser() {
    let Some(chromium) = system_chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &["--http-listen", "127.0.0.1:0"]);
    let http = daemon.metrics.clone().unwrap();
    let b = daemon.addr.as_str();
    for topic in ["web", "orders", "orders.dlq"] {
        let (ok, _, e) = logd(&["topics", "create", topic, "--bootstrap", b], "");
        assert!(ok, "{e}");
    }
    let (ok, _, e) = logd(
        &[
            "produce",
            "-t",
            "web",
            "-k",
            "|",
            "-H",
            "note=<b onmouseover=\"window.__xss=3\">hi</b>",
            "--bootstrap",
            b,
        ],
        "<script>window.__xss=1</script>|<img src=x onerror=\"window.__xss=2\">\n",
    );
    assert!(ok, "{e}");
    // A group 5 behind on its own topic.
    librdkafka::produce(b, "jobs", "none", &["a:1", "b:2"]);
    assert_eq!(librdkafka::consume_in_group(b, "billing", "jobs").len(), 2);
    librdkafka::produce(b, "jobs", "none", &["c:3", "d:4", "e:5", "f:6", "g:7"]);
    let (ok, _, e) = logd(
        &[
            "produce",
            "-t",
            "orders.dlq",
            "-k",
            "|",
            "-H",
            "logd.dlq.error.class=Timeout",
            "-H",
            "logd.dlq.reason=max-attempts",
            "-H",
            "logd.dlq.original.topic=orders",
            "-H",
            "logd.dlq.original.partition=0",
            "--bootstrap",
            b,
        ],
        "x|1\ny|2\nz|3\n",
    );
    assert!(ok, "{e}");

    let (_, calls) = super::retry::seed_scenario(b, &dir.path().join("worker"));
    assert_eq!(calls[&3].len(), 3, "task 3 hopped twice, then died");

    let shots = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("console-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let url = format!("http://{http}/");
    let out = python_script(
        BROWSER,
        &[&url, chromium.to_str().unwrap(), shots.to_str().unwrap(), b],
    )
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "the browser script failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["key"], "<script>window.__xss=1</script>", "{seen}");
    assert_eq!(seen["value"], "<img src=x onerror=\"window.__xss=2\">");
    assert_eq!(
        seen["headers"],
        "note: <b onmouseover=\"window.__xss=3\">hi</b>"
    );
    let hex: String = b"<img src=x onerror=\"window.__xss=2\">"
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(seen["value_hex"], hex);
    assert_eq!(seen["xss"], serde_json::Value::Null, "no markup ran");
    assert_eq!(seen["script_elements_in_rows"], 0);
    assert_eq!(seen["dialogs"], 0);
    assert!(
        seen["group_row"]
            .as_str()
            .unwrap()
            .contains("Empty\t0\t5\t"),
        "group, state, members, lag, lag in time: {seen}"
    );
    assert!(
        seen["group_row_caught_up"]
            .as_str()
            .unwrap()
            .starts_with("billing\tEmpty\t0\t0\t"),
        "the lag fell to 0 as the consumer read: {seen}"
    );
    assert!(
        seen["seed_group"]
            .as_str()
            .unwrap()
            .starts_with("tasks.dlq\tTimeout\tmax-attempts\ttasks\t1\t"),
        "{seen}"
    );
    assert_eq!(
        seen["timeline"],
        serde_json::json!([
            "produced",
            "retry, attempt 1",
            "retry, attempt 2",
            "dead-lettered"
        ]),
        "the seed scenario's task 3, hop by hop: {seen}"
    );
    assert!(
        seen["dry_run"].as_str().unwrap().starts_with(
            "Dry run: 1 letter(s) of tasks.dlq (Timeout, max-attempts) would go to tasks-1."
        ),
        "{seen}"
    );
    assert_eq!(seen["replayed"], "Replayed 1 letter(s).");
    let texts = |key: &str| -> Vec<String> {
        seen[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key}: {seen}"))
            .iter()
            .map(|t| t.as_str().unwrap().to_owned())
            .collect()
    };
    let produce_chart = texts("produce_chart");
    for label in ["records/s", "0", "now"] {
        assert!(
            produce_chart.iter().any(|t| t == label),
            "the produce chart labels {label}: {produce_chart:?}"
        );
    }
    assert!(
        produce_chart
            .iter()
            .any(|t| t.starts_with("now ") && t.ends_with(" records/s")),
        "the latest rate written out: {produce_chart:?}"
    );
    assert!(
        produce_chart
            .iter()
            .any(|t| t.starts_with('-') && (t.ends_with(" s") || t.ends_with(" min"))),
        "a time axis: {produce_chart:?}"
    );
    assert!(texts("group_chart").iter().any(|t| t == "records"));
    let axes = seen["axis_labels"]
        .as_array()
        .unwrap_or_else(|| panic!("axis_labels: {seen}"));
    assert_eq!(axes.len(), 17, "{axes:?}");
    for axis in axes {
        let labels: Vec<&str> = axis[1]
            .as_array()
            .unwrap_or_else(|| panic!("{axis}"))
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        let distinct: std::collections::BTreeSet<&str> = labels.iter().copied().collect();
        assert!(
            labels.len() == 3 && distinct.len() == 3 && labels[0] == "0",
            "the value axis for a highest value of {} is labelled {labels:?}",
            axis[0]
        );
    }
    assert_eq!(
        axes[0][1],
        serde_json::json!(["0", "1", "2"]),
        "an idle chart"
    );
    let uncommitted = texts("uncommitted_rows");
    assert!(!uncommitted.is_empty());
    for row in &uncommitted {
        let cells: Vec<&str> = row.split('\t').collect();
        assert_eq!(cells[0], "web", "{row:?}");
        assert_eq!(
            (cells[2], cells[4]),
            ("-", "-"),
            "no commit, no lag: {row:?}"
        );
        assert!(
            cells[3].parse::<i64>().is_ok(),
            "the partition's end: {row:?}"
        );
    }
    assert_eq!(
        seen["dry_run_sample"], "For example:\n3 → task-3  (Timeout)",
        "the letter's key and value: {seen}"
    );
    assert_eq!(
        seen["letter_dry_run"],
        "Dry run: 1 letter(s) of orders.dlq (letter 0/0) would go to web-0. Other pending \
         letters stay pending.",
        "{seen}"
    );
    assert_eq!(seen["letter_replayed"], "Replayed 1 letter(s).");
    assert_eq!(seen["search"], "Searched all 1 records: 1 found.");
    assert_eq!(
        seen["header_search"], "Searched all 3 records: 1 found.",
        "{seen}"
    );
    assert_eq!(seen["header_search_key"], "from-the-page");
    assert_eq!(
        seen["range_search_before"],
        "Searched the range's 2 records: 0 found."
    );
    assert_eq!(
        seen["range_search_at"],
        "Searched the range's 1 records: 1 found."
    );
    assert_eq!(
        seen["tailed_rows"], 2,
        "the first record and the one followed"
    );
    assert_eq!(
        seen["reset_plan"], "jobs\t0\t7\t0",
        "topic, partition, now (after the consumer read), to: {seen}"
    );
    assert_eq!(seen["notice"], "Deleted topic made-here.");
    let rates = seen["rates"].as_str().unwrap();
    assert!(
        rates.starts_with("produce ") && rates.contains("/s · fetch "),
        "{rates}"
    );
    assert!(
        seen["phone_scroll_width"].as_i64().unwrap() <= 390,
        "{seen}"
    );
    assert_eq!(
        seen["other_origins"],
        serde_json::json!([]),
        "nothing from elsewhere"
    );
    for shot in [
        "overview-1280",
        "messages-1280",
        "dead-letters-1280",
        "changes-1280",
        "overview-390",
        "messages-390",
        "dead-letters-390",
        "timeline-390",
        "group-390",
    ] {
        let size = std::fs::metadata(shots.join(format!("{shot}.png")))
            .unwrap()
            .len();
        assert!(size > 1000, "{shot}.png is {size} bytes");
    }
}
