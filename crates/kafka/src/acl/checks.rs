//! The broker's side of authorization: each handler asks [`Broker::allowed`] before touching a
//! resource. A refusal is counted for `/metrics` and logged once per connection and resource
//! (a client retrying a refused request does not flood the log); refusals that only filter a
//! listing (all-topics Metadata, ListGroups) are neither, as in Kafka.

use crate::auth::Peer;
use crate::broker::Broker;
use logd_protocol::acl::{CLUSTER_NAME, Operation, ResourceType};

impl Broker {
    /// Whether `peer` may do `operation` on `name` of `resource_type`; always with no
    /// authorizer.
    pub(crate) fn allowed(
        &self,
        peer: &Peer,
        operation: Operation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        let allowed = self.allowed_quietly(peer, operation, resource_type, name);
        if !allowed {
            self.observer
                .authorization_denied(operation.name(), resource_type.name());
            if peer
                .denials
                .first(format!("{operation} {resource_type} {name}"))
            {
                tracing::warn!(
                    principal = %peer.principal,
                    host = %peer.host,
                    operation = %operation,
                    resource_type = %resource_type,
                    resource = name,
                    "request refused by the ACLs"
                );
            }
        }
        allowed
    }

    /// As [`Broker::allowed`], without logging or counting a refusal.
    pub(crate) fn allowed_quietly(
        &self,
        peer: &Peer,
        operation: Operation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        self.authorizer.as_ref().is_none_or(|authorizer| {
            authorizer.authorize(
                &peer.principal,
                acl_host(peer),
                operation,
                resource_type,
                name,
            )
        })
    }

    /// Whether `peer` may do `operation` on the cluster.
    pub(crate) fn allowed_on_cluster(&self, peer: &Peer, operation: Operation) -> bool {
        self.allowed(peer, operation, ResourceType::Cluster, CLUSTER_NAME)
    }

    /// Whether `peer` may do `operation` on some resource of `resource_type` (InitProducerId's
    /// "WRITE on any topic").
    pub(crate) fn allowed_on_any(
        &self,
        peer: &Peer,
        operation: Operation,
        resource_type: ResourceType,
    ) -> bool {
        self.authorizer.as_ref().is_none_or(|authorizer| {
            authorizer.authorize_any(&peer.principal, acl_host(peer), operation, resource_type)
        })
    }
}

/// The client's address as ACLs name hosts: Kafka's `/10.0.0.7` without the slash.
fn acl_host(peer: &Peer) -> &str {
    peer.host.strip_prefix('/').unwrap_or(&peer.host)
}
