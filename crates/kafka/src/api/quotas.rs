//! Kafka's client-quota APIs over the broker's [`ClientQuotas`]: DescribeClientQuotas (the
//! entities a filter matches, as Kafka's `ClientQuotasImage.describe` matches them: a type
//! with one name, with the default, or with any name; `strict` allows no other type) and
//! AlterClientQuotas (each entity checked as Kafka's controller checks it, the valid ones
//! stored together, `validate_only` storing nothing). They need DESCRIBE_CONFIGS and
//! ALTER_CONFIGS on the cluster.

use std::collections::BTreeSet;
use std::sync::Arc;

use kafka_protocol::messages::alter_client_quotas_response::{
    EntityData as AlteredEntity, EntryData as AlteredEntry,
};
use kafka_protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
};
use kafka_protocol::protocol::StrBytes;
use logd_protocol::quota::{CLIENT_ID, IP, QuotaEntity, QuotaKey, USER};

use crate::acl::Operation;
use crate::admin::Guard;
use crate::auth::Peer;
use crate::codes;
use crate::quota::{ClientQuotas, QuotaChange};

/// Kafka's filter match types.
const MATCH_EXACT: i8 = 0;
const MATCH_DEFAULT: i8 = 1;
const MATCH_SPECIFIED: i8 = 2;

