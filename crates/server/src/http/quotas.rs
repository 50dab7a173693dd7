//! `GET /api/v1/quotas`: the client quotas in force, each entity (user, client id, or both;
//! `null` for the default) with its quotas, as DescribeClientQuotas shows them to a Kafka
//! client, and with the same permission (DESCRIBE_CONFIGS on the cluster).

use axum::Json;
use axum::extract::{Extension, State};
use axum::response::{IntoResponse, Response};
use logd_kafka::acl::Operation;
use serde_json::{Value, json};

use super::State as Shared;
use super::access::Caller;
use super::params::answer;

pub(super) async fn quotas(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
) -> Response {
    if let Err(refused) = caller.require_on_cluster(Operation::DescribeConfigs) {
        return answer(Err(refused));
    }
    let quotas: Vec<Value> = state
        .quotas
        .entries()
        .iter()
        .map(|(entity, values)| {
            let values: serde_json::Map<String, Value> = values
                .iter()
                .map(|(key, value)| (key.name().to_owned(), json!(value)))
                .collect();
            json!({ "entity": entity, "values": values })
        })
        .collect();
    Json(json!({ "quotas": quotas })).into_response()
}
