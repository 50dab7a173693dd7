//! The Python Kafka clients the daemon tests drive (kafka-python, confluent-kafka and the codec
//! packages), pinned in `requirements.txt` and installed into a virtual environment under
//! `target/` by the first test that needs them; later tests, test binaries and runs reuse it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::provision::require;

/// What the environment holds; it is rebuilt when this text changes.
const REQUIREMENTS: &str = include_str!("requirements.txt");
const REQUIREMENTS_PATH: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/daemon/requirements.txt");

/// The environment's interpreter, creating the environment on first use.
pub fn python3() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(provision)
}

fn provision() -> PathBuf {
    let root = super::test_clients_dir("");
    let _lock = super::provisioning_lock(&root, "python");
    let venv = root.join("python");
    let python = venv.join("bin").join("python3");
    let stamp = venv.join("logd-requirements.txt");
    if fs::read_to_string(&stamp).ok().as_deref() == Some(REQUIREMENTS) {
        return python;
    }
    super::say(&format!(
        "logd tests: installing the pinned Python Kafka clients into {} (first run only)",
        venv.display()
    ));
    if venv.exists() {
        fs::remove_dir_all(&venv).unwrap_or_else(|e| panic!("remove {}: {e}", venv.display()));
    }
    let created = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "python3 could not be run ({e}): the daemon tests drive kafka-python and \
                 confluent-kafka from a virtual environment they create under target/, so they \
                 need python3 with its venv module on PATH"
            )
        });
    require(
        created,
        "python3 -m venv failed (on Debian, install python3-venv)",
    );
    let installed = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
            "--quiet",
            "-r",
            REQUIREMENTS_PATH,
        ])
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", python.display()));
    require(
        installed,
        "pip could not install the pinned clients of requirements.txt; is the package index \
         reachable (PIP_INDEX_URL selects a mirror)?",
    );
    // Written last, so an interrupted install is redone by the next run.
    fs::write(&stamp, REQUIREMENTS).unwrap_or_else(|e| panic!("{}: {e}", stamp.display()));
    python
}
