//! [`AsyncClient`]'s client-quota calls, for `logd quotas`: every quota with its entity
//! (DescribeClientQuotas, no filter) and altering one entity's quotas (AlterClientQuotas), on
//! logd or on a Kafka cluster, which checks them the same way.

use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, ApiKey, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
};
use kafka_protocol::protocol::StrBytes;
use logd_protocol::quota::QuotaEntity;

use crate::client::AsyncClient;
use crate::error::{Error, Result};

/// One entity's quotas: each key (`producer_byte_rate`, ...) and its value.
pub type EntityQuotas = (QuotaEntity, Vec<(String, f64)>);

impl AsyncClient {
    /// Every entity with a quota, and its quotas.
    pub async fn describe_quotas(&mut self) -> Result<Vec<EntityQuotas>> {
        let request = DescribeClientQuotasRequest::default();
        let response: DescribeClientQuotasResponse = self
            .wire
            .call(ApiKey::DescribeClientQuotas, 1, &request)
            .await?;
        if response.error_code != 0 {
            let message = response.error_message.as_deref().unwrap_or("");
            return Err(Error::Kafka {
                what: format!("listing quotas ({message})"),
                code: response.error_code,
            });
        }
        let mut quotas = Vec::new();
        for entry in response.entries.unwrap_or_default() {
            let parts = entry
                .entity
                .iter()
                .map(|e| (e.entity_type.as_str(), e.entity_name.as_deref()));
            // A Kafka cluster may hold quotas logd does not know (ip entities); they are
            // listed under their parts logd reads, or skipped.
            let Ok(entity) = QuotaEntity::from_parts(parts) else {
                continue;
            };
            let values = entry
                .values
                .iter()
                .map(|v| (v.key.to_string(), v.value))
                .collect();
            quotas.push((entity, values));
        }
        Ok(quotas)
    }

    /// Sets (`Some`) or removes (`None`) each of `changes` on `entity`'s quotas.
    pub async fn alter_quotas(
        &mut self,
        entity: &QuotaEntity,
        changes: &[(String, Option<f64>)],
    ) -> Result<()> {
        let mut entry = EntryData::default();
        entry.entity = entity
            .parts()
            .into_iter()
            .map(|(entity_type, name)| {
                let mut data = EntityData::default();
                data.entity_type = StrBytes::from_static_str(entity_type);
                data.entity_name = name.map(|n| StrBytes::from_string(n.to_owned()));
                data
            })
            .collect();
        entry.ops = changes
            .iter()
            .map(|(key, value)| {
                let mut op = OpData::default();
                op.key = StrBytes::from_string(key.clone());
                op.value = value.unwrap_or(0.0);
                op.remove = value.is_none();
                op
            })
            .collect();
        let mut request = AlterClientQuotasRequest::default();
        request.entries.push(entry);
        let response: AlterClientQuotasResponse = self
            .wire
            .call(ApiKey::AlterClientQuotas, 1, &request)
            .await?;
        for result in response.entries {
            if result.error_code != 0 {
                let message = result.error_message.as_deref().unwrap_or("");
                return Err(Error::Kafka {
                    what: format!("quotas of {entity} ({message})"),
                    code: result.error_code,
                });
            }
        }
        Ok(())
    }
}
