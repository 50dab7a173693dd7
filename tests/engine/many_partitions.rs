//! Ten thousand partitions under an open-file limit of 1,024: the helper program
//! (`logd-many-partitions`) lowers its own limit, creates ten topics of 1,000 partitions,
//! writes to and reads from every partition, closes, reopens and reads again, with the file
//! cache keeping 512 descriptors. Without the cache the same program stops near 250 partitions
//! with an error that says which limit it hit and what to do.

use std::process::Command;

fn many_partitions(topics: &str, partitions: &str, max_open_files: Option<&str>) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut command = Command::new(env!("CARGO_BIN_EXE_logd-many-partitions"));
    command
        .arg("create")
        .arg(&data)
        .args([topics, partitions, "1024"]);
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
    let (ok, out) = many_partitions("10", "1000", Some("512"));
    assert!(ok, "{out}");
    assert!(out.starts_with("OK 10000 "), "{out}");
}

#[test]
fn without_the_file_cache_the_limit_is_hit_and_named() {
    let (ok, out) = many_partitions("1", "1000", None);
    assert!(!ok, "{out}");
    assert!(
        out.contains("too many open files") && out.contains("--max-open-files"),
        "{out}"
    );
}
