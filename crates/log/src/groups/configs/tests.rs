//! Group configs through the engine: defaults, changes all or none, reopen, power cuts.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use logd_storage::{PowerCutStore, SimFs, Storage};
use proptest::prelude::*;

use super::*;
use crate::{Config, Log};

fn shown(log: &Log, group: &str) -> BTreeMap<&'static str, (String, bool)> {
    log.group_configs(group)
        .into_iter()
        .map(|e| (e.name, (e.value, e.set)))
        .collect()
}

#[test]
fn configs_are_set_all_or_none_and_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), Config::default()).unwrap();
    let defaults = shown(&log, "billing");
    // Every config Kafka shows, internal ones hidden.
    assert_eq!(defaults.len(), 21);
    assert_eq!(
        defaults["share.record.lock.duration.ms"],
        ("30000".into(), false)
    );
    assert!(!defaults.contains_key("consumer.assignor.offload.enable"));

    log.alter_group_configs(
        "billing",
        &[
            ("share.delivery.count.limit", Some(" 3 ")),
            ("consumer.assignor.offload.enable", Some("FALSE")),
        ],
        false,
    )
    .unwrap();
    // One bad value: nothing of the request changes.
    let refused = log
        .alter_group_configs(
            "billing",
            &[
                ("share.record.lock.duration.ms", Some("20000")),
                ("share.isolation.level", Some("serializable")),
            ],
            false,
        )
        .unwrap_err();
    assert!(
        matches!(&refused, Error::InvalidGroupConfig(m) if m.contains("String must be one of")),
        "{refused}"
    );
    log.alter_group_configs(
        "billing",
        &[("share.record.lock.duration.ms", Some("20000"))],
        true,
    )
    .unwrap();
    let unknown = log
        .alter_group_configs("billing", &[("nope", Some("1"))], false)
        .unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "invalid group config: Unknown group config name: nope"
    );
    // Deleting a name Kafka does not know is a no-op there too.
    log.alter_group_configs("billing", &[("nope", None)], false)
        .unwrap();

    let expected = |log: &Log| {
        let now = shown(log, "billing");
        assert_eq!(now.len(), 22);
        assert_eq!(now["share.delivery.count.limit"], ("3".into(), true));
        assert_eq!(
            now["consumer.assignor.offload.enable"],
            ("false".into(), true)
        );
        assert_eq!(
            now["share.record.lock.duration.ms"],
            ("30000".into(), false)
        );
        assert_eq!(shown(log, "other"), defaults);
    };
    expected(&log);
    drop(log);
    let log = Log::open(dir.path(), Config::default()).unwrap();
    expected(&log);

    log.alter_group_configs(
        "billing",
        &[
            ("share.delivery.count.limit", None),
            ("consumer.assignor.offload.enable", None),
        ],
        false,
    )
    .unwrap();
    assert_eq!(shown(&log, "billing"), defaults);
    drop(log);
    let on_disk = std::fs::read_to_string(dir.path().join(store::GROUP_CONFIGS_FILE)).unwrap();
    assert!(on_disk.contains("\"groups\": {}"), "{on_disk}");
}

#[test]
fn a_damaged_file_stops_the_engine_from_opening() {
    let dir = tempfile::tempdir().unwrap();
    drop(Log::open(dir.path(), Config::default()).unwrap());
    std::fs::write(
        dir.path().join(store::GROUP_CONFIGS_FILE),
        br#"{"format": 1, "groups": {"g": {"share.delivery.count.limit": "99"}}}"#,
    )
    .unwrap();
    let err = Log::open(dir.path(), Config::default()).unwrap_err();
    assert!(
        matches!(err, Error::GroupConfigs { .. }) && err.to_string().contains("range 2 to 10"),
        "{err}"
    );
}

type Map = BTreeMap<String, BTreeMap<String, String>>;

fn stored(configs: &GroupConfigs) -> Map {
    configs.groups.lock().clone()
}

