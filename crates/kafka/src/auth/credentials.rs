//! [`CredentialStore`]: users' SCRAM credentials in `credentials.json` in the data directory,
//! read and written through the injected `Storage` (so the power-cut suite reaches it). Every
//! change is a read-modify-write under a file lock (`credentials.lock`, a lock between
//! processes, not durable state), so the broker and an offline `logd users` never lose each
//! other's changes, and lands atomically (temp file, fsync, rename, directory fsync). The broker
//! notices a changed file at the next login, so a user created offline can log in without a
//! restart. The format is in `docs/format.md`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use logd_storage::{RealFs, Storage};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use logd_protocol::scram::{
    DEFAULT_ITERATIONS, MAX_ITERATIONS, MIN_ITERATIONS, Refused, ScramCredential, ScramMechanism,
    random_bytes,
};

/// The store's file name in the data directory.
pub const CREDENTIALS_FILE: &str = "credentials.json";
const LOCK_FILE: &str = "credentials.lock";
const FORMAT: u32 = 1;
/// Longest user name accepted, in bytes.
const MAX_NAME_BYTES: usize = 256;

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileContents {
    format: u32,
    /// User name, then mechanism name, then the credential.
    users: BTreeMap<String, BTreeMap<String, StoredCredential>>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredCredential {
    salt: String,
    iterations: u32,
    stored_key: String,
    server_key: String,
}

/// Users and their SCRAM credentials, as loaded from one version of the file.
#[derive(Debug, Default, Clone)]
pub struct Credentials {
    users: BTreeMap<String, BTreeMap<ScramMechanism, ScramCredential>>,
}

impl Credentials {
    /// `user`'s credential for `mechanism`.
    pub fn get(&self, user: &str, mechanism: ScramMechanism) -> Option<&ScramCredential> {
        self.users.get(user)?.get(&mechanism)
    }

    /// Every user with the mechanisms they have and each one's iterations.
    pub fn list(&self) -> Vec<(String, Vec<(ScramMechanism, u32)>)> {
        self.users
            .iter()
            .map(|(name, creds)| {
                let mechanisms = creds.iter().map(|(m, c)| (*m, c.iterations)).collect();
                (name.clone(), mechanisms)
            })
            .collect()
    }

    /// Whether `user` has any credential.
    pub fn contains(&self, user: &str) -> bool {
        self.users.contains_key(user)
    }

    fn decode(bytes: &[u8], path: &Path) -> Result<Credentials> {
        let bad = |reason: String| Error::Credentials {
            path: path.to_owned(),
            reason,
        };
        let contents: FileContents =
            serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
        if contents.format != FORMAT {
            return Err(bad(format!("unknown format {}", contents.format)));
        }
        let mut users = BTreeMap::new();
        for (name, stored) in contents.users {
            let mut creds = BTreeMap::new();
            for (mechanism, c) in stored {
                let m = ScramMechanism::from_name(&mechanism)
                    .ok_or_else(|| bad(format!("user {name:?}: unknown mechanism {mechanism}")))?;
                let decode = |field: &str, value: &str| {
                    BASE64
                        .decode(value)
                        .map_err(|_| bad(format!("user {name:?}: {field} is not base64")))
                };
                creds.insert(
                    m,
                    ScramCredential {
                        salt: decode("salt", &c.salt)?,
                        iterations: c.iterations,
                        stored_key: decode("stored_key", &c.stored_key)?,
                        server_key: decode("server_key", &c.server_key)?,
                    },
                );
            }
            users.insert(name, creds);
        }
        Ok(Credentials { users })
    }

    fn encode(&self) -> Vec<u8> {
        let users = self
            .users
            .iter()
            .map(|(name, creds)| {
                let stored = creds
                    .iter()
                    .map(|(m, c)| {
                        let stored = StoredCredential {
                            salt: BASE64.encode(&c.salt),
                            iterations: c.iterations,
                            stored_key: BASE64.encode(&c.stored_key),
                            server_key: BASE64.encode(&c.server_key),
                        };
                        (m.name().to_owned(), stored)
                    })
                    .collect();
                (name.clone(), stored)
            })
            .collect();
        let mut bytes = serde_json::to_vec_pretty(&FileContents {
            format: FORMAT,
            users,
        })
        .expect("credentials serialize");
        bytes.push(b'\n');
        bytes
    }
}

/// One version of the file: its bytes (`None`: no file, or unreadable). The file is small and
/// read at each login anyway, so comparing bytes is cheap and misses no replacement.
type Stamp = Option<Vec<u8>>;

/// The credentials of one data directory.
#[derive(Debug)]
pub struct CredentialStore {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    loaded: Mutex<(Stamp, Arc<Credentials>)>,
    /// Keys the salt shown for unknown users: stable for a name within a run.
    unknown_user_key: Vec<u8>,
}

impl CredentialStore {
    /// The store in data directory `dir` (empty when it has no credentials file yet); a
    /// damaged file is an error naming it.
    pub fn open(dir: &Path) -> Result<CredentialStore> {
        CredentialStore::open_with(Arc::new(RealFs), dir)
    }

    /// [`CredentialStore::open`] on `storage`.
    pub fn open_with(storage: Arc<dyn Storage>, dir: &Path) -> Result<CredentialStore> {
        let store = CredentialStore::unloaded_with(storage, dir);
        let bytes = store.read_bytes()?;
        let credentials = store.decode(bytes.as_deref())?;
        *store.loaded.lock() = (bytes, Arc::new(credentials));
        Ok(store)
    }

    /// The store in data directory `dir`, read at the first [`CredentialStore::current`].
    pub fn unloaded(dir: &Path) -> CredentialStore {
        CredentialStore::unloaded_with(Arc::new(RealFs), dir)
    }

    fn unloaded_with(storage: Arc<dyn Storage>, dir: &Path) -> CredentialStore {
        CredentialStore {
            storage,
            dir: dir.to_owned(),
            // No file holds these bytes (they are not JSON), so the first look reads the file.
            loaded: Mutex::new((Some(vec![0xff]), Arc::default())),
            unknown_user_key: random_bytes(32),
        }
    }

    /// The credentials file's path.
    pub fn path(&self) -> PathBuf {
        self.dir.join(CREDENTIALS_FILE)
    }

    /// The file's bytes (`None` when there is no file).
    fn read_bytes(&self) -> Result<Option<Vec<u8>>> {
        let path = self.path();
        match logd_storage::read_file(&*self.storage, &path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::Credentials {
                reason: e.to_string(),
                path,
            }),
        }
    }

    fn decode(&self, bytes: Option<&[u8]>) -> Result<Credentials> {
        match bytes {
            Some(bytes) => Credentials::decode(bytes, &self.path()),
            None => Ok(Credentials::default()),
        }
    }

    fn read(&self) -> Result<Credentials> {
        self.decode(self.read_bytes()?.as_deref())
    }

    /// The current credentials, re-read if the file changed since the last look. A file that
    /// became unreadable keeps the last good version in force (and says so in the log).
    pub fn current(&self) -> Arc<Credentials> {
        let now = self.read_bytes();
        let mut loaded = self.loaded.lock();
        let changed = match &now {
            Ok(bytes) => loaded.0 != *bytes,
            Err(_) => true,
        };
        if changed {
            match now.and_then(|bytes| Ok((self.decode(bytes.as_deref())?, bytes))) {
                Ok((credentials, bytes)) => *loaded = (bytes, Arc::new(credentials)),
                Err(e) => {
                    tracing::error!(error = %e, "credentials file unreadable; keeping the last good one");
                }
            }
        }
        loaded.1.clone()
    }

    /// The salt shown to a user without a credential: derived from the name, so repeated
    /// attempts see the same one, and unpredictable, so it gives nothing away.
    pub fn unknown_user_salt(&self, user: &str) -> Vec<u8> {
        ScramMechanism::Sha256.hmac(&self.unknown_user_key, user.as_bytes())
    }

    /// Whether `password` is `user`'s (SASL PLAIN's check, and the console's login): any
    /// stored SCRAM credential of the user proves it, by recomputing its salted key, so no
    /// password is ever stored. An unknown user costs the same PBKDF2 work against a
    /// throwaway credential, so timing does not tell who exists. Thousands of hash rounds:
    /// call it where blocking is allowed.
    pub fn check_password(&self, user: &str, password: &[u8]) -> std::result::Result<(), Refused> {
        self.check_password_in(&self.current(), user, password)
    }

    /// [`CredentialStore::check_password`] against a version of the credentials already read.
    pub(crate) fn check_password_in(
        &self,
        credentials: &Credentials,
        user: &str,
        password: &[u8],
    ) -> std::result::Result<(), Refused> {
        let stored = ScramMechanism::ALL
            .into_iter()
            .find_map(|m| credentials.get(user, m).map(|c| (m, c.clone())));
        let known = stored.is_some();
        let (mechanism, credential) = stored.unwrap_or_else(|| {
            let m = ScramMechanism::Sha256;
            let salt = self.unknown_user_salt(user);
            let throwaway =
                ScramCredential::from_salted_password(m, &salt, salt.clone(), DEFAULT_ITERATIONS);
            (m, throwaway)
        });
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&credential.iterations) {
            return Err(Refused("stored credential's iterations are out of range"));
        }
        if credential.matches_password(mechanism, password) && known {
            Ok(())
        } else {
            Err(Refused("wrong password or unknown user"))
        }
    }

    /// Sets `user`'s credential for `mechanism`, creating the user if needed.
    pub fn upsert(
        &self,
        user: &str,
        mechanism: ScramMechanism,
        credential: ScramCredential,
    ) -> Result<()> {
        check_name(user)?;
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&credential.iterations) {
            return Err(Error::Credentials {
                path: self.path(),
                reason: format!(
                    "iterations must be {MIN_ITERATIONS} to {MAX_ITERATIONS}, not {}",
                    credential.iterations
                ),
            });
        }
        self.modify(|c| {
            c.users
                .entry(user.to_owned())
                .or_default()
                .insert(mechanism, credential);
            true
        })
        .map(|_| ())
    }

    /// Removes `user`'s credential for `mechanism`, or all of them when `None`; false when
    /// there was nothing to remove.
    pub fn delete(&self, user: &str, mechanism: Option<ScramMechanism>) -> Result<bool> {
        self.modify(|c| match mechanism {
            None => c.users.remove(user).is_some(),
            Some(m) => {
                let Some(creds) = c.users.get_mut(user) else {
                    return false;
                };
                let removed = creds.remove(&m).is_some();
                if creds.is_empty() {
                    c.users.remove(user);
                }
                removed
            }
        })
    }

    /// Applies `change` to the file's current contents under the lock and writes the result
    /// when `change` says it changed something.
    fn modify(&self, change: impl FnOnce(&mut Credentials) -> bool) -> Result<bool> {
        let lock_path = self.dir.join(LOCK_FILE);
        let _lock = self
            .storage
            .lock_file(&lock_path)
            .map_err(|e| Error::Credentials {
                path: lock_path.clone(),
                reason: e.to_string(),
            })?;
        let mut credentials = self.read()?;
        if !change(&mut credentials) {
            return Ok(false);
        }
        let bytes = credentials.encode();
        logd_storage::replace_file(&*self.storage, &self.dir, CREDENTIALS_FILE, &bytes, true)
            .map_err(|e| Error::Credentials {
                path: self.path(),
                reason: e.to_string(),
            })?;
        *self.loaded.lock() = (Some(bytes), Arc::new(credentials));
        Ok(true)
    }
}

