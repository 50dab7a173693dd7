//! `acls.json` in the data directory: every ACL binding, replaced atomically and durably on
//! each change (temp file, fsync, rename, directory fsync), so after kill -9 or a power cut the
//! file holds the ACLs before or after an acknowledged change, never a mix. The broker is its
//! only writer. The format is in `docs/format.md`.

use std::collections::BTreeSet;
use std::path::Path;

use logd_storage::Storage;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use logd_protocol::acl::AclBinding;

/// The file's name in the data directory.
pub const ACLS_FILE: &str = "acls.json";
const FORMAT: u32 = 1;

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileContents {
    format: u32,
    acls: Vec<AclBinding>,
}

/// The bindings stored in `dir` (none when there is no file yet).
pub(crate) fn load(storage: &dyn Storage, dir: &Path) -> Result<BTreeSet<AclBinding>> {
    let path = dir.join(ACLS_FILE);
    match logd_storage::read_file(storage, &path) {
        Ok(bytes) => decode(&bytes).map_err(|reason| Error::Acls { path, reason }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeSet::new()),
        Err(e) => Err(Error::Acls {
            path,
            reason: e.to_string(),
        }),
    }
}

/// The bindings in a file's bytes, each checked as a creation would be.
pub fn decode(bytes: &[u8]) -> Result<BTreeSet<AclBinding>, String> {
    let contents: FileContents = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if contents.format != FORMAT {
        return Err(format!(
            "format {} is not {FORMAT} (written by another logd version?)",
            contents.format
        ));
    }
    contents
        .acls
        .into_iter()
        .map(|binding| {
            binding
                .validate()
                .map(|()| binding.clone())
                .map_err(|e| format!("{binding}: {e}"))
        })
        .collect()
}

/// Replaces the file with `bindings`.
pub(crate) fn save(
    storage: &dyn Storage,
    dir: &Path,
    bindings: &BTreeSet<AclBinding>,
) -> Result<()> {
    let contents = FileContents {
        format: FORMAT,
        acls: bindings.iter().cloned().collect(),
    };
    let mut bytes = serde_json::to_vec_pretty(&contents).expect("bindings serialize");
    bytes.push(b'\n');
    logd_storage::replace_file(storage, dir, ACLS_FILE, &bytes, true).map_err(|e| Error::Acls {
        path: dir.join(ACLS_FILE),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use logd_protocol::acl::{Operation, PatternType, Permission, ResourceType};
    use logd_storage::RealFs;

    #[test]
    fn golden_file() {
        // The exact bytes docs/format.md shows.
        let golden = br#"{
  "format": 1,
  "acls": [
    {
      "resource_type": "TOPIC",
      "resource_name": "orders.retry.",
      "pattern_type": "PREFIXED",
      "principal": "User:billing",
      "host": "*",
      "operation": "WRITE",
      "permission": "ALLOW"
    }
  ]
}
"#;
        let binding = AclBinding {
            resource_type: ResourceType::Topic,
            resource_name: "orders.retry.".into(),
            pattern_type: PatternType::Prefixed,
            principal: "User:billing".into(),
            host: "*".into(),
            operation: Operation::Write,
            permission: Permission::Allow,
        };
        let dir = tempfile::tempdir().unwrap();
        save(&RealFs, dir.path(), &BTreeSet::from([binding.clone()])).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join(ACLS_FILE)).unwrap(),
            std::str::from_utf8(golden).unwrap()
        );
        assert_eq!(
            load(&RealFs, dir.path()).unwrap(),
            BTreeSet::from([binding])
        );
    }

    #[test]
    fn damaged_files_are_clear_errors() {
        for (bytes, expected) in [
            (&b"{\"format\": 1, \"acls\": ["[..], "EOF"),
            (b"{\"format\": 2, \"acls\": []}", "format 2"),
            (
                b"{\"format\": 1, \"acls\": [{\"resource_type\": \"TOPIC\", \"resource_name\": \"\", \
                  \"pattern_type\": \"LITERAL\", \"principal\": \"User:a\", \"host\": \"*\", \
                  \"operation\": \"READ\", \"permission\": \"ALLOW\"}]}",
                "should not be empty",
            ),
            (
                b"{\"format\": 1, \"acls\": [{\"resource_type\": \"TOPIK\"}]}",
                "unknown variant",
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join(ACLS_FILE), bytes).unwrap();
            let err = load(&RealFs, dir.path()).unwrap_err().to_string();
            assert!(err.contains("acls.json") && err.contains(expected), "{err}");
        }
    }
}
