//! [`Authorizer`]: the ACLs in force and Kafka's decision over them
//! (`StandardAuthorizerData.authorize`): super users may do anything; for a resource, the ACLs
//! on its name, on `*` and on every prefix of it apply; a matching DENY wins over every ALLOW;
//! an ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE and one of ALTER_CONFIGS
//! allows DESCRIBE_CONFIGS; a resource without any ACL gets the configured default (deny).
//! ACLs are indexed by resource type and name, so a decision costs a few hash lookups however
//! many ACLs there are. Changes go to `acls.json` (see `store.rs`) before they apply.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use logd_storage::{RealFs, Storage};
use parking_lot::{Mutex, RwLock};

use super::store;
use crate::error::Result;
use logd_protocol::acl::{
    AclBinding, AclFilter, Operation, PatternType, Permission, ResourceType, WILDCARD,
    WILDCARD_PRINCIPAL,
};

/// How the authorizer decides beyond the ACLs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizerConfig {
    /// Principals allowed everything (Kafka `super.users`).
    pub super_users: Vec<String>,
    /// Allow an operation on a resource no ACL names (Kafka
    /// `allow.everyone.if.no.acl.found`, off by default).
    pub allow_everyone_if_no_acl_found: bool,
}

/// The ACLs of a data directory and the decisions over them. Decisions read a snapshot;
/// changes are written durably first, then swapped in, so a connection already open sees a
/// change from its next request.
#[derive(Debug)]
pub struct Authorizer {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    config: AuthorizerConfig,
    current: RwLock<Arc<AclIndex>>,
    /// Serializes changes (each rewrites the file).
    changing: Mutex<()>,
}

impl Authorizer {
    /// The authorizer over the ACLs stored in `dir` (none if the file does not exist); a
    /// damaged file is an error, so a broker never starts with ACLs it could not read.
    pub fn open(dir: &Path, config: AuthorizerConfig) -> Result<Authorizer> {
        Authorizer::open_with(Arc::new(RealFs), dir, config)
    }

    /// [`Authorizer::open`] on `storage` (the daemon's measured file system, or `SimFs`).
    pub fn open_with(
        storage: Arc<dyn Storage>,
        dir: &Path,
        config: AuthorizerConfig,
    ) -> Result<Authorizer> {
        let bindings = store::load(&*storage, dir)?;
        Ok(Authorizer {
            storage,
            dir: dir.to_owned(),
            config,
            current: RwLock::new(Arc::new(AclIndex::new(bindings))),
            changing: Mutex::new(()),
        })
    }

    /// Its configuration.
    pub fn config(&self) -> &AuthorizerConfig {
        &self.config
    }

    /// Whether `principal` connecting from `host` may do `operation` on the resource
    /// `resource_type` named `name`.
    pub fn authorize(
        &self,
        principal: &str,
        host: &str,
        operation: Operation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        if self.is_super_user(principal) {
            return true;
        }
        let index = self.current.read().clone();
        match index.decide(principal, host, operation, resource_type, name) {
            Some(allowed) => allowed,
            None => self.config.allow_everyone_if_no_acl_found,
        }
    }

    /// Whether `principal` may do `operation` on at least one resource of `resource_type`
    /// (Kafka's `authorizeByResourceType`, which InitProducerId uses for "WRITE on any
    /// topic"): some ALLOW applies that no DENY covers.
    pub fn authorize_any(
        &self,
        principal: &str,
        host: &str,
        operation: Operation,
        resource_type: ResourceType,
    ) -> bool {
        if self.is_super_user(principal) {
            return true;
        }
        let index = self.current.read().clone();
        let Some(of_type) = index.by_type.get(&resource_type) else {
            return self.config.allow_everyone_if_no_acl_found;
        };
        let (mut allows, mut denies) = (Vec::new(), Vec::new());
        for binding in of_type.all() {
            match applies(binding, principal, host, operation) {
                Some(Permission::Allow) => allows.push(binding),
                Some(_) => denies.push(binding),
                None => {}
            }
        }
        let covered = |allow: &AclBinding| {
            denies.iter().any(|deny| match deny.pattern_type {
                PatternType::Literal => {
                    deny.resource_name == WILDCARD
                        || (allow.pattern_type == PatternType::Literal
                            && deny.resource_name == allow.resource_name)
                }
                _ => allow.resource_name.starts_with(&deny.resource_name),
            })
        };
        allows.into_iter().any(|allow| !covered(allow))
    }

