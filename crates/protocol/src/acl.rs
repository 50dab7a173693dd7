//! Kafka's ACL model as data: resource types, operations, permissions and pattern types with
//! their wire codes, an ACL binding, a filter over bindings, and the checks Kafka's controller
//! makes before storing a binding (`AclControlManager.validateNewAcl`). The broker decides with
//! it (`logd-kafka`'s authorizer); the client sends and reads it (`logd acls`).

use serde::{Deserialize, Serialize};

/// Defines a Kafka enum with its wire codes and its names in Kafka's tools.
macro_rules! kafka_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $code:literal, $text:literal;)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "SCREAMING_SNAKE_CASE")]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
        }

        impl $name {
            /// Every value, in code order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The code on the wire.
            pub fn code(self) -> i8 {
                match self { $($name::$variant => $code,)* }
            }

            /// The value of a wire code (`None` for Kafka's UNKNOWN 0 and codes it never defined).
            pub fn from_code(code: i8) -> Option<$name> {
                match code { $($code => Some($name::$variant),)* _ => None }
            }

            /// Kafka's name for it (`TOPIC`, `IDEMPOTENT_WRITE`).
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text,)* }
            }

            /// Parses a name as Kafka's tools write it, in any case, `-` or `_` between words.
            pub fn parse(text: &str) -> Option<$name> {
                let wanted = text.trim().to_ascii_uppercase().replace('-', "_");
                $name::ALL.iter().copied().find(|v| v.name() == wanted)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

kafka_enum! {
    /// What an ACL protects (Kafka's `ResourceType`).
    ResourceType {
        /// In filters only: every type.
        Any = 1, "ANY";
        /// A topic.
        Topic = 2, "TOPIC";
        /// A consumer group.
        Group = 3, "GROUP";
        /// The cluster (named `kafka-cluster`).
        Cluster = 4, "CLUSTER";
        /// A transactional producer id.
        TransactionalId = 5, "TRANSACTIONAL_ID";
        /// A delegation token (stored, never checked: logd has no tokens).
        DelegationToken = 6, "DELEGATION_TOKEN";
        /// A user (stored, never checked: Kafka checks it for tokens on behalf of others).
        User = 7, "USER";
    }
}

kafka_enum! {
    /// What a principal does to a resource (Kafka's `AclOperation`).
    Operation {
        /// In filters only: every operation.
        Any = 1, "ANY";
        /// Every operation.
        All = 2, "ALL";
        /// Fetch, consume in a group, commit.
        Read = 3, "READ";
        /// Produce.
        Write = 4, "WRITE";
        /// Create topics.
        Create = 5, "CREATE";
        /// Delete topics, groups, offsets.
        Delete = 6, "DELETE";
        /// Change ACLs, users.
        Alter = 7, "ALTER";
        /// See that it exists, its metadata and offsets.
        Describe = 8, "DESCRIBE";
        /// Broker-to-broker calls (never needed on one node).
        ClusterAction = 9, "CLUSTER_ACTION";
        /// Read configs.
        DescribeConfigs = 10, "DESCRIBE_CONFIGS";
        /// Change configs.
        AlterConfigs = 11, "ALTER_CONFIGS";
        /// Get a producer id for idempotent produce.
        IdempotentWrite = 12, "IDEMPOTENT_WRITE";
        /// Create delegation tokens.
        CreateTokens = 13, "CREATE_TOKENS";
        /// Describe delegation tokens.
        DescribeTokens = 14, "DESCRIBE_TOKENS";
    }
}

kafka_enum! {
    /// Whether an ACL allows or denies (Kafka's `AclPermissionType`).
    Permission {
        /// In filters only: both.
        Any = 1, "ANY";
        /// Refuses, whatever allows.
        Deny = 2, "DENY";
        /// Grants.
        Allow = 3, "ALLOW";
    }
}

kafka_enum! {
    /// How an ACL's resource name matches (Kafka's `PatternType`).
    PatternType {
        /// In filters only: any pattern type, names compared exactly.
        Any = 1, "ANY";
        /// In filters only: the patterns that would apply to the filter's name.
        Match = 2, "MATCH";
        /// The name exactly, or every resource when the name is `*`.
        Literal = 3, "LITERAL";
        /// Every resource whose name starts with the name.
        Prefixed = 4, "PREFIXED";
    }
}

/// The only name of the CLUSTER resource.
pub const CLUSTER_NAME: &str = "kafka-cluster";
/// A LITERAL name matching every resource of its type; a principal or host matching all.
pub const WILDCARD: &str = "*";
/// The principal matching every user.
pub const WILDCARD_PRINCIPAL: &str = "User:*";

/// One ACL: who may (or may not) do what to which resources, from where.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AclBinding {
    /// The type of resource it protects.
    pub resource_type: ResourceType,
    /// The resource name, `*`, or a prefix.
    pub resource_name: String,
    /// LITERAL or PREFIXED.
    pub pattern_type: PatternType,
    /// `User:NAME`, `User:*`, or a certificate principal.
    pub principal: String,
    /// An address, or `*`.
    pub host: String,
    /// The operation.
    pub operation: Operation,
    /// ALLOW or DENY.
    pub permission: Permission,
}

