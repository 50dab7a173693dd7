//! `quotas.json` in the data directory: every client quota, replaced atomically and durably on
//! each change (temp file, fsync, rename, directory fsync), so after kill -9 or a power cut the
//! file holds the quotas before or after an acknowledged change, never a mix. The broker is its
//! only writer. The format is in `docs/format.md`.

use std::collections::BTreeMap;
use std::path::Path;

use logd_protocol::quota::{QuotaEntity, QuotaKey};
use logd_storage::Storage;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The file's name in the data directory.
pub const QUOTAS_FILE: &str = "quotas.json";
const FORMAT: u32 = 1;

/// Each entity's quotas.
pub type QuotaMap = BTreeMap<QuotaEntity, BTreeMap<QuotaKey, f64>>;

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileContents {
    format: u32,
    quotas: Vec<Entry>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    entity: QuotaEntity,
    values: BTreeMap<QuotaKey, f64>,
}

/// The quotas stored in `dir` (none when there is no file yet).
pub(crate) fn load(storage: &dyn Storage, dir: &Path) -> Result<QuotaMap> {
    let path = dir.join(QUOTAS_FILE);
    match logd_storage::read_file(storage, &path) {
        Ok(bytes) => decode(&bytes).map_err(|reason| Error::Quotas { path, reason }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(QuotaMap::new()),
        Err(e) => Err(Error::Quotas {
            path,
            reason: e.to_string(),
        }),
    }
}

/// The quotas in a file's bytes, each checked as an alteration would be.
pub fn decode(bytes: &[u8]) -> Result<QuotaMap, String> {
    let contents: FileContents = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if contents.format != FORMAT {
        return Err(format!(
            "format {} is not {FORMAT} (written by another logd version?)",
            contents.format
        ));
    }
    let mut quotas = QuotaMap::new();
    for Entry { entity, values } in contents.quotas {
        let parts = entity.parts();
        QuotaEntity::from_parts(parts).map_err(|e| format!("{entity}: {e}"))?;
        for (key, value) in &values {
            QuotaKey::check(key.name(), *value).map_err(|e| format!("{entity}: {e}"))?;
        }
        if values.is_empty() || quotas.insert(entity.clone(), values).is_some() {
            return Err(format!("{entity}: listed twice or without a value"));
        }
    }
    Ok(quotas)
}

/// Replaces the file with `quotas`.
pub(crate) fn save(storage: &dyn Storage, dir: &Path, quotas: &QuotaMap) -> Result<()> {
    let contents = FileContents {
        format: FORMAT,
        quotas: quotas
            .iter()
            .map(|(entity, values)| Entry {
                entity: entity.clone(),
                values: values.clone(),
            })
            .collect(),
    };
    let mut bytes = serde_json::to_vec_pretty(&contents).expect("quotas serialize");
    bytes.push(b'\n');
    logd_storage::replace_file(storage, dir, QUOTAS_FILE, &bytes, true).map_err(|e| Error::Quotas {
        path: dir.join(QUOTAS_FILE),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use logd_protocol::quota::{CLIENT_ID, USER};
    use logd_storage::RealFs;

    #[test]
    fn golden_file() {
        // The exact bytes docs/format.md shows.
        let golden = r#"{
  "format": 1,
  "quotas": [
    {
      "entity": {
        "user": "billing",
        "client-id": null
      },
      "values": {
        "producer_byte_rate": 1048576.0,
        "request_percentage": 50.0
      }
    }
  ]
}
"#;
        let entity = QuotaEntity::from_parts([(USER, Some("billing")), (CLIENT_ID, None)]).unwrap();
        let quotas = QuotaMap::from([(
            entity,
            BTreeMap::from([
                (QuotaKey::ProducerByteRate, 1048576.0),
                (QuotaKey::RequestPercentage, 50.0),
            ]),
        )]);
        let dir = tempfile::tempdir().unwrap();
        save(&RealFs, dir.path(), &quotas).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join(QUOTAS_FILE)).unwrap(),
            golden
        );
        assert_eq!(load(&RealFs, dir.path()).unwrap(), quotas);
    }

    #[test]
    fn damaged_files_are_clear_errors() {
        for (bytes, expected) in [
            (&br#"{"format": 1, "quotas": ["#[..], "EOF"),
            (br#"{"format": 2, "quotas": []}"#, "format 2"),
            (
                br#"{"format": 1, "quotas": [{"entity": {}, "values": {"producer_byte_rate": 1.0}}]}"#,
                "Invalid empty client quota entity",
            ),
            (
                br#"{"format": 1, "quotas": [{"entity": {"user": "a"}, "values": {"producer_byte_rate": -1.0}}]}"#,
                "must be greater than 0",
            ),
            (
                br#"{"format": 1, "quotas": [{"entity": {"user": "a"}, "values": {"bytes": 1.0}}]}"#,
                "unknown variant",
            ),
            (
                br#"{"format": 1, "quotas": [{"entity": {"user": "a"}, "values": {}}]}"#,
                "without a value",
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join(QUOTAS_FILE), bytes).unwrap();
            let err = load(&RealFs, dir.path()).unwrap_err().to_string();
            assert!(err.contains("quotas.json") && err.contains(expected), "{err}");
        }
    }
}