    fn is_super_user(&self, principal: &str) -> bool {
        self.config.super_users.iter().any(|s| s == principal)
    }

    /// Every stored binding `filter` selects, in a stable order.
    pub fn describe(&self, filter: &AclFilter) -> Vec<AclBinding> {
        let index = self.current.read().clone();
        index
            .bindings
            .iter()
            .filter(|b| filter.matches(b))
            .cloned()
            .collect()
    }

    /// Stores `bindings` (already valid); those already stored stay as they are.
    pub fn create(&self, bindings: &[AclBinding]) -> Result<()> {
        self.change(|all| {
            let before = all.len();
            all.extend(bindings.iter().cloned());
            all.len() != before
        })
        .map(|_| ())
    }

    /// Removes what each filter selects; a binding several filters select is reported under
    /// the first, as Kafka does.
    pub fn delete(&self, filters: &[AclFilter]) -> Result<Vec<Vec<AclBinding>>> {
        let mut removed = vec![Vec::new(); filters.len()];
        self.change(|all| {
            for (filter, out) in filters.iter().zip(&mut removed) {
                let matched: Vec<AclBinding> =
                    all.iter().filter(|b| filter.matches(b)).cloned().collect();
                for binding in &matched {
                    all.remove(binding);
                }
                *out = matched;
            }
            removed.iter().any(|r| !r.is_empty())
        })?;
        Ok(removed)
    }

    /// Number of stored bindings.
    pub fn len(&self) -> usize {
        self.current.read().bindings.len()
    }

    /// Whether no binding is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Applies `edit` to a copy of the bindings; when it says it changed them, the file is
    /// replaced durably, then the new index is swapped in.
    fn change(&self, edit: impl FnOnce(&mut BTreeSet<AclBinding>) -> bool) -> Result<bool> {
        let _changing = self.changing.lock();
        let mut bindings = self.current.read().bindings.clone();
        if !edit(&mut bindings) {
            return Ok(false);
        }
        store::save(&*self.storage, &self.dir, &bindings)?;
        *self.current.write() = Arc::new(AclIndex::new(bindings));
        Ok(true)
    }
}

/// Whether `binding` applies to this principal, host and operation, and how
/// (`StandardAuthorizerData.findResult`).
fn applies(
    binding: &AclBinding,
    principal: &str,
    host: &str,
    operation: Operation,
) -> Option<Permission> {
    if binding.principal != principal && binding.principal != WILDCARD_PRINCIPAL {
        return None;
    }
    if binding.host != WILDCARD && binding.host != host {
        return None;
    }
    let operation_matches = binding.operation == Operation::All
        || binding.operation == operation
        || (binding.permission == Permission::Allow
            && match operation {
                Operation::Describe => matches!(
                    binding.operation,
                    Operation::Read | Operation::Write | Operation::Delete | Operation::Alter
                ),
                Operation::DescribeConfigs => binding.operation == Operation::AlterConfigs,
                _ => false,
            });
    operation_matches.then_some(binding.permission)
}

/// The bindings, and the same bindings indexed for decisions.
#[derive(Debug, Default)]
struct AclIndex {
    bindings: BTreeSet<AclBinding>,
    by_type: HashMap<ResourceType, TypeIndex>,
}

/// The bindings of one resource type by name.
#[derive(Debug, Default)]
struct TypeIndex {
    /// LITERAL bindings by name, `*` included.
    literal: HashMap<String, Vec<AclBinding>>,
    /// PREFIXED bindings by prefix.
    prefixed: HashMap<String, Vec<AclBinding>>,
    /// The distinct prefix lengths in bytes, so a lookup tries only those.
    prefix_lengths: Vec<usize>,
}

