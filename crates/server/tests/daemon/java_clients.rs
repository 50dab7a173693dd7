//! The Java Kafka clients the daemon tests drive: the artifacts pinned in `java/pom.xml`,
//! resolved from Maven Central with the machine's Maven into `target/test-clients/java/lib` by
//! the first test that needs them, and the test programs of `java/src` compiled there with
//! `javac`; later tests, test binaries and runs reuse both while the sources are unchanged.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const JAVA_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/daemon/java");
/// What the libraries and classes are made from; remade when this text changes.
const SOURCES: &[&str] = &[
    include_str!("java/pom.xml"),
    include_str!("java/src/JavaClients.java"),
    include_str!("java/src/DeleteRecords.java"),
    include_str!("java/src/WordCount.java"),
];

/// `java` running `main` of the test programs with `args`, on the pinned clients, with a
/// small heap.
pub fn java(main: &str, args: &[&str]) -> Command {
    let root = provisioned();
    let mut command = Command::new("java");
    command
        .arg("-Xmx128m")
        .arg("-XX:+UseSerialGC")
        .arg("-cp")
        .arg(format!(
            "{}/*:{}",
            root.join("lib").display(),
            root.join("classes").display()
        ))
        .arg(main)
        .args(args);
    command
}

fn provisioned() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(provision)
}

fn provision() -> PathBuf {
    let root = super::test_clients_dir("java");
    let _lock = super::provisioning_lock(&root, "java");
    let stamp = root.join("sources.stamp");
    let wanted = SOURCES.concat();
    if fs::read_to_string(&stamp).ok().as_deref() == Some(&wanted) {
        return root;
    }
    super::say(&format!(
        "logd tests: resolving the pinned Java Kafka clients into {} (first run only)",
        root.display()
    ));
    for dir in ["lib", "classes"] {
        let _ = fs::remove_dir_all(root.join(dir));
    }
    let resolved = Command::new("mvn")
        .args(["-q", "-B", "-f"])
        .arg(Path::new(JAVA_DIR).join("pom.xml"))
        .arg("dependency:copy-dependencies")
        .arg(format!("-DoutputDirectory={}", root.join("lib").display()))
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "mvn could not be run ({e}): the daemon tests resolve Kafka's Java client from \
                 Maven Central with Maven, so they need mvn (and a JDK 17 or newer) on PATH"
            )
        });
    require(
        resolved,
        "Maven could not resolve the pinned Java clients of tests/daemon/java/pom.xml; is Maven \
         Central reachable (a mirror goes in ~/.m2/settings.xml)?",
    );
    let sources: Vec<PathBuf> = fs::read_dir(Path::new(JAVA_DIR).join("src"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "java"))
        .collect();
    let compiled = Command::new("javac")
        .arg("-d")
        .arg(root.join("classes"))
        .arg("-cp")
        .arg(format!("{}/*", root.join("lib").display()))
        .args(&sources)
        .output()
        .unwrap_or_else(|e| panic!("javac could not be run ({e}): the tests need a JDK"));
    require(compiled, "javac could not compile tests/daemon/java/src");
    // Written last, so an interrupted provisioning is redone by the next run.
    fs::write(&stamp, wanted).unwrap_or_else(|e| panic!("{}: {e}", stamp.display()));
    root
}

fn require(output: Output, what: &str) {
    assert!(
        output.status.success(),
        "{what}\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
