//! The Go Kafka clients the daemon tests drive, built from `go/<client>/` (each a small program
//! whose `go.mod` and `go.sum` pin the client library) with the machine's `go`, by the first
//! test that needs one; the modules come from the Go module proxy into a cache under `target/`,
//! and the binary is rebuilt only when the program's sources change.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const SARAMA_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/daemon/go/sarama");
/// What the binary is built from; it is rebuilt when this text changes.
const SARAMA_SOURCES: &[&str] = &[
    include_str!("go/sarama/go.mod"),
    include_str!("go/sarama/go.sum"),
    include_str!("go/sarama/main.go"),
];

/// The sarama 1.22 client (`go/sarama/main.go` says what it does), built on first use.
pub fn sarama() -> &'static Path {
    static SARAMA: OnceLock<PathBuf> = OnceLock::new();
    SARAMA.get_or_init(|| build("sarama", SARAMA_DIR, SARAMA_SOURCES))
}

const FRANZ_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/daemon/go/franz");
const FRANZ_SOURCES: &[&str] = &[
    include_str!("go/franz/go.mod"),
    include_str!("go/franz/go.sum"),
    include_str!("go/franz/main.go"),
];

/// The franz-go client (`go/franz/main.go` says what it does), built on first use.
pub fn franz() -> &'static Path {
    static FRANZ: OnceLock<PathBuf> = OnceLock::new();
    FRANZ.get_or_init(|| build("franz", FRANZ_DIR, FRANZ_SOURCES))
}

fn build(name: &str, source: &str, sources: &[&str]) -> PathBuf {
    let root = super::test_clients_dir("go");
    let _lock = super::provisioning_lock(&root, name);
    let binary = root.join(format!("{name}-client"));
    let stamp = root.join(format!("{name}.sources"));
    let wanted = sources.concat();
    if binary.is_file() && fs::read_to_string(&stamp).ok().as_deref() == Some(&wanted) {
        return binary;
    }
    super::say(&format!(
        "logd tests: building the pinned Go client {name} into {} (first run only)",
        binary.display()
    ));
    let built = Command::new("go")
        .args(["build", "-o"])
        .arg(&binary)
        .arg(".")
        .current_dir(source)
        .env("GOMODCACHE", root.join("mod"))
        .env("GOCACHE", root.join("cache"))
        .env("GOFLAGS", "-modcacherw -mod=readonly")
        .env("GOTOOLCHAIN", "local")
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "go could not be run ({e}): the daemon tests build a Go Kafka client ({name}) \
                 from tests/daemon/go/{name}, so they need Go on PATH"
            )
        });
    assert!(
        built.status.success(),
        "go build of the {name} client failed; is the Go module proxy reachable (GOPROXY \
         selects a mirror)?\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    // Written last, so an interrupted build is redone by the next run.
    fs::write(&stamp, wanted).unwrap_or_else(|e| panic!("{}: {e}", stamp.display()));
    binary
}
