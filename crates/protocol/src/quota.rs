//! Kafka's client quotas as data: whom a quota applies to ([`QuotaEntity`]: a user, a client
//! id, or a user's client id, each one name or the default) and what it limits ([`QuotaKey`]),
//! with the checks Kafka's controller makes before storing one
//! (`ClientQuotaControlManager`): the entity's types and names, then each value. The broker
//! stores and enforces them (`logd-kafka`); the client sends and reads them (`logd quotas`).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

/// The entity type of a user (Kafka's `ClientQuotaEntity.USER`).
pub const USER: &str = "user";
/// The entity type of a client id.
pub const CLIENT_ID: &str = "client-id";
/// The entity type of a client address (connection-rate quotas, not enforced by logd).
pub const IP: &str = "ip";

/// Whom a quota applies to. Each part is absent (`None`), the default for every name
/// (`Some(None)`, which a more specific entity overrides), or one name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotaEntity {
    /// The user (the principal's name without `User:`).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub user: Option<Option<String>>,
    /// The client id a client sends in its requests.
    #[serde(
        rename = "client-id",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_id: Option<Option<String>>,
}

/// A part present in the JSON is `Some`, even when it is `null` (the default).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

impl QuotaEntity {
    /// The entity of Kafka's wire form: `(entity type, name)` pairs, a `None` name being the
    /// default. Refused with Kafka's words: an empty entity, a type twice, a type other than
    /// `user` and `client-id` (`ip` quotas limit connection rates, which logd does not
    /// enforce; its `--max-connections-per-ip` bounds connections instead), an empty name.
    pub fn from_parts<'a>(
        parts: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    ) -> Result<QuotaEntity, String> {
        let mut entity = QuotaEntity::default();
        let mut any = false;
        for (entity_type, name) in parts {
            any = true;
            let slot = match entity_type {
                USER => &mut entity.user,
                CLIENT_ID => &mut entity.client_id,
                IP => {
                    return Err(
                        "logd does not enforce ip quotas (connection_creation_rate); \
                         --max-connections-per-ip bounds the connections from one address"
                            .into(),
                    );
                }
                other => return Err(format!("Unhandled client quota entity type: {other}")),
            };
            if slot.is_some() {
                return Err(format!(
                    "Invalid client quota entity, duplicate entity entry {entity_type}"
                ));
            }
            if name == Some("") {
                return Err(format!("Empty {entity_type} not supported"));
            }
            *slot = Some(name.map(str::to_owned));
        }
        if !any {
            return Err("Invalid empty client quota entity".into());
        }
        Ok(entity)
    }

    /// The entity's parts in Kafka's wire form, `user` first.
    pub fn parts(&self) -> Vec<(&'static str, Option<&str>)> {
        let mut parts = Vec::new();
        if let Some(user) = &self.user {
            parts.push((USER, user.as_deref()));
        }
        if let Some(client_id) = &self.client_id {
            parts.push((CLIENT_ID, client_id.as_deref()));
        }
        parts
    }
}

impl fmt::Display for QuotaEntity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .parts()
            .into_iter()
            .map(|(t, name)| format!("{t}={}", name.unwrap_or("<default>")))
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// What a quota limits, per broker, over Kafka's window of 11 one-second samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum QuotaKey {
    /// Bytes of produce requests per second.
    #[serde(rename = "producer_byte_rate")]
    ProducerByteRate,
    /// Bytes of fetch responses per second.
    #[serde(rename = "consumer_byte_rate")]
    ConsumerByteRate,
    /// Request-handling time, in percent of one thread.
    #[serde(rename = "request_percentage")]
    RequestPercentage,
}

impl QuotaKey {
    /// Every key.
    pub const ALL: [QuotaKey; 3] = [
        QuotaKey::ProducerByteRate,
        QuotaKey::ConsumerByteRate,
        QuotaKey::RequestPercentage,
    ];

