//! Ten thousand partitions under an open-file limit of 1,024: the helper program
//! (`logd-many-partitions`) lowers its own limit, creates ten topics of 1,000 partitions,
//! writes to and reads from every partition, closes, reopens and reads again, with the file
//! cache keeping 512 descriptors; then a second record goes to every hundredth partition and the
//! process exits without closing, and the next open recovers those 100 partitions' tails and scans no other.
//! Without the cache the same program stops near 250 partitions with an error that says which
//! limit it hit and what to do.

use std::path::Path;
use std::process::Command;

/// Runs the helper in `mode` on `data`: whether it exited 0, and what it printed.
fn helper(mode: &str, data: &Path, topics: &str, max_open_files: Option<&str>) -> (bool, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_logd-many-partitions"));
    command.arg(mode).arg(data).args([topics, "1000", "1024"]);
    command.args(max_open_files);
    let out = command.output().expect("run logd-many-partitions");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn ten_thousand_partitions_live_within_a_limit_of_1024_descriptors() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (ok, out) = helper("create", &data, "10", Some("512"));
    assert!(ok, "{out}");
    // Reopened after a clean close: no partition scanned, each holding its one record.
    let found = out.lines().find(|l| l.starts_with("OK ")).unwrap_or("");
    assert!(
        found.starts_with("OK 10000 ") && found.ends_with(" 0 0"),
        "{out}"
    );
    let (ok, out) = helper("crash", &data, "10", Some("512"));
    assert!(!ok, "the crash mode exits without closing: {out}");
    let (ok, out) = helper("open", &data, "10", Some("512"));
    assert!(ok, "{out}");
    assert!(out.trim_end().ends_with(" 100 100"), "{out}");
}

#[test]
fn without_the_file_cache_the_limit_is_hit_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, out) = helper("create", &dir.path().join("data"), "1", None);
    assert!(!ok, "{out}");
    assert!(
        out.contains("too many open files") && out.contains("--max-open-files"),
        "{out}"
    );
}
