//! Kafka's ACL APIs over the [`Authorizer`](crate::acl::Authorizer): DescribeAcls (DESCRIBE on the
//! cluster), CreateAcls and DeleteAcls (ALTER on the cluster). Without an authorizer they are
//! answered SECURITY_DISABLED, as Kafka answers them; a binding or filter with a code Kafka does
//! not define is answered INVALID_REQUEST with Kafka's message, and the others in the same
//! request still apply.

use std::collections::BTreeMap;

use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::admin::Guard;
use crate::auth::Peer;
use crate::codes;
use logd_protocol::acl::{AclBinding, AclFilter, Operation};

fn text(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

/// Kafka's message when no authorizer is configured.
const NO_AUTHORIZER: &str = "no authorizer is configured (start logd with --authorizer acl)";

/// DescribeAcls, CreateAcls and DeleteAcls: the guard holds the authorizer they manage.
#[derive(Debug)]
pub(super) struct AclsApi {
    pub(super) guard: Guard,
}

impl AclsApi {
    /// Why an ACL request cannot be served at all: no authorizer, or `peer` lacks
    /// `operation` on the cluster.
    fn acl_refusal(&self, peer: &Peer, operation: Operation) -> Option<(i16, String)> {
        if self.guard.authorizer().is_none() {
            return Some((codes::SECURITY_DISABLED, NO_AUTHORIZER.into()));
        }
        (!self.guard.allowed_on_cluster(&peer.caller, operation)).then(|| {
            (
                codes::CLUSTER_AUTHORIZATION_FAILED,
                format!("{operation} on the cluster is needed to manage ACLs"),
            )
        })
    }

    pub(super) fn describe_acls(
        &self,
        request: DescribeAclsRequest,
        peer: &Peer,
    ) -> DescribeAclsResponse {
        let mut response = DescribeAclsResponse::default();
        let filter = AclFilter::from_wire(
            request.resource_type_filter,
            request.resource_name_filter.as_deref(),
            request.pattern_type_filter,
            request.principal_filter.as_deref(),
            request.host_filter.as_deref(),
            request.operation,
            request.permission_type,
        );
        let outcome = match (self.acl_refusal(peer, Operation::Describe), filter) {
            (Some(refusal), _) => Err(refusal),
            (None, Err(invalid)) => Err((codes::INVALID_REQUEST, invalid.to_string())),
            (None, Ok(filter)) => Ok(self
                .guard
                .authorizer()
                .as_ref()
                .map(|a| a.describe(&filter))
                .unwrap_or_default()),
        };
        match outcome {
            Err((code, message)) => {
                response.error_code = code;
                response.error_message = Some(text(message));
            }
            Ok(bindings) => response.resources = by_resource(bindings),
        }
        response
    }

    pub(super) fn create_acls(
        &self,
        request: CreateAclsRequest,
        peer: &Peer,
    ) -> CreateAclsResponse {
        let refusal = self.acl_refusal(peer, Operation::Alter);
        let mut outcomes: Vec<Result<AclBinding, (i16, String)>> = request
            .creations
            .iter()
            .map(|c| match &refusal {
                Some(refusal) => Err(refusal.clone()),
                None => AclBinding::from_wire(
                    c.resource_type,
                    &c.resource_name,
                    c.resource_pattern_type,
                    &c.principal,
                    &c.host,
                    c.operation,
                    c.permission_type,
                )
                .map_err(|e| (codes::INVALID_REQUEST, e.to_string())),
            })
            .collect();
        let valid: Vec<AclBinding> = outcomes.iter().filter_map(|o| o.clone().ok()).collect();
        if let (Some(authorizer), false) = (self.guard.authorizer(), valid.is_empty()) {
            match authorizer.create(&valid) {
                Ok(()) => {
                    for binding in &valid {
                        tracing::info!(acl = %binding, by = %peer.caller.principal(), "ACL created");
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot store ACLs");
                    for outcome in outcomes.iter_mut().filter(|o| o.is_ok()) {
                        *outcome = Err((codes::UNKNOWN_SERVER_ERROR, e.to_string()));
                    }
                }
            }
        }
        let mut response = CreateAclsResponse::default();
        response.results = outcomes
            .into_iter()
            .map(|outcome| {
                let mut result = AclCreationResult::default();
                if let Err((code, message)) = outcome {
                    result.error_code = code;
                    result.error_message = Some(text(message));
                }
                result
            })
            .collect();
        response
    }

    pub(super) fn delete_acls(
        &self,
        request: DeleteAclsRequest,
        peer: &Peer,
    ) -> DeleteAclsResponse {
        let refusal = self.acl_refusal(peer, Operation::Alter);
        let filters: Vec<Result<AclFilter, (i16, String)>> = request
            .filters
            .iter()
            .map(|f| match &refusal {
                Some(refusal) => Err(refusal.clone()),
                None => AclFilter::from_wire(
                    f.resource_type_filter,
                    f.resource_name_filter.as_deref(),
                    f.pattern_type_filter,
                    f.principal_filter.as_deref(),
                    f.host_filter.as_deref(),
                    f.operation,
                    f.permission_type,
                )
                .map_err(|e| (codes::INVALID_REQUEST, e.to_string())),
            })
            .collect();
        let valid: Vec<AclFilter> = filters.iter().filter_map(|f| f.clone().ok()).collect();
        let deleted = match self.guard.authorizer() {
            Some(authorizer) if !valid.is_empty() => authorizer.delete(&valid).map_err(|e| {
                tracing::error!(error = %e, "cannot store ACLs");
                (codes::UNKNOWN_SERVER_ERROR, e.to_string())
            }),
            _ => Ok(Vec::new()),
        };
        let mut deleted = deleted.map(Vec::into_iter);
        let mut response = DeleteAclsResponse::default();
        for filter in filters {
            let mut result = DeleteAclsFilterResult::default();
            let outcome = filter.and_then(|_| match &mut deleted {
                Ok(each) => Ok(each.next().unwrap_or_default()),
                Err(e) => Err(e.clone()),
            });
            match outcome {
                Ok(bindings) => {
                    for binding in &bindings {
                        tracing::info!(acl = %binding, by = %peer.caller.principal(), "ACL deleted");
                    }
                    result.matching_acls = bindings.into_iter().map(matching_acl).collect();
                }
                Err((code, message)) => {
                    result.error_code = code;
                    result.error_message = Some(text(message));
                }
            }
            response.filter_results.push(result);
        }
        response
    }
}

/// Bindings grouped by resource pattern, as DescribeAcls answers.
fn by_resource(bindings: Vec<AclBinding>) -> Vec<DescribeAclsResource> {
    let mut groups: BTreeMap<(i8, String, i8), Vec<AclDescription>> = BTreeMap::new();
    for binding in bindings {
        let mut description = AclDescription::default();
        description.principal = text(binding.principal);
        description.host = text(binding.host);
        description.operation = binding.operation.code();
        description.permission_type = binding.permission.code();
        groups
            .entry((
                binding.resource_type.code(),
                binding.resource_name,
                binding.pattern_type.code(),
            ))
            .or_default()
            .push(description);
    }
    groups
        .into_iter()
        .map(|((resource_type, name, pattern_type), acls)| {
            let mut resource = DescribeAclsResource::default();
            resource.resource_type = resource_type;
            resource.resource_name = text(name);
            resource.pattern_type = pattern_type;
            resource.acls = acls;
            resource
        })
        .collect()
}

fn matching_acl(binding: AclBinding) -> DeleteAclsMatchingAcl {
    let mut acl = DeleteAclsMatchingAcl::default();
    acl.resource_type = binding.resource_type.code();
    acl.resource_name = text(binding.resource_name);
    acl.pattern_type = binding.pattern_type.code();
    acl.principal = text(binding.principal);
    acl.host = text(binding.host);
    acl.operation = binding.operation.code();
    acl.permission_type = binding.permission.code();
    acl
}
