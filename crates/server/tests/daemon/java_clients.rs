//! The Java Kafka artifacts the daemon tests drive: the clients, tools and Streams pinned in
//! `java/pom.xml`, resolved from Maven Central with the machine's Maven into
//! `target/test-clients/java/lib` by the first test that needs them, with the test programs of
//! `java/src` compiled there with `javac`; and Kafka Connect, pinned in `java/connect/pom.xml`,
//! resolved into `target/test-clients/java-connect/lib`. Later tests, test binaries and runs
//! reuse both while the sources are unchanged (`tests/support/provision.rs`).

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use super::provision::{Pinned, provision};

/// The test programs' texts: the classes are compiled again when they change.
const PROGRAMS: &[&str] = &[
    include_str!("java/src/JavaClients.java"),
    include_str!("java/src/DeleteRecords.java"),
    include_str!("java/src/WordCount.java"),
    include_str!("java/src/AdminCalls.java"),
    include_str!("java/src/ShareConsumers.java"),
    include_str!("java/src/GroupMember.java"),
];

/// `java` running `main` of the test programs with `args`, on the pinned clients, with a
/// small heap.
pub fn java(main: &str, args: &[&str]) -> Command {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    let root = ROOT.get_or_init(|| provision(&CLIENTS));
    on_classpath(
        &format!(
            "{}/*:{}",
            root.join("lib").display(),
            root.join("classes").display()
        ),
        main,
        args,
    )
}

/// `java` running `main` (Kafka Connect's) with `args` on the pinned Connect classpath.
pub fn connect(main: &str, args: &[&str]) -> Command {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    let root = ROOT.get_or_init(|| provision(&CONNECT));
    on_classpath(&format!("{}/*", root.join("lib").display()), main, args)
}

fn on_classpath(classpath: &str, main: &str, args: &[&str]) -> Command {
    let mut command = Command::new("java");
    command
        .arg("-Xmx128m")
        .arg("-XX:+UseSerialGC")
        .arg("-cp")
        .arg(classpath)
        .arg(main)
        .args(args);
    command
}

const CLIENTS: Pinned = Pinned {
    name: "java",
    pom: include_str!("java/pom.xml"),
    programs: Some(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/daemon/java/src"
    )),
    sources: PROGRAMS,
};

const CONNECT: Pinned = Pinned {
    name: "java-connect",
    pom: include_str!("java/connect/pom.xml"),
    programs: None,
    sources: &[],
};