/// A user name must be non-empty, at most 256 bytes, and free of control characters (it
/// appears in log lines and principals).
fn check_name(user: &str) -> Result<()> {
    if user.is_empty() || user.len() > MAX_NAME_BYTES || user.chars().any(char::is_control) {
        return Err(Error::InvalidUserName(user.to_owned()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use logd_storage::SimFs;

    use super::*;

    fn credential(password: &[u8]) -> ScramCredential {
        ScramCredential::new(ScramMechanism::Sha256, password, MIN_ITERATIONS)
    }

    #[test]
    fn changes_survive_reopening_and_other_writers_show_up() {
        let dir = tempfile::tempdir().unwrap();
        let store = CredentialStore::open(dir.path()).unwrap();
        assert!(store.current().list().is_empty());
        store
            .upsert("alice", ScramMechanism::Sha256, credential(b"a"))
            .unwrap();
        store
            .upsert("alice", ScramMechanism::Sha512, credential(b"a"))
            .unwrap();
        // A second store on the same directory (an offline `logd users`) adds a user; the
        // first sees it at its next look.
        let other = CredentialStore::open(dir.path()).unwrap();
        other
            .upsert("bob", ScramMechanism::Sha256, credential(b"b"))
            .unwrap();
        let now = store.current();
        assert_eq!(
            now.list(),
            vec![
                (
                    "alice".to_owned(),
                    vec![
                        (ScramMechanism::Sha256, MIN_ITERATIONS),
                        (ScramMechanism::Sha512, MIN_ITERATIONS)
                    ]
                ),
                (
                    "bob".to_owned(),
                    vec![(ScramMechanism::Sha256, MIN_ITERATIONS)]
                )
            ]
        );
        assert!(
            now.get("bob", ScramMechanism::Sha256)
                .unwrap()
                .matches_password(ScramMechanism::Sha256, b"b")
        );
        assert!(store.delete("alice", Some(ScramMechanism::Sha512)).unwrap());
        assert!(store.delete("bob", None).unwrap());
        assert!(!store.delete("bob", None).unwrap());
        let reopened = CredentialStore::open(dir.path()).unwrap();
        assert_eq!(
            reopened.current().list(),
            vec![(
                "alice".to_owned(),
                vec![(ScramMechanism::Sha256, MIN_ITERATIONS)]
            )]
        );
    }

    #[test]
    fn a_damaged_file_is_a_clear_error_at_open_and_ignored_by_a_running_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = CredentialStore::open(dir.path()).unwrap();
        store
            .upsert("alice", ScramMechanism::Sha256, credential(b"a"))
            .unwrap();
        std::fs::write(
            dir.path().join(CREDENTIALS_FILE),
            b"{\"format\":1,\"users\":",
        )
        .unwrap();
        let err = CredentialStore::open(dir.path()).unwrap_err().to_string();
        assert!(err.contains(CREDENTIALS_FILE), "{err}");
        assert!(store.current().contains("alice"));
        std::fs::write(
            dir.path().join(CREDENTIALS_FILE),
            br#"{"format":1,"users":{"x":{"SCRAM-SHA-1":{"salt":"","iterations":4096,"stored_key":"","server_key":""}}}}"#,
        )
        .unwrap();
        let err = CredentialStore::open(dir.path()).unwrap_err().to_string();
        assert!(err.contains("unknown mechanism SCRAM-SHA-1"), "{err}");
    }

    #[test]
    fn bad_names_and_iterations_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = CredentialStore::open(dir.path()).unwrap();
        for name in ["", "a\nb", &"x".repeat(257)] {
            assert!(
                store
                    .upsert(name, ScramMechanism::Sha256, credential(b"a"))
                    .is_err()
            );
        }
        let mut weak = credential(b"a");
        weak.iterations = 1000;
        assert!(store.upsert("a", ScramMechanism::Sha256, weak).is_err());
        assert!(!dir.path().join(CREDENTIALS_FILE).exists());
    }

    #[test]
    fn unknown_users_get_a_stable_salt_of_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let store = CredentialStore::open(dir.path()).unwrap();
        assert_eq!(store.unknown_user_salt("x"), store.unknown_user_salt("x"));
        assert_ne!(store.unknown_user_salt("x"), store.unknown_user_salt("y"));
    }

    /// Users, each with its mechanisms.
    type Users = Vec<(String, Vec<(ScramMechanism, u32)>)>;

    /// Users listed by the store.
    fn users(store: &CredentialStore) -> Users {
        store.current().list()
    }

    /// Adds alice, then bob, then removes alice, until done or the power is cut; returns the
    /// acknowledged users and every list that was attempted.
    fn credentials_workload(fs: &SimFs) -> (Users, Vec<Users>) {
        let mut acked = Vec::new();
        let mut attempts = vec![acked.clone()];
        let dir = Path::new("/d");
        if logd_storage::create_dir_durable(fs, dir).is_err() {
            return (acked, attempts);
        }
        let Ok(store) = CredentialStore::open_with(Arc::new(fs.clone()), dir) else {
            return (acked, attempts);
        };
        let alice = (
            "alice".to_owned(),
            vec![(ScramMechanism::Sha256, MIN_ITERATIONS)],
        );
        let bob = (
            "bob".to_owned(),
            vec![(ScramMechanism::Sha256, MIN_ITERATIONS)],
        );
        for (next, step) in [
            (vec![alice.clone()], 0),
            (vec![alice, bob.clone()], 1),
            (vec![bob], 2),
        ] {
            attempts.push(next);
            let result = match step {
                0 => store.upsert("alice", ScramMechanism::Sha256, credential(b"a")),
                1 => store.upsert("bob", ScramMechanism::Sha256, credential(b"b")),
                _ => store.delete("alice", None).map(|_| ()),
            };
            match result {
                Ok(()) => acked = users(&store),
                Err(_) => break,
            }
        }
        (acked, attempts)
    }

    #[test]
    fn a_power_cut_at_any_operation_keeps_every_acknowledged_user_change() {
        let check = |image: SimFs, (acked, attempts): &(Users, Vec<Users>), cut, mode| {
            let _ = image.create_dir_all(Path::new("/d"));
            let store = CredentialStore::open_with(Arc::new(image), Path::new("/d"))
                .unwrap_or_else(|e| panic!("cut {cut} {mode:?}: reopen failed: {e}"));
            let recovered = users(&store);
            let acked_at = attempts.iter().rposition(|a| a == acked).unwrap();
            let position = attempts.iter().rposition(|a| *a == recovered);
            assert!(
                matches!(position, Some(p) if p >= acked_at),
                "cut {cut} {mode:?}: recovered {recovered:?}, acknowledged {acked:?}"
            );
        };
        SimFs::every_power_cut(credentials_workload, check);
    }
}
