//! The client compiles no broker and no engine: a program that only talks to a broker pulls
//! in `logd-protocol` for what both sides share, never `logd-kafka` or `logd`.

use std::process::Command;

#[test]
fn the_client_depends_on_neither_the_broker_nor_the_engine() {
    let output = Command::new(env!("CARGO"))
        .args([
            "tree",
            "-p",
            "logd-client",
            "--edges",
            "normal",
            "--prefix",
            "none",
        ])
        .args(["--format", "{p}", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let tree = String::from_utf8_lossy(&output.stdout);
    let crates: Vec<&str> = tree.lines().filter_map(|l| l.split(' ').next()).collect();
    assert!(crates.contains(&"logd-protocol"), "{tree}");
    for forbidden in ["logd", "logd-kafka", "logd-server"] {
        assert!(
            !crates.contains(&forbidden),
            "logd-client depends on {forbidden}:\n{tree}"
        );
    }
}
