//! [`AsyncClient`]'s ACL calls, for `logd acls` (against logd or Kafka): DescribeAcls,
//! CreateAcls and DeleteAcls at v1, which every Kafka broker since 2.0 serves.

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::{
    ApiKey, CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::client::AsyncClient;
use crate::error::{Error, Result};
use logd_protocol::acl::{AclBinding, AclFilter, Operation, PatternType, Permission, ResourceType};

/// The version sent: flexible versions add nothing these calls use.
const VERSION: i16 = 1;

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

fn refused(what: String, code: i16, message: Option<&StrBytes>) -> Error {
    let what = match message.filter(|m| !m.is_empty()) {
        Some(message) => format!("{what}: {}", message.as_str()),
        None => what,
    };
    Error::Kafka { what, code }
}

/// A binding from an answer's codes; `None` for codes this client does not know.
fn binding(
    resource_type: i8,
    resource_name: &StrBytes,
    pattern_type: i8,
    principal: &StrBytes,
    host: &StrBytes,
    operation: i8,
    permission: i8,
) -> Option<AclBinding> {
    Some(AclBinding {
        resource_type: ResourceType::from_code(resource_type)?,
        resource_name: resource_name.to_string(),
        pattern_type: PatternType::from_code(pattern_type)?,
        principal: principal.to_string(),
        host: host.to_string(),
        operation: Operation::from_code(operation)?,
        permission: Permission::from_code(permission)?,
    })
}

impl AsyncClient {
    /// The ACLs `filter` selects.
    pub async fn describe_acls(&mut self, filter: &AclFilter) -> Result<Vec<AclBinding>> {
        let mut request = DescribeAclsRequest::default();
        request.resource_type_filter = filter.resource_type.code();
        request.resource_name_filter = filter.resource_name.as_deref().map(text);
        request.pattern_type_filter = filter.pattern_type.code();
        request.principal_filter = filter.principal.as_deref().map(text);
        request.host_filter = filter.host.as_deref().map(text);
        request.operation = filter.operation.code();
        request.permission_type = filter.permission.code();
        let response: DescribeAclsResponse = self
            .wire
            .call(ApiKey::DescribeAcls, VERSION, &request)
            .await?;
        if response.error_code != 0 {
            return Err(refused(
                "listing ACLs".into(),
                response.error_code,
                response.error_message.as_ref(),
            ));
        }
        let mut bindings = Vec::new();
        for resource in &response.resources {
            for acl in &resource.acls {
                bindings.extend(binding(
                    resource.resource_type,
                    &resource.resource_name,
                    resource.pattern_type,
                    &acl.principal,
                    &acl.host,
                    acl.operation,
                    acl.permission_type,
                ));
            }
        }
        Ok(bindings)
    }

    /// Creates `bindings`; the first refused one is the error (the others are created).
    pub async fn create_acls(&mut self, bindings: &[AclBinding]) -> Result<()> {
        let mut request = CreateAclsRequest::default();
        request.creations = bindings
            .iter()
            .map(|b| {
                let mut creation = AclCreation::default();
                creation.resource_type = b.resource_type.code();
                creation.resource_name = text(&b.resource_name);
                creation.resource_pattern_type = b.pattern_type.code();
                creation.principal = text(&b.principal);
                creation.host = text(&b.host);
                creation.operation = b.operation.code();
                creation.permission_type = b.permission.code();
                creation
            })
            .collect();
        let response: CreateAclsResponse = self
            .wire
            .call(ApiKey::CreateAcls, VERSION, &request)
            .await?;
        for (result, binding) in response.results.iter().zip(bindings) {
            if result.error_code != 0 {
                return Err(refused(
                    format!("ACL {binding}"),
                    result.error_code,
                    result.error_message.as_ref(),
                ));
            }
        }
        Ok(())
    }

    /// Deletes what each filter selects; returns the bindings deleted.
    pub async fn delete_acls(&mut self, filters: &[AclFilter]) -> Result<Vec<AclBinding>> {
        let mut request = DeleteAclsRequest::default();
        request.filters = filters
            .iter()
            .map(|f| {
                let mut filter = DeleteAclsFilter::default();
                filter.resource_type_filter = f.resource_type.code();
                filter.resource_name_filter = f.resource_name.as_deref().map(text);
                filter.pattern_type_filter = f.pattern_type.code();
                filter.principal_filter = f.principal.as_deref().map(text);
                filter.host_filter = f.host.as_deref().map(text);
                filter.operation = f.operation.code();
                filter.permission_type = f.permission.code();
                filter
            })
            .collect();
        let response: DeleteAclsResponse = self
            .wire
            .call(ApiKey::DeleteAcls, VERSION, &request)
            .await?;
        let mut deleted = Vec::new();
        for result in &response.filter_results {
            if result.error_code != 0 {
                return Err(refused(
                    "deleting ACLs".into(),
                    result.error_code,
                    result.error_message.as_ref(),
                ));
            }
            for acl in &result.matching_acls {
                deleted.extend(binding(
                    acl.resource_type,
                    &acl.resource_name,
                    acl.pattern_type,
                    &acl.principal,
                    &acl.host,
                    acl.operation,
                    acl.permission_type,
                ));
            }
        }
        Ok(deleted)
    }
}