/// Group configs under the power-cut test: six changes of `share.delivery.count.limit` on four
/// groups, the last returning to the default what the second set.
struct Store;

impl PowerCutStore for Store {
    type State = Map;
    type Store = GroupConfigs;

    fn open(&self, storage: Arc<dyn Storage>, dir: &Path) -> Result<GroupConfigs, String> {
        GroupConfigs::open(storage, dir).map_err(|e| e.to_string())
    }

    fn state(&self, store: &GroupConfigs) -> Map {
        stored(store)
    }

    fn change(&self, store: &mut GroupConfigs, step: u32, acked: &Map) -> (Map, bool) {
        let group = format!("g{}", step % 4);
        let value = (step != 5).then(|| (2 + step).to_string());
        let mut next = acked.clone();
        match &value {
            Some(v) => {
                next.insert(
                    group.clone(),
                    BTreeMap::from([("share.delivery.count.limit".to_owned(), v.clone())]),
                );
            }
            None => {
                next.remove(&group);
            }
        }
        let applied = store
            .alter(
                &group,
                &[("share.delivery.count.limit", value.as_deref())],
                false,
            )
            .is_ok();
        (next, applied)
    }
}

#[test]
fn a_power_cut_at_any_operation_keeps_every_acknowledged_change() {
    let states = logd_storage::check_every_power_cut(&Store);
    assert!(states > 100, "{states} crash states");
}

#[test]
fn without_the_directory_fsync_a_power_cut_can_lose_an_acknowledged_change() {
    // The negative control of the test above: the same workload's checks fail when the file
    // is replaced without syncing its directory, so that test can tell.
    let fs = SimFs::new();
    logd_storage::create_dir_durable(&fs, Path::new("/d")).unwrap();
    let mut groups = Map::new();
    groups.insert(
        "g".into(),
        BTreeMap::from([("share.delivery.count.limit".into(), "3".into())]),
    );
    let bytes = serde_json::to_vec(&serde_json::json!({"format": 1, "groups": groups})).unwrap();
    logd_storage::replace_file(
        &fs,
        Path::new("/d"),
        store::GROUP_CONFIGS_FILE,
        &bytes,
        false,
    )
    .unwrap();
    let image = fs.crash_image(logd_storage::CrashMode::DropUnsynced, 0);
    let recovered = GroupConfigs::open(Arc::new(image), Path::new("/d")).unwrap();
    assert!(stored(&recovered).is_empty());
    let fs = SimFs::new();
    logd_storage::create_dir_durable(&fs, Path::new("/d")).unwrap();
    let configs = GroupConfigs::open(Arc::new(fs.clone()), Path::new("/d")).unwrap();
    configs
        .alter("g", &[("share.delivery.count.limit", Some("3"))], false)
        .unwrap();
    let image = fs.crash_image(logd_storage::CrashMode::DropUnsynced, 0);
    let recovered = GroupConfigs::open(Arc::new(image), Path::new("/d")).unwrap();
    assert_eq!(stored(&recovered), groups);
}

proptest! {
    #[test]
    fn any_bytes_decode_or_give_an_error(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = decode(&bytes);
    }

    #[test]
    fn any_values_decode_only_as_an_alteration_would_store_them(
        name in prop::sample::select(defs::DEFS.iter().map(|d| d.name).collect::<Vec<_>>()),
        value in "[ a-zA-Z0-9_:.,-]{0,12}",
    ) {
        let text = serde_json::json!({"format": 1, "groups": {"g": {name: value}}}).to_string();
        let parsed = defs::def(name).unwrap().parse(&value);
        match decode(text.as_bytes()) {
            Ok(groups) => prop_assert_eq!(Ok(&groups["g"][name]), parsed.as_ref()),
            Err(_) => prop_assert!(parsed.as_deref() != Ok(value.as_str())),
        }
    }
}
