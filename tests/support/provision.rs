//! Where the tests provision what they drive, shared by the test crates that mount this file
//! (`#[path]`; the daemon tests and the scenario tests): `target/test-clients/<name>`, a lock
//! that makes the other test binaries wait while one provisions, and Java artifacts pinned in a
//! `pom.xml`, resolved from Maven Central with the machine's Maven on first use and reused by
//! later tests, binaries and runs while their pinned text is unchanged.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Writes a line to the test process's stderr, which libtest does not capture (it captures only
/// the print macros), so the user sees it in the run's output.
pub fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// `target/test-clients/<sub>` (created): where the tests provision the clients they drive,
/// beside CARGO_TARGET_TMPDIR (`<target>/tmp`), shared by every build profile and test binary.
pub fn test_clients_dir(sub: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target directory")
        .join("test-clients")
        .join(sub);
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    dir
}

/// Holds `<dir>/<name>.lock` until dropped: test binaries run in parallel, and one provisions
/// a client while the others wait here.
pub fn provisioning_lock(dir: &Path, name: &str) -> fs::File {
    let path = dir.join(format!("{name}.lock"));
    let lock = fs::File::create(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    lock.lock()
        .unwrap_or_else(|e| panic!("lock {}: {e}", path.display()));
    lock
}

/// One set of pinned Java artifacts: its Maven project and, if any, the test programs compiled
/// against it.
pub struct Pinned {
    /// Its directory under `target/test-clients`.
    pub name: &'static str,
    /// The text of its `pom.xml` (its dependencies, with their versions).
    pub pom: &'static str,
    /// The folder of `.java` programs compiled against it into `classes/`, if any.
    pub programs: Option<&'static str>,
    /// The programs' texts: when they (or the pom) change, the set is provisioned again.
    pub sources: &'static [&'static str],
}

/// The directory of `pinned`, its jars in `lib/` and its programs in `classes/`, provisioned
/// unless an earlier run did it from the same texts.
pub fn provision(pinned: &Pinned) -> PathBuf {
    let root = test_clients_dir(pinned.name);
    let _lock = provisioning_lock(&root, pinned.name);
    let stamp = root.join("sources.stamp");
    let wanted = [pinned.pom]
        .iter()
        .chain(pinned.sources)
        .copied()
        .collect::<String>();
    if fs::read_to_string(&stamp).ok().as_deref() == Some(&wanted) {
        return root;
    }
    say(&format!(
        "logd tests: resolving pinned Java artifacts into {} (first run only)",
        root.display()
    ));
    for dir in ["lib", "classes"] {
        let _ = fs::remove_dir_all(root.join(dir));
    }
    let pom = root.join("pom.xml");
    fs::write(&pom, pinned.pom).unwrap_or_else(|e| panic!("{}: {e}", pom.display()));
    let resolved = Command::new("mvn")
        .args(["-q", "-B", "-f"])
        .arg(&pom)
        .arg("dependency:copy-dependencies")
        .arg(format!("-DoutputDirectory={}", root.join("lib").display()))
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "mvn could not be run ({e}): the tests resolve Kafka's Java artifacts from Maven \
                 Central with Maven, so they need mvn (and a JDK 17 or newer) on PATH"
            )
        });
    require(
        resolved,
        &format!(
            "Maven could not resolve the pinned Java artifacts of {} (written from the tests' \
             sources); is Maven Central reachable (a mirror goes in ~/.m2/settings.xml)?",
            pom.display()
        ),
    );
    if let Some(programs) = pinned.programs {
        let sources: Vec<PathBuf> = fs::read_dir(programs)
            .unwrap_or_else(|e| panic!("{programs}: {e}"))
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
        require(compiled, &format!("javac could not compile {programs}"));
    }
    // Written last, so an interrupted provisioning is redone by the next run.
    fs::write(&stamp, wanted).unwrap_or_else(|e| panic!("{}: {e}", stamp.display()));
    root
}

/// Panics with `what` and the command's output unless it succeeded: the message a provisioning
/// step that failed leaves.
pub fn require(output: Output, what: &str) {
    assert!(
        output.status.success(),
        "{what}\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
