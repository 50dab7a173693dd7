//! The Java Kafka artifacts the daemon tests drive: the clients, tools and Streams pinned in
//! `java/pom.xml`, resolved from Maven Central with the machine's Maven into
//! `target/test-clients/java/lib` by the first test that needs them, with the test programs of
//! `java/src` compiled there with `javac`; and Kafka Connect, pinned in `java/connect/pom.xml`,
//! resolved into `target/test-clients/java-connect/lib`. Later tests, test binaries and runs
//! reuse both while the sources are unchanged.

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
    include_str!("java/src/AdminCalls.java"),
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

/// The pinned Apache Kafka broker's jars (`lib/` under the returned directory), resolved on
/// first use.
pub fn kafka_jars() -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| provision(&KAFKA)).clone()
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

/// One set of pinned artifacts: its Maven project, the test programs compiled against it, and
/// the text that, when it changes, makes the set be resolved again.
struct Pinned {
    /// Its directory under `target/test-clients`.
    name: &'static str,
    /// The folder of its `pom.xml`, under `java/`.
    project: &'static str,
    /// Whether `java/src` is compiled against it.
    programs: bool,
    sources: &'static [&'static str],
}

const CLIENTS: Pinned = Pinned {
    name: "java",
    project: "",
    programs: true,
    sources: SOURCES,
};

const KAFKA: Pinned = Pinned {
    name: "kafka",
    project: "kafka",
    programs: false,
    sources: &[include_str!("java/kafka/pom.xml")],
};

const CONNECT: Pinned = Pinned {
    name: "java-connect",
    project: "connect",
    programs: false,
    sources: &[include_str!("java/connect/pom.xml")],
};

fn provision(pinned: &Pinned) -> PathBuf {
    let root = super::test_clients_dir(pinned.name);
    let _lock = super::provisioning_lock(&root, pinned.name);
    let stamp = root.join("sources.stamp");
    let wanted = pinned.sources.concat();
    if fs::read_to_string(&stamp).ok().as_deref() == Some(&wanted) {
        return root;
    }
    super::say(&format!(
        "logd tests: resolving pinned Java artifacts into {} (first run only)",
        root.display()
    ));
    for dir in ["lib", "classes"] {
        let _ = fs::remove_dir_all(root.join(dir));
    }
    let pom = Path::new(JAVA_DIR).join(pinned.project).join("pom.xml");
    let resolved = Command::new("mvn")
        .args(["-q", "-B", "-f"])
        .arg(&pom)
        .arg("dependency:copy-dependencies")
        .arg(format!("-DoutputDirectory={}", root.join("lib").display()))
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "mvn could not be run ({e}): the daemon tests resolve Kafka's Java artifacts from \
                 Maven Central with Maven, so they need mvn (and a JDK 17 or newer) on PATH"
            )
        });
    require(
        resolved,
        &format!(
            "Maven could not resolve the pinned Java artifacts of {}; is Maven Central reachable \
             (a mirror goes in ~/.m2/settings.xml)?",
            pom.display()
        ),
    );
    if pinned.programs {
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
    }
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
