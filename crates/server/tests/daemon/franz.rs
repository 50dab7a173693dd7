//! Go's franz-go (1.22, the strictest modern Go client; pinned in `go/franz/go.sum`) against a
//! real daemon: its admin (kadm) creates a topic, its idempotent producer sends 90 keyed
//! records, a consumer in a group reads every one and commits, and kadm lists the topics, the
//! groups, the group's committed offsets and the end offsets, which must agree.

use super::Daemon;
use super::go_clients::franz;

#[test]
fn franz_go_produces_consumes_in_a_group_and_administers() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path(), &[]);
    let output = std::process::Command::new(franz())
        .arg(&daemon.addr)
        .output()
        .expect("franz-client");
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "created franz\n\
         produced 90\n\
         consumed 90\n\
         topics [franz] partitions 3\n\
         groups [fg]\n\
         committed 90\n\
         end 90\n"
    );
}