/// Why an ACL cannot be stored: Kafka answers each with INVALID_REQUEST and this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidAcl {
    /// A wire code that names no value, or ANY/MATCH where a binding needs a concrete one.
    #[error("invalid {field} {code}")]
    Code {
        /// `resourceType`, `patternType`, `operation` or `permissionType`.
        field: &'static str,
        /// The code sent.
        code: i8,
    },
    /// An empty resource name.
    #[error("resource name should not be empty")]
    EmptyName,
    /// A CLUSTER resource not named `kafka-cluster`.
    #[error("the only valid name for the CLUSTER resource is kafka-cluster")]
    ClusterName,
    /// A principal without `TYPE:`.
    #[error("could not parse principal from `{0}` (expected TYPE:NAME, e.g. User:alice)")]
    Principal(String),
    /// An empty host.
    #[error("host should be `*` or an address")]
    Host,
}

/// Parses a wire code, refusing unknown codes and the filter-only values.
fn concrete<T: Copy + PartialEq>(
    field: &'static str,
    code: i8,
    from_code: fn(i8) -> Option<T>,
    filter_only: &[T],
) -> Result<T, InvalidAcl> {
    from_code(code)
        .filter(|v| !filter_only.contains(v))
        .ok_or(InvalidAcl::Code { field, code })
}

impl AclBinding {
    /// A binding from a CreateAcls entry's fields, checked as Kafka's controller checks them.
    pub fn from_wire(
        resource_type: i8,
        resource_name: &str,
        pattern_type: i8,
        principal: &str,
        host: &str,
        operation: i8,
        permission: i8,
    ) -> Result<AclBinding, InvalidAcl> {
        let binding = AclBinding {
            resource_type: concrete(
                "resourceType",
                resource_type,
                ResourceType::from_code,
                &[ResourceType::Any],
            )?,
            resource_name: resource_name.to_owned(),
            pattern_type: concrete(
                "patternType",
                pattern_type,
                PatternType::from_code,
                &[PatternType::Any, PatternType::Match],
            )?,
            principal: principal.to_owned(),
            host: host.to_owned(),
            operation: concrete(
                "operation",
                operation,
                Operation::from_code,
                &[Operation::Any],
            )?,
            permission: concrete(
                "permissionType",
                permission,
                Permission::from_code,
                &[Permission::Any],
            )?,
        };
        binding.validate()?;
        Ok(binding)
    }

    /// Checks what the enums cannot: names, principal and host.
    pub fn validate(&self) -> Result<(), InvalidAcl> {
        let filter_only = [
            (
                "resourceType",
                self.resource_type == ResourceType::Any,
                self.resource_type.code(),
            ),
            (
                "patternType",
                matches!(self.pattern_type, PatternType::Any | PatternType::Match),
                self.pattern_type.code(),
            ),
            (
                "operation",
                self.operation == Operation::Any,
                self.operation.code(),
            ),
            (
                "permissionType",
                self.permission == Permission::Any,
                self.permission.code(),
            ),
        ];
        if let Some((field, _, code)) = filter_only.into_iter().find(|(_, bad, _)| *bad) {
            return Err(InvalidAcl::Code { field, code });
        }
        if self.resource_name.is_empty() {
            return Err(InvalidAcl::EmptyName);
        }
        if self.resource_type == ResourceType::Cluster && self.resource_name != CLUSTER_NAME {
            return Err(InvalidAcl::ClusterName);
        }
        match self.principal.split_once(':') {
            Some((kind, name)) if !kind.is_empty() && !name.is_empty() => {}
            _ => return Err(InvalidAcl::Principal(self.principal.clone())),
        }
        if self.host.is_empty() {
            return Err(InvalidAcl::Host);
        }
        Ok(())
    }
}

