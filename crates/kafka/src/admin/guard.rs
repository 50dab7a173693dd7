//! [`Guard`]: the one place a caller is checked against the ACLs, for both front doors. A
//! refusal is counted for `/metrics` (`authorization_denied`) and logged once per caller and
//! resource; a check that only filters a listing (all-topics Metadata, ListGroups, the
//! console's topic list) is asked quietly, neither counted nor logged, as in Kafka.

use std::sync::Arc;

use logd_protocol::acl::{CLUSTER_NAME, Operation, ResourceType};

use super::caller::Caller;
use super::refused::Refused;
use crate::acl::Authorizer;
use crate::observer::{BrokerObserver, NoObserver};

/// The ACLs (when authorization is on) and where refusals are counted.
#[derive(Debug, Clone)]
pub struct Guard {
    authorizer: Option<Arc<Authorizer>>,
    observer: Arc<dyn BrokerObserver>,
}

impl Default for Guard {
    /// Everything allowed, nothing counted.
    fn default() -> Guard {
        Guard {
            authorizer: None,
            observer: Arc::new(NoObserver),
        }
    }
}

impl Guard {
    /// Checks against `authorizer` (everything allowed without one), refusals told to
    /// `observer`.
    pub fn new(authorizer: Option<Arc<Authorizer>>, observer: Arc<dyn BrokerObserver>) -> Guard {
        Guard {
            authorizer,
            observer,
        }
    }

    /// The authorizer, when authorization is on.
    pub fn authorizer(&self) -> Option<&Arc<Authorizer>> {
        self.authorizer.as_ref()
    }

    /// `caller` may do `operation` on `name` of `resource_type`, or the refusal, counted and
    /// logged once.
    pub fn check(
        &self,
        caller: &Caller,
        operation: Operation,
        resource_type: ResourceType,
        name: &str,
    ) -> Result<(), Refused> {
        if self.allows(caller, operation, resource_type, name) {
            return Ok(());
        }
        self.observer
            .authorization_denied(operation.name(), resource_type.name());
        if caller.first_denial(format!(
            "{} {operation} {resource_type} {name}",
            caller.host()
        )) {
            tracing::warn!(
                principal = %caller.principal(),
                host = %caller.host(),
                operation = %operation,
                resource_type = %resource_type,
                resource = name,
                "request refused by the ACLs"
            );
        }
        Err(Refused::Denied {
            principal: caller.principal().to_owned(),
            operation,
            resource_type,
            name: name.to_owned(),
        })
    }

    /// As [`Guard::check`], as a yes or no.
    pub fn allowed(
        &self,
        caller: &Caller,
        operation: Operation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        self.check(caller, operation, resource_type, name).is_ok()
    }

    /// Whether `caller` may do `operation` on the cluster (counted and logged when not).
    pub fn allowed_on_cluster(&self, caller: &Caller, operation: Operation) -> bool {
        self.allowed(caller, operation, ResourceType::Cluster, CLUSTER_NAME)
    }

    /// As [`Guard::allowed`], without counting or logging a refusal: for checks that filter
    /// a listing, or that another check may still pass.
    pub fn allows(
        &self,
        caller: &Caller,
        operation: Operation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        self.authorizer.as_ref().is_none_or(|authorizer| {
            authorizer.authorize(
                caller.principal(),
                caller.acl_host(),
                operation,
                resource_type,
                name,
            )
        })
    }

    /// Whether `caller` may do `operation` on some resource of `resource_type`
    /// (InitProducerId's "WRITE on any topic"), quietly.
    pub fn allows_any(
        &self,
        caller: &Caller,
        operation: Operation,
        resource_type: ResourceType,
    ) -> bool {
        self.authorizer.as_ref().is_none_or(|authorizer| {
            authorizer.authorize_any(
                caller.principal(),
                caller.acl_host(),
                operation,
                resource_type,
            )
        })
    }

    /// Kafka's bit field (bit n for the operation of code n) of the `operations` that `caller`
    /// may do on `name` of `resource_type`, quietly: the authorized operations a Metadata or
    /// DescribeGroups answer carries.
    pub fn authorized_operations(
        &self,
        caller: &Caller,
        resource_type: ResourceType,
        name: &str,
        operations: &[Operation],
    ) -> i32 {
        operations
            .iter()
            .filter(|op| self.allows(caller, **op, resource_type, name))
            .fold(0, |bits, op| bits | (1 << op.code()))
    }
}
