//! [`AsyncClient`]'s user-management calls, for `logd users --bootstrap`: the users and their
//! SCRAM mechanisms (DescribeUserScramCredentials), and setting or deleting a credential
//! (AlterUserScramCredentials). The password never leaves the client: it sends a fresh salt
//! and the salted password, as Kafka's admin client does.

use bytes::Bytes;
use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, ApiKey,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::client::AsyncClient;
use crate::error::{Error, Result};
use logd_protocol::scram::{ScramMechanism, random_bytes};

/// One user's mechanisms and their iterations.
pub type UserCredentials = (String, Vec<(ScramMechanism, i32)>);

/// A refusal's error code, with what it was about.
fn failed(what: String, code: i16) -> Error {
    Error::Kafka { what, code }
}

impl AsyncClient {
    /// Every user with a credential, and each one's mechanisms.
    pub async fn describe_users(&mut self) -> Result<Vec<UserCredentials>> {
        let request = DescribeUserScramCredentialsRequest::default();
        let response: DescribeUserScramCredentialsResponse = self
            .wire
            .call(ApiKey::DescribeUserScramCredentials, 0, &request)
            .await?;
        if response.error_code != 0 {
            return Err(failed("listing users".into(), response.error_code));
        }
        let mut users = Vec::new();
        for result in response.results {
            if result.error_code != 0 {
                return Err(failed(
                    format!("user {}", result.user.as_str()),
                    result.error_code,
                ));
            }
            let mechanisms = result
                .credential_infos
                .iter()
                .filter_map(|c| Some((ScramMechanism::from_kafka_type(c.mechanism)?, c.iterations)))
                .collect();
            users.push((result.user.to_string(), mechanisms));
        }
        Ok(users)
    }

    /// Sets `user`'s `mechanism` credential to `password` (a fresh salt, `iterations` rounds).
    pub async fn upsert_user(
        &mut self,
        user: &str,
        mechanism: ScramMechanism,
        password: &[u8],
        iterations: u32,
    ) -> Result<()> {
        let salt = random_bytes(32);
        let mut upsertion = ScramCredentialUpsertion::default();
        upsertion.name = StrBytes::from_string(user.to_owned());
        upsertion.mechanism = mechanism.kafka_type();
        upsertion.iterations = i32::try_from(iterations).unwrap_or(i32::MAX);
        upsertion.salted_password =
            Bytes::from(mechanism.salted_password(password, &salt, iterations));
        upsertion.salt = Bytes::from(salt);
        let mut request = AlterUserScramCredentialsRequest::default();
        request.upsertions.push(upsertion);
        self.alter_users(request).await
    }

    /// Deletes `user`'s `mechanism` credential.
    pub async fn delete_user(&mut self, user: &str, mechanism: ScramMechanism) -> Result<()> {
        let mut deletion = ScramCredentialDeletion::default();
        deletion.name = StrBytes::from_string(user.to_owned());
        deletion.mechanism = mechanism.kafka_type();
        let mut request = AlterUserScramCredentialsRequest::default();
        request.deletions.push(deletion);
        self.alter_users(request).await
    }

    async fn alter_users(&mut self, request: AlterUserScramCredentialsRequest) -> Result<()> {
        let response: AlterUserScramCredentialsResponse = self
            .wire
            .call(ApiKey::AlterUserScramCredentials, 0, &request)
            .await?;
        for result in response.results {
            if result.error_code != 0 {
                return Err(failed(
                    format!("user {}", result.user.as_str()),
                    result.error_code,
                ));
            }
        }
        Ok(())
    }
}