impl std::fmt::Display for AclBinding {
    /// `User:alice ALLOW READ from * on TOPIC orders (LITERAL)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {} from {} on {} {} ({})",
            self.principal,
            self.permission,
            self.operation,
            self.host,
            self.resource_type,
            self.resource_name,
            self.pattern_type
        )
    }
}

/// Selects bindings, as DescribeAcls and DeleteAcls filters do: `None` fields and the ANY
/// values match everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclFilter {
    /// A type, or ANY.
    pub resource_type: ResourceType,
    /// A name, or `None` for any.
    pub resource_name: Option<String>,
    /// LITERAL, PREFIXED, ANY (any pattern, exact name) or MATCH (what applies to the name).
    pub pattern_type: PatternType,
    /// A principal, or `None` for any.
    pub principal: Option<String>,
    /// A host, or `None` for any.
    pub host: Option<String>,
    /// An operation, or ANY.
    pub operation: Operation,
    /// A permission, or ANY.
    pub permission: Permission,
}

impl AclFilter {
    /// The filter matching every binding.
    pub fn all() -> AclFilter {
        AclFilter {
            resource_type: ResourceType::Any,
            resource_name: None,
            pattern_type: PatternType::Any,
            principal: None,
            host: None,
            operation: Operation::Any,
            permission: Permission::Any,
        }
    }

    /// A filter from DescribeAcls or DeleteAcls fields; unknown codes are INVALID_REQUEST.
    pub fn from_wire(
        resource_type: i8,
        resource_name: Option<&str>,
        pattern_type: i8,
        principal: Option<&str>,
        host: Option<&str>,
        operation: i8,
        permission: i8,
    ) -> Result<AclFilter, InvalidAcl> {
        Ok(AclFilter {
            resource_type: concrete("resourceType", resource_type, ResourceType::from_code, &[])?,
            resource_name: resource_name.map(str::to_owned),
            pattern_type: concrete("patternType", pattern_type, PatternType::from_code, &[])?,
            principal: principal.map(str::to_owned),
            host: host.map(str::to_owned),
            operation: concrete("operation", operation, Operation::from_code, &[])?,
            permission: concrete("permissionType", permission, Permission::from_code, &[])?,
        })
    }

    /// Whether `binding` is selected (Kafka's `AclBindingFilter.matches`).
    pub fn matches(&self, binding: &AclBinding) -> bool {
        self.matches_resource(binding)
            && self
                .principal
                .as_ref()
                .is_none_or(|p| *p == binding.principal)
            && self.host.as_ref().is_none_or(|h| *h == binding.host)
            && (self.operation == Operation::Any || self.operation == binding.operation)
            && (self.permission == Permission::Any || self.permission == binding.permission)
    }