    /// Kafka's name for it.
    pub fn name(self) -> &'static str {
        match self {
            QuotaKey::ProducerByteRate => "producer_byte_rate",
            QuotaKey::ConsumerByteRate => "consumer_byte_rate",
            QuotaKey::RequestPercentage => "request_percentage",
        }
    }

    /// The key Kafka names `name`.
    pub fn from_name(name: &str) -> Option<QuotaKey> {
        QuotaKey::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The key of a value to set, if `value` may be its quota, checked as Kafka's
    /// `validateQuotaKeyValue` (byte rates are whole numbers of a Java `long`).
    pub fn check(name: &str, value: f64) -> Result<QuotaKey, String> {
        let Some(key) = QuotaKey::from_name(name) else {
            return Err(match name {
                "controller_mutation_rate" => "logd does not enforce controller_mutation_rate \
                    (topic and partition creations and deletions per second)"
                    .into(),
                _ => format!("Invalid configuration key {name}"),
            });
        };
        // NaN is not greater than 0 either.
        if value.is_nan() || value <= 0.0 {
            return Err(format!("Quota {name} must be greater than 0"));
        }
        if key != QuotaKey::RequestPercentage {
            if value > i64::MAX as f64 {
                return Err(format!(
                    "Proposed value for {name} is too large for a LONG."
                ));
            }
            if (value % 1.0).abs() > 1e-6 {
                return Err(format!("{name} cannot be a fractional value."));
            }
        }
        Ok(key)
    }
}

impl fmt::Display for QuotaKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_are_checked_with_kafkas_words() {
        let ok = QuotaEntity::from_parts([(USER, Some("alice")), (CLIENT_ID, None)]).unwrap();
        assert_eq!(ok.user, Some(Some("alice".into())));
        assert_eq!(ok.client_id, Some(None));
        assert_eq!(ok.to_string(), "user=alice,client-id=<default>");
        for (parts, words) in [
            (vec![], "Invalid empty client quota entity"),
            (
                vec![(USER, Some("a")), (USER, Some("b"))],
                "duplicate entity entry user",
            ),
            (
                vec![("group", Some("g"))],
                "Unhandled client quota entity type",
            ),
            (vec![(CLIENT_ID, Some(""))], "Empty client-id not supported"),
            (vec![(IP, Some("10.0.0.1"))], "does not enforce ip quotas"),
        ] {
            let err = QuotaEntity::from_parts(parts.clone()).unwrap_err();
            assert!(err.contains(words), "{parts:?}: {err}");
        }
    }

    #[test]
    fn values_are_checked_with_kafkas_words() {
        assert_eq!(
            QuotaKey::check("producer_byte_rate", 1024.0),
            Ok(QuotaKey::ProducerByteRate)
        );
        assert_eq!(
            QuotaKey::check("request_percentage", 12.5),
            Ok(QuotaKey::RequestPercentage)
        );
        for (name, value, words) in [
            ("consumer_byte_rate", 0.0, "must be greater than 0"),
            ("consumer_byte_rate", f64::NAN, "must be greater than 0"),
            ("producer_byte_rate", 10.5, "cannot be a fractional value"),
            ("producer_byte_rate", 1e20, "too large for a LONG"),
            (
                "bytes_per_hour",
                1.0,
                "Invalid configuration key bytes_per_hour",
            ),
            ("controller_mutation_rate", 5.0, "does not enforce"),
        ] {
            let err = QuotaKey::check(name, value).unwrap_err();
            assert!(err.contains(words), "{name}={value}: {err}");
        }
    }

    #[test]
    fn an_entity_reads_back_what_it_wrote() {
        for entity in [
            QuotaEntity::from_parts([(USER, None)]).unwrap(),
            QuotaEntity::from_parts([(CLIENT_ID, Some("app"))]).unwrap(),
            QuotaEntity::from_parts([(USER, Some("bob")), (CLIENT_ID, None)]).unwrap(),
        ] {
            let json = serde_json::to_string(&entity).unwrap();
            assert_eq!(
                serde_json::from_str::<QuotaEntity>(&json).unwrap(),
                entity,
                "{json}"
            );
        }
        assert_eq!(
            serde_json::to_string(&QuotaEntity::from_parts([(USER, None)]).unwrap()).unwrap(),
            r#"{"user":null}"#
        );
    }
}