impl TypeIndex {
    fn all(&self) -> impl Iterator<Item = &AclBinding> {
        self.literal
            .values()
            .chain(self.prefixed.values())
            .flatten()
    }
}

impl AclIndex {
    fn new(bindings: BTreeSet<AclBinding>) -> AclIndex {
        let mut by_type: HashMap<ResourceType, TypeIndex> = HashMap::new();
        for binding in &bindings {
            let of_type = by_type.entry(binding.resource_type).or_default();
            let map = match binding.pattern_type {
                PatternType::Prefixed => &mut of_type.prefixed,
                _ => &mut of_type.literal,
            };
            map.entry(binding.resource_name.clone())
                .or_default()
                .push(binding.clone());
        }
        for of_type in by_type.values_mut() {
            let lengths: BTreeSet<usize> = of_type.prefixed.keys().map(String::len).collect();
            of_type.prefix_lengths = lengths.into_iter().collect();
        }
        AclIndex { bindings, by_type }
    }

    /// `Some(decision)` from the ACLs on the resource, `None` when it has none at all.
    fn decide(
        &self,
        principal: &str,
        host: &str,
        operation: Operation,
        resource_type: ResourceType,
        name: &str,
    ) -> Option<bool> {
        let of_type = self.by_type.get(&resource_type)?;
        let prefixes = of_type
            .prefix_lengths
            .iter()
            .take_while(|len| **len <= name.len())
            .filter(|len| name.is_char_boundary(**len))
            .filter_map(|len| of_type.prefixed.get(&name[..*len]));
        let candidates = [of_type.literal.get(name), of_type.literal.get(WILDCARD)]
            .into_iter()
            .flatten()
            .chain(prefixes);
        let (mut found, mut allowed) = (false, false);
        for bindings in candidates {
            found = true;
            for binding in bindings {
                match applies(binding, principal, host, operation) {
                    Some(Permission::Allow) => allowed = true,
                    Some(_) => return Some(false),
                    None => {}
                }
            }
        }
        found.then_some(allowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use logd_storage::SimFs;

    fn acl(
        resource_type: ResourceType,
        name: &str,
        pattern_type: PatternType,
        principal: &str,
        operation: Operation,
        permission: Permission,
    ) -> AclBinding {
        AclBinding {
            resource_type,
            resource_name: name.into(),
            pattern_type,
            principal: principal.into(),
            host: "*".into(),
            operation,
            permission,
        }
    }

    fn authorizer(
        config: AuthorizerConfig,
        acls: &[AclBinding],
    ) -> (tempfile::TempDir, Authorizer) {
        let dir = tempfile::tempdir().unwrap();
        let authorizer = Authorizer::open(dir.path(), config).unwrap();
        authorizer.create(acls).unwrap();
        (dir, authorizer)
    }

    use Operation::*;
    use PatternType::{Literal, Prefixed};
    use Permission::{Allow, Deny};
    use ResourceType::{Cluster, Group, Topic};

    #[test]
    fn deny_wins_and_allows_imply_describe_only() {
        let (_dir, a) = authorizer(
            AuthorizerConfig::default(),
            &[
                acl(Topic, "orders", Literal, "User:alice", Read, Allow),
                acl(Topic, "orders", Literal, "User:alice", Write, Allow),
                acl(Topic, "orders", Literal, "User:alice", Write, Deny),
                acl(Topic, "configs", Literal, "User:alice", AlterConfigs, Allow),
                acl(Topic, "secret", Literal, "User:alice", Read, Deny),
            ],
        );
        let may = |op, name| a.authorize("User:alice", "10.0.0.1", op, Topic, name);
        assert!(may(Read, "orders"));
        assert!(!may(Write, "orders"), "a DENY next to an ALLOW wins");
        assert!(may(Describe, "orders"), "READ implies DESCRIBE");
        assert!(!may(Delete, "orders"));
        assert!(may(DescribeConfigs, "configs"));
        assert!(
            !may(Describe, "configs"),
            "ALTER_CONFIGS does not imply DESCRIBE"
        );
        assert!(
            !may(Describe, "secret"),
            "a DENY implies nothing, and nothing allows"
        );
        assert!(!a.authorize("User:bob", "10.0.0.1", Read, Topic, "orders"));
    }

    #[test]
    fn wildcards_prefixes_and_hosts_apply() {
        let mut from_host = acl(Topic, "logs", Literal, "User:bob", Read, Allow);
        from_host.host = "10.0.0.7".into();
        let (_dir, a) = authorizer(
            AuthorizerConfig::default(),
            &[
                acl(Topic, "*", Literal, "User:reader", Read, Allow),
                acl(Topic, "orders.retry.", Prefixed, "User:alice", Write, Allow),
                acl(Topic, "orders.", Prefixed, "User:alice", Write, Deny),
                acl(Topic, "tenant-a.", Prefixed, "User:*", All, Allow),
                acl(Group, "billing", Literal, "User:alice", Read, Allow),
                from_host,
            ],
        );
        assert!(a.authorize("User:reader", "h", Read, Topic, "anything"));
        assert!(!a.authorize("User:reader", "h", Write, Topic, "anything"));
        // The longer prefix allows, the shorter denies: the DENY wins.
        assert!(!a.authorize("User:alice", "h", Write, Topic, "orders.retry.1s"));
        assert!(a.authorize("User:anyone", "h", Delete, Topic, "tenant-a.events"));
        assert!(!a.authorize("User:anyone", "h", Delete, Topic, "tenant-b.events"));
        assert!(a.authorize("User:alice", "h", Read, Group, "billing"));
        assert!(!a.authorize("User:alice", "h", Read, Group, "billing2"));
        assert!(a.authorize("User:bob", "10.0.0.7", Read, Topic, "logs"));
        assert!(!a.authorize("User:bob", "10.0.0.8", Read, Topic, "logs"));
    }

    #[test]
    fn super_users_and_the_no_acl_default() {
        let config = AuthorizerConfig {
            super_users: vec!["User:admin".into()],
            allow_everyone_if_no_acl_found: false,
        };
        let acls = [acl(Topic, "orders", Literal, "User:alice", Read, Allow)];
        let (_dir, strict) = authorizer(config.clone(), &acls);
        assert!(strict.authorize("User:admin", "h", Alter, Cluster, "kafka-cluster"));
        assert!(!strict.authorize("User:alice", "h", Read, Topic, "free"));
        let (_dir, lenient) = authorizer(
            AuthorizerConfig {
                allow_everyone_if_no_acl_found: true,
                ..config
            },
            &acls,
        );
        assert!(lenient.authorize("User:alice", "h", Read, Topic, "free"));
        // A resource with ACLs, none for this principal: denied, default or not.
        assert!(!lenient.authorize("User:bob", "h", Read, Topic, "orders"));
    }

    #[test]
    fn write_on_any_topic_is_found_unless_denied_over_it() {
        let (_dir, a) = authorizer(
            AuthorizerConfig::default(),
            &[
                acl(Topic, "orders", Literal, "User:alice", Write, Allow),
                acl(Topic, "pay.", Prefixed, "User:bob", Write, Allow),
                acl(Topic, "pay", Prefixed, "User:bob", Write, Deny),
                acl(Topic, "x", Literal, "User:carol", Write, Allow),
                acl(Topic, "*", Literal, "User:carol", All, Deny),
            ],
        );
        assert!(a.authorize_any("User:alice", "h", Write, Topic));
        assert!(!a.authorize_any("User:alice", "h", Write, Group));
        assert!(!a.authorize_any("User:bob", "h", Write, Topic));
        assert!(!a.authorize_any("User:carol", "h", Write, Topic));
        assert!(!a.authorize_any("User:dave", "h", Write, Topic));
    }

    #[test]
    fn changes_are_durable_and_deletions_report_what_they_removed() {
        let dir = tempfile::tempdir().unwrap();
        let a = Authorizer::open(dir.path(), AuthorizerConfig::default()).unwrap();
        let read = acl(Topic, "orders", Literal, "User:alice", Read, Allow);
        let write = acl(Topic, "orders", Literal, "User:alice", Write, Allow);
        a.create(&[read.clone(), write.clone(), read.clone()])
            .unwrap();
        assert_eq!(a.len(), 2);
        let reopened = Authorizer::open(dir.path(), AuthorizerConfig::default()).unwrap();
        assert_eq!(
            reopened.describe(&AclFilter::all()),
            a.describe(&AclFilter::all())
        );
        let writes = AclFilter {
            operation: Write,
            ..AclFilter::all()
        };
        let removed = reopened.delete(&[writes, AclFilter::all()]).unwrap();
        assert_eq!(removed, vec![vec![write], vec![read]]);
        assert!(reopened.is_empty());
        let again = Authorizer::open(dir.path(), AuthorizerConfig::default()).unwrap();
        assert!(again.is_empty());
        assert!(!again.authorize("User:alice", "h", Read, Topic, "orders"));
    }

    /// Creates and deletes ACLs until done or the power is cut; returns the acknowledged
    /// bindings and every set that was attempted.
    fn acl_workload(fs: &SimFs) -> (Vec<AclBinding>, Vec<Vec<AclBinding>>) {
        let mut acked = Vec::new();
        let mut attempts = vec![acked.clone()];
        let open = || {
            Authorizer::open_with(
                Arc::new(fs.clone()),
                Path::new("/d"),
                AuthorizerConfig::default(),
            )
        };
        // The data directory exists durably before anything is stored in it (the engine
        // makes it so).
        if logd_storage::create_dir_durable(fs, Path::new("/d")).is_err() {
            return (acked, attempts);
        }
        let Ok(mut a) = open() else {
            return (acked, attempts);
        };
        for step in 0..6 {
            let binding = acl(
                Topic,
                &format!("t{step}"),
                Literal,
                "User:alice",
                Read,
                Allow,
            );
            let result = if step == 4 {
                // Reopen, then delete the first.
                match open() {
                    Ok(again) => a = again,
                    Err(_) => return (acked, attempts),
                }
                let filter = AclFilter {
                    resource_name: Some("t0".into()),
                    ..AclFilter::all()
                };
                attempts.push(
                    acked
                        .iter()
                        .filter(|b| b.resource_name != "t0")
                        .cloned()
                        .collect(),
                );
                a.delete(&[filter]).map(|_| ())
            } else {
                let mut next = acked.clone();
                next.push(binding.clone());
                attempts.push(next);
                a.create(&[binding])
            };
            match result {
                Ok(()) => acked = a.describe(&AclFilter::all()),
                Err(_) => return (acked, attempts),
            }
        }
        (acked, attempts)
    }

    #[test]
    fn a_power_cut_at_any_operation_keeps_every_acknowledged_acl_change() {
        let sorted = |v: &Vec<AclBinding>| {
            let mut v = v.clone();
            v.sort();
            v
        };
        let states = SimFs::every_power_cut(acl_workload, |image, (acked, attempts), cut, mode| {
            let _ = image.create_dir_all(Path::new("/d"));
            let a = Authorizer::open_with(
                Arc::new(image),
                Path::new("/d"),
                AuthorizerConfig::default(),
            )
            .unwrap_or_else(|e| panic!("cut {cut} {mode:?}: reopen failed: {e}"));
            let recovered = sorted(&a.describe(&AclFilter::all()));
            let acked_at = attempts
                .iter()
                .rposition(|s| sorted(s) == sorted(acked))
                .unwrap();
            let position = attempts.iter().rposition(|s| sorted(s) == recovered);
            assert!(
                matches!(position, Some(p) if p >= acked_at),
                "cut {cut} {mode:?}: recovered {recovered:?}, acknowledged {acked:?}"
            );
        });
        assert!(states > 100, "{states} crash states");
    }
}