    fn matches_resource(&self, binding: &AclBinding) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != binding.resource_type {
            return false;
        }
        let any_pattern = matches!(self.pattern_type, PatternType::Any | PatternType::Match);
        if !any_pattern && self.pattern_type != binding.pattern_type {
            return false;
        }
        let Some(name) = &self.resource_name else {
            return true;
        };
        if self.pattern_type != PatternType::Match {
            return *name == binding.resource_name;
        }
        match binding.pattern_type {
            PatternType::Literal => {
                binding.resource_name == *name || binding.resource_name == WILDCARD
            }
            PatternType::Prefixed => name.starts_with(&binding.resource_name),
            PatternType::Any | PatternType::Match => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(pattern_type: PatternType, name: &str) -> AclBinding {
        AclBinding {
            resource_type: ResourceType::Topic,
            resource_name: name.into(),
            pattern_type,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: Operation::Read,
            permission: Permission::Allow,
        }
    }

    #[test]
    fn codes_and_names_round_trip_and_unknown_codes_are_refused() {
        for op in Operation::ALL {
            assert_eq!(Operation::from_code(op.code()), Some(*op));
            assert_eq!(Operation::parse(&op.name().to_lowercase()), Some(*op));
        }
        assert_eq!(
            Operation::parse("idempotent-write"),
            Some(Operation::IdempotentWrite)
        );
        assert_eq!(ResourceType::from_code(0), None);
        assert_eq!(ResourceType::from_code(8), None);
        assert_eq!(PatternType::from_code(5), None);
        assert_eq!(Permission::from_code(4), None);
    }

    #[test]
    fn creation_checks_are_kafkas() {
        let ok = AclBinding::from_wire(2, "orders", 3, "User:a", "*", 3, 3).unwrap();
        assert_eq!(ok, {
            let mut b = binding(PatternType::Literal, "orders");
            b.principal = "User:a".into();
            b
        });
        let err = |rt, name: &str, pt, principal: &str, host: &str, op, perm| {
            AclBinding::from_wire(rt, name, pt, principal, host, op, perm).unwrap_err()
        };
        assert_eq!(
            err(9, "t", 3, "User:a", "*", 3, 3),
            InvalidAcl::Code {
                field: "resourceType",
                code: 9
            }
        );
        assert!(matches!(
            err(1, "t", 3, "User:a", "*", 3, 3),
            InvalidAcl::Code { .. }
        ));
        assert!(matches!(
            err(2, "t", 2, "User:a", "*", 3, 3),
            InvalidAcl::Code { .. }
        ));
        assert!(matches!(
            err(2, "t", 3, "User:a", "*", 1, 3),
            InvalidAcl::Code { .. }
        ));
        assert!(matches!(
            err(2, "t", 3, "User:a", "*", 3, 1),
            InvalidAcl::Code { .. }
        ));
        assert!(matches!(
            err(2, "t", 3, "User:a", "*", 99, 3),
            InvalidAcl::Code { .. }
        ));
        assert_eq!(err(2, "", 4, "User:a", "*", 3, 3), InvalidAcl::EmptyName);
        assert_eq!(err(4, "c", 3, "User:a", "*", 7, 3), InvalidAcl::ClusterName);
        assert!(matches!(
            err(2, "t", 3, "alice", "*", 3, 3),
            InvalidAcl::Principal(_)
        ));
        assert_eq!(err(2, "t", 3, "User:a", "", 3, 3), InvalidAcl::Host);
    }

    #[test]
    fn filters_match_as_kafkas_do() {
        let literal = binding(PatternType::Literal, "orders");
        let wildcard = binding(PatternType::Literal, "*");
        let prefixed = binding(PatternType::Prefixed, "ord");
        let other = binding(PatternType::Prefixed, "pay");
        let filter = |pattern_type, name: Option<&str>| AclFilter {
            pattern_type,
            resource_name: name.map(str::to_owned),
            ..AclFilter::all()
        };
        let selected = |f: &AclFilter| {
            [&literal, &wildcard, &prefixed, &other]
                .into_iter()
                .filter(|b| f.matches(b))
                .count()
        };
        assert_eq!(selected(&AclFilter::all()), 4);
        // ANY: every pattern type, the exact name.
        assert_eq!(selected(&filter(PatternType::Any, Some("orders"))), 1);
        assert_eq!(selected(&filter(PatternType::Any, Some("ord"))), 1);
        // MATCH: what would apply to the name: itself, `*`, and prefixes of it.
        assert_eq!(selected(&filter(PatternType::Match, Some("orders"))), 3);
        assert_eq!(selected(&filter(PatternType::Prefixed, None)), 2);
        assert_eq!(selected(&filter(PatternType::Literal, Some("*"))), 1);
        let mut by_principal = AclFilter::all();
        by_principal.principal = Some("User:bob".into());
        assert_eq!(selected(&by_principal), 0);
        by_principal.principal = Some("User:alice".into());
        by_principal.operation = Operation::Write;
        assert_eq!(selected(&by_principal), 0);
    }
}
