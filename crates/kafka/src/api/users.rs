//! Kafka's user-management APIs over the credentials store: DescribeUserScramCredentials
//! (each user's mechanisms and iterations, never a key) and AlterUserScramCredentials
//! (upserts carry a salt and SaltedPassword computed by the client, never a password;
//! deletions name a mechanism). With an authorizer they need DESCRIBE or ALTER on the cluster;
//! without one only the `super_users` may use them; anyone else is answered
//! CLUSTER_AUTHORIZATION_FAILED, so a fresh broker cannot be taken over by whoever connects
//! first.

use std::collections::HashSet;
use std::sync::Arc;

use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::acl::Operation;
use crate::admin::Guard;
use crate::auth::Peer;
use crate::auth::credentials::CredentialStore;
use crate::codes;
use logd_protocol::scram::{MAX_ITERATIONS, MIN_ITERATIONS, ScramCredential, ScramMechanism};

fn text(s: impl Into<String>) -> Option<StrBytes> {
    Some(StrBytes::from_string(s.into()))
}

/// DescribeUserScramCredentials and AlterUserScramCredentials.
#[derive(Debug)]
pub(super) struct UsersApi {
    pub(super) guard: Guard,
    pub(super) credentials: Arc<CredentialStore>,
    /// Who may manage users when there is no authorizer (Kafka's `super.users`).
    pub(super) super_users: Vec<String>,
}

impl UsersApi {
    /// With an authorizer: `operation` on the cluster (super users have it). Without one, only
    /// the `super_users` (stricter than Kafka, which lets anyone in then).
    fn may_manage_users(&self, peer: &Peer, operation: Operation) -> bool {
        match self.guard.authorizer() {
            Some(_) => self.guard.allowed_on_cluster(&peer.caller, operation),
            None => self
                .super_users
                .iter()
                .any(|u| u == peer.caller.principal()),
        }
    }

    pub(super) fn describe_user_scram_credentials(
        &self,
        request: DescribeUserScramCredentialsRequest,
        peer: &Peer,
    ) -> DescribeUserScramCredentialsResponse {
        let mut response = DescribeUserScramCredentialsResponse::default();
        if !self.may_manage_users(peer, Operation::Describe) {
            response.error_code = codes::CLUSTER_AUTHORIZATION_FAILED;
            response.error_message = text(
                "describing users needs a super user (--super-users) or DESCRIBE on the cluster",
            );
            return response;
        }
        let credentials = self.credentials.current();
        let listed = credentials.list();
        let wanted: Vec<String> = match request.users {
            None => listed.iter().map(|(name, _)| name.clone()).collect(),
            Some(users) if users.is_empty() => listed.iter().map(|(n, _)| n.clone()).collect(),
            Some(users) => users.into_iter().map(|u| u.name.to_string()).collect(),
        };
        let mut seen = HashSet::new();
        for user in wanted {
            let mut result = DescribeUserScramCredentialsResult::default();
            result.user = StrBytes::from_string(user.clone());
            if !seen.insert(user.clone()) {
                result.error_code = codes::DUPLICATE_RESOURCE;
                result.error_message = text(format!("user {user} is asked for twice"));
            } else if let Some((_, mechanisms)) = listed.iter().find(|(name, _)| *name == user) {
                result.credential_infos = mechanisms
                    .iter()
                    .map(|(m, iterations)| {
                        let mut info = CredentialInfo::default();
                        info.mechanism = m.kafka_type();
                        info.iterations = i32::try_from(*iterations).unwrap_or(i32::MAX);
                        info
                    })
                    .collect();
            } else {
                result.error_code = codes::RESOURCE_NOT_FOUND;
                result.error_message = text(format!("attempt to describe nonexistent user {user}"));
            }
            response.results.push(result);
        }
        response
    }

    pub(super) fn alter_user_scram_credentials(
        &self,
        request: AlterUserScramCredentialsRequest,
        peer: &Peer,
    ) -> AlterUserScramCredentialsResponse {
        let mut response = AlterUserScramCredentialsResponse::default();
        let allowed = self.may_manage_users(peer, Operation::Alter);
        // Kafka refuses a user named in more than one alteration of the same request.
        let mut count = std::collections::HashMap::<String, usize>::new();
        for name in request
            .deletions
            .iter()
            .map(|d| &d.name)
            .chain(request.upsertions.iter().map(|u| &u.name))
        {
            *count.entry(name.to_string()).or_default() += 1;
        }
        let mut answer = |user: &str, outcome: Result<(), (i16, String)>| {
            let mut result = AlterUserScramCredentialsResult::default();
            result.user = StrBytes::from_string(user.to_owned());
            if let Err((code, message)) = outcome {
                result.error_code = code;
                result.error_message = text(message);
            }
            response.results.push(result);
        };
        let check = |user: &str, mechanism: i8| -> Result<ScramMechanism, (i16, String)> {
            if !allowed {
                return Err((
                    codes::CLUSTER_AUTHORIZATION_FAILED,
                    "altering users needs a super user (--super-users) or ALTER on the cluster"
                        .into(),
                ));
            }
            if count.get(user).copied().unwrap_or(0) > 1 {
                return Err((
                    codes::DUPLICATE_RESOURCE,
                    // Kafka's words (its `ScramControlManager`).
                    "A user credential cannot be altered twice in the same request".into(),
                ));
            }
            ScramMechanism::from_kafka_type(mechanism).ok_or((
                codes::UNSUPPORTED_SASL_MECHANISM,
                format!("unknown SCRAM mechanism {mechanism}"),
            ))
        };
        for deletion in request.deletions {
            let user = deletion.name.to_string();
            let outcome = check(&user, deletion.mechanism).and_then(|m| {
                match self.credentials.delete(&user, Some(m)) {
                    Ok(true) => Ok(()),
                    Ok(false) => Err((
                        codes::RESOURCE_NOT_FOUND,
                        "Attempt to delete a user credential that does not exist".into(),
                    )),
                    Err(e) => Err((codes::UNKNOWN_SERVER_ERROR, e.to_string())),
                }
            });
            answer(&user, outcome);
        }
        for upsertion in request.upsertions {
            let user = upsertion.name.to_string();
            let outcome = check(&user, upsertion.mechanism).and_then(|m| {
                let iterations = u32::try_from(upsertion.iterations).unwrap_or(0);
                if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations)
                    || upsertion.salt.is_empty()
                    || upsertion.salted_password.is_empty()
                {
                    return Err((
                        codes::UNACCEPTABLE_CREDENTIAL,
                        format!(
                            "iterations must be {MIN_ITERATIONS} to {MAX_ITERATIONS}, with a salt \
                             and a salted password"
                        ),
                    ));
                }
                let credential = ScramCredential::from_salted_password(
                    m,
                    &upsertion.salted_password,
                    upsertion.salt.to_vec(),
                    iterations,
                );
                self.credentials
                    .upsert(&user, m, credential)
                    .map_err(|e| (codes::UNACCEPTABLE_CREDENTIAL, e.to_string()))
            });
            if outcome.is_ok() {
                tracing::info!(user, by = %peer.caller.principal(), "user credentials changed");
            }
            answer(&user, outcome);
        }
        response
    }
}