fn text(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

/// DescribeClientQuotas and AlterClientQuotas.
#[derive(Debug)]
pub(super) struct QuotasApi {
    pub(super) guard: Guard,
    pub(super) quotas: Arc<ClientQuotas>,
}

/// One filter component: an entity type with one name (`Some(Some)`), the default
/// (`Some(None)`), or any name (`None`).
type Component = (String, Option<Option<String>>);

impl QuotasApi {
    pub(super) fn describe_client_quotas(
        &self,
        request: DescribeClientQuotasRequest,
        peer: &Peer,
    ) -> DescribeClientQuotasResponse {
        let mut response = DescribeClientQuotasResponse::default();
        if !self
            .guard
            .allowed_on_cluster(&peer.caller, Operation::DescribeConfigs)
        {
            response.error_code = codes::CLUSTER_AUTHORIZATION_FAILED;
            response.error_message = Some(text(
                "DESCRIBE_CONFIGS on the cluster is needed to describe quotas",
            ));
            return response;
        }
        let components = match filter(&request) {
            Ok(components) => components,
            Err((code, message)) => {
                response.error_code = code;
                response.error_message = Some(text(message));
                return response;
            }
        };
        let entries = self
            .quotas
            .entries()
            .iter()
            .filter(|(entity, _)| matches(entity, &components, request.strict))
            .map(|(entity, values)| {
                let mut entry = EntryData::default();
                entry.entity = entity
                    .parts()
                    .into_iter()
                    .map(|(entity_type, name)| {
                        let mut data = EntityData::default();
                        data.entity_type = text(entity_type);
                        data.entity_name = name.map(text);
                        data
                    })
                    .collect();
                entry.values = values
                    .iter()
                    .map(|(key, value)| {
                        let mut data = ValueData::default();
                        data.key = text(key.name());
                        data.value = *value;
                        data
                    })
                    .collect();
                entry
            })
            .collect();
        response.entries = Some(entries);
        response
    }

    pub(super) fn alter_client_quotas(
        &self,
        request: AlterClientQuotasRequest,
        peer: &Peer,
    ) -> AlterClientQuotasResponse {
        let allowed = self
            .guard
            .allowed_on_cluster(&peer.caller, Operation::AlterConfigs);
        let mut results = Vec::new();
        let mut changes: Vec<(usize, QuotaChange)> = Vec::new();
        let mut seen = BTreeSet::new();
        for entry in &request.entries {
            let mut result = AlteredEntry::default();
            result.entity = entry
                .entity
                .iter()
                .map(|e| {
                    let mut data = AlteredEntity::default();
                    data.entity_type = e.entity_type.clone();
                    data.entity_name = e.entity_name.clone();
                    data
                })
                .collect();
            let checked = if allowed {
                checked_change(entry, &mut seen)
            } else {
                Err((
                    codes::CLUSTER_AUTHORIZATION_FAILED,
                    "ALTER_CONFIGS on the cluster is needed to alter quotas".into(),
                ))
            };
            match checked {
                Ok(change) => changes.push((results.len(), change)),
                Err((code, message)) => {
                    result.error_code = code;
                    result.error_message = Some(text(message));
                }
            }
            results.push(result);
        }
        if !request.validate_only && !changes.is_empty() {
            let all: Vec<QuotaChange> = changes.iter().map(|(_, c)| c.clone()).collect();
            if let Err(e) = self.quotas.alter(&all) {
                tracing::error!(error = %e, "client quotas not stored");
                for (at, _) in &changes {
                    results[*at].error_code = codes::KAFKA_STORAGE_ERROR;
                    results[*at].error_message = Some(text(e.to_string()));
                }
            } else {
                for (entity, values) in &all {
                    tracing::info!(%entity, ?values, principal = peer.caller.principal(), "client quotas altered");
                }
            }
        }
        let mut response = AlterClientQuotasResponse::default();
        response.entries = results;
        response
    }
}

/// An alteration checked as Kafka's `ClientQuotaControlManager` checks it.
fn checked_change(
    entry: &kafka_protocol::messages::alter_client_quotas_request::EntryData,
    seen: &mut BTreeSet<QuotaEntity>,
) -> Result<QuotaChange, (i16, String)> {
    let invalid = |message: String| (codes::INVALID_REQUEST, message);
    let parts = entry
        .entity
        .iter()
        .map(|e| (e.entity_type.as_str(), e.entity_name.as_deref()));
    let entity = QuotaEntity::from_parts(parts).map_err(invalid)?;
    if !seen.insert(entity.clone()) {
        return Err(invalid(format!("Ignoring duplicate entity {entity}")));
    }
    let mut keys = BTreeSet::new();
    let mut values = Vec::new();
    for op in &entry.ops {
        let name = op.key.as_str();
        if !keys.insert(name) {
            return Err(invalid(format!(
                "Duplicate quota key {name} not updating quota for this entity {entity}"
            )));
        }
        if op.remove {
            // Removing a key that is not set is nothing to do, as in Kafka.
            if let Some(key) = QuotaKey::from_name(name) {
                values.push((key, None));
            }
        } else {
            let key = QuotaKey::check(name, op.value).map_err(invalid)?;
            values.push((key, Some(op.value)));
        }
    }
    Ok((entity, values))
}

/// The filter's components, refused with Kafka's codes and words.
fn filter(request: &DescribeClientQuotasRequest) -> Result<Vec<Component>, (i16, String)> {
    let invalid = |message: String| (codes::INVALID_REQUEST, message);
    let mut components: Vec<Component> = Vec::new();
    for c in &request.components {
        let entity_type = c.entity_type.as_str();
        if entity_type.is_empty() {
            return Err(invalid("Invalid empty entity type.".into()));
        }
        if components.iter().any(|(t, _)| t == entity_type) {
            return Err(invalid(format!(
                "Entity type {entity_type} cannot appear more than once in the filter."
            )));
        }
        if ![USER, CLIENT_ID, IP].contains(&entity_type) {
            return Err((
                codes::UNSUPPORTED_VERSION,
                format!("Unsupported entity type {entity_type}"),
            ));
        }
        let name = c._match.as_deref().map(str::to_owned);
        let wanted = match (c.match_type, name) {
            (MATCH_EXACT, Some(name)) => Some(Some(name)),
            (MATCH_EXACT, None) => {
                return Err(invalid(
                    "Request specified MATCH_TYPE_EXACT, but set match string to null.".into(),
                ));
            }
            (MATCH_DEFAULT, None) => Some(None),
            (MATCH_DEFAULT, Some(_)) => {
                return Err(invalid(
                    "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
                        .into(),
                ));
            }
            (MATCH_SPECIFIED, None) => None,
            (MATCH_SPECIFIED, Some(_)) => {
                return Err(invalid(
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
                        .into(),
                ));
            }
            (other, _) => return Err(invalid(format!("Unknown match type {other}"))),
        };
        components.push((entity_type.to_owned(), wanted));
    }
    let has = |t: &str| components.iter().any(|(c, _)| c == t);
    if has(IP) && (has(USER) || has(CLIENT_ID)) {
        return Err(invalid(
            "Invalid entity filter component combination. IP filter component should not be \
             used with user or clientId filter component."
                .into(),
        ));
    }
    Ok(components)
}

/// Whether `entity` has every component's type (with its name, when one is wanted), and with
/// `strict` no other type.
fn matches(entity: &QuotaEntity, components: &[Component], strict: bool) -> bool {
    let parts = entity.parts();
    if strict && parts.len() != components.len() {
        return false;
    }
    components.iter().all(|(entity_type, wanted)| {
        parts.iter().any(|(t, name)| {
            t == entity_type
                && wanted
                    .as_ref()
                    .is_none_or(|wanted| wanted.as_deref() == *name)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entity(user: Option<Option<&str>>, client: Option<Option<&str>>) -> QuotaEntity {
        QuotaEntity {
            user: user.map(|u| u.map(str::to_owned)),
            client_id: client.map(|c| c.map(str::to_owned)),
        }
    }

    #[test]
    fn filters_match_as_kafkas() {
        let alice_app = entity(Some(Some("alice")), Some(Some("app")));
        let default_user = entity(Some(None), None);
        let alice = entity(Some(Some("alice")), None);
        let exact = |t: &str, n: &str| (t.to_owned(), Some(Some(n.to_owned())));
        let default = |t: &str| (t.to_owned(), Some(None));
        let any = |t: &str| (t.to_owned(), None);
        assert!(matches(&alice_app, &[exact(USER, "alice")], false));
        assert!(!matches(&alice_app, &[exact(USER, "alice")], true));
        assert!(matches(&alice, &[exact(USER, "alice")], true));
        assert!(!matches(&default_user, &[exact(USER, "alice")], false));
        assert!(matches(&default_user, &[default(USER)], true));
        assert!(!matches(&alice, &[default(USER)], false));
        assert!(matches(&alice_app, &[any(USER), any(CLIENT_ID)], true));
        assert!(!matches(&alice, &[any(CLIENT_ID)], false));
        // No component: everything, unless strict.
        assert!(matches(&alice, &[], false));
        assert!(!matches(&alice, &[], true));
    }
}
