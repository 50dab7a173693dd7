//! `group_configs.json` in the data directory: the configs set on each group, replaced
//! atomically and durably on each change (temp file, fsync, rename, directory fsync), so after
//! kill -9 or a power cut it holds the configs before or after an acknowledged change, never a
//! mix. Changes are rare (an operator's), so one small file rewritten whole is enough; Kafka
//! keeps them in its metadata log. The format is in `docs/format.md`.

use std::collections::BTreeMap;
use std::path::Path;

use logd_storage::Storage;
use serde::{Deserialize, Serialize};

use super::defs;
use crate::error::{Error, Result};

/// The file's name in the data directory.
pub(crate) const GROUP_CONFIGS_FILE: &str = "group_configs.json";
const FORMAT: u32 = 1;

/// Each group's configs set on it: name to value, as stored.
pub(crate) type GroupConfigMap = BTreeMap<String, BTreeMap<String, String>>;

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileContents {
    format: u32,
    groups: GroupConfigMap,
}

fn damaged(dir: &Path, reason: String) -> Error {
    Error::GroupConfigs {
        path: dir.join(GROUP_CONFIGS_FILE),
        reason,
    }
}

/// The configs stored in `dir` (none when there is no file yet).
pub(crate) fn load(storage: &dyn Storage, dir: &Path) -> Result<GroupConfigMap> {
    match logd_storage::read_file(storage, &dir.join(GROUP_CONFIGS_FILE)) {
        Ok(bytes) => decode(&bytes).map_err(|reason| damaged(dir, reason)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(GroupConfigMap::new()),
        Err(e) => Err(damaged(dir, e.to_string())),
    }
}

/// The configs in a file's bytes, each value checked as an alteration checks it.
pub fn decode(bytes: &[u8]) -> Result<GroupConfigMap, String> {
    let contents: FileContents = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if contents.format != FORMAT {
        return Err(format!(
            "format {} is not {FORMAT} (written by another logd version?)",
            contents.format
        ));
    }
    for (group, configs) in &contents.groups {
        if group.is_empty() || configs.is_empty() {
            return Err(format!("group {group:?}: no name, or no config set"));
        }
        for (name, value) in configs {
            let def =
                defs::def(name).ok_or_else(|| format!("group {group}: unknown config {name}"))?;
            match def.parse(value) {
                Ok(parsed) if parsed == *value => {}
                Ok(_) => return Err(format!("group {group}: {name} {value:?} is not as stored")),
                Err(e) => return Err(format!("group {group}: {e}")),
            }
        }
    }
    Ok(contents.groups)
}

/// Replaces the file with `groups`.
pub(crate) fn save(storage: &dyn Storage, dir: &Path, groups: &GroupConfigMap) -> Result<()> {
    let contents = FileContents {
        format: FORMAT,
        groups: groups.clone(),
    };
    let mut bytes = serde_json::to_vec_pretty(&contents).expect("group configs serialize");
    bytes.push(b'\n');
    logd_storage::replace_file(storage, dir, GROUP_CONFIGS_FILE, &bytes, true)
        .map_err(|e| damaged(dir, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use logd_storage::RealFs;

    #[test]
    fn golden_file() {
        // The exact bytes docs/format.md shows.
        let golden = r#"{
  "format": 1,
  "groups": {
    "billing": {
      "errors.deadletterqueue.topic.name": "dlq.billing",
      "share.delivery.count.limit": "3"
    }
  }
}
"#;
        let groups = GroupConfigMap::from([(
            "billing".to_owned(),
            BTreeMap::from([
                ("share.delivery.count.limit".to_owned(), "3".to_owned()),
                (
                    "errors.deadletterqueue.topic.name".to_owned(),
                    "dlq.billing".to_owned(),
                ),
            ]),
        )]);
        let dir = tempfile::tempdir().unwrap();
        save(&RealFs, dir.path(), &groups).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join(GROUP_CONFIGS_FILE)).unwrap(),
            golden
        );
        assert_eq!(load(&RealFs, dir.path()).unwrap(), groups);
    }

    #[test]
    fn damaged_files_are_clear_errors() {
        for (bytes, expected) in [
            (&br#"{"format": 1, "groups": {"#[..], "EOF"),
            (br#"{"format": 2, "groups": {}}"#, "format 2"),
            (br#"{"format": 1, "groups": {"g": {}}}"#, "no config set"),
            (
                br#"{"format": 1, "groups": {"": {"share.delivery.count.limit": "3"}}}"#,
                "no name",
            ),
            (
                br#"{"format": 1, "groups": {"g": {"nope": "3"}}}"#,
                "unknown config nope",
            ),
            (
                br#"{"format": 1, "groups": {"g": {"share.delivery.count.limit": "30"}}}"#,
                "range 2 to 10",
            ),
            (
                br#"{"format": 1, "groups": {"g": {"share.delivery.count.limit": " 3"}}}"#,
                "not as stored",
            ),
            (
                br#"{"format": 1, "groups": {}, "more": 1}"#,
                "unknown field",
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join(GROUP_CONFIGS_FILE), bytes).unwrap();
            let err = load(&RealFs, dir.path()).unwrap_err().to_string();
            assert!(
                err.contains(GROUP_CONFIGS_FILE) && err.contains(expected),
                "{err}"
            );
        }
    }
}
