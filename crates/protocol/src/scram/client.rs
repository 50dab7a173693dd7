//! The client side of one SCRAM exchange, which logd's own tools log in with.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use subtle::ConstantTimeEq;

use super::mechanism::{MAX_ITERATIONS, MIN_ITERATIONS, Refused, ScramMechanism, random_nonce};
use super::messages::escape_saslname;

/// The client side of one SCRAM exchange (logd's own tools log in with it).
pub struct ScramClient {
    mechanism: ScramMechanism,
    password: Vec<u8>,
    nonce: String,
    first_bare: String,
    server_signature: Option<Vec<u8>>,
}

impl std::fmt::Debug for ScramClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramClient")
            .field("mechanism", &self.mechanism)
            .finish_non_exhaustive()
    }
}

impl ScramClient {
    /// Starts an exchange as `username`; returns the client and its first message.
    pub fn start(
        mechanism: ScramMechanism,
        username: &str,
        password: &[u8],
    ) -> (ScramClient, Vec<u8>) {
        ScramClient::start_with_nonce(mechanism, username, password, random_nonce())
    }

    pub(crate) fn start_with_nonce(
        mechanism: ScramMechanism,
        username: &str,
        password: &[u8],
        nonce: String,
    ) -> (ScramClient, Vec<u8>) {
        let first_bare = format!("n={},r={nonce}", escape_saslname(username));
        let message = format!("n,,{first_bare}").into_bytes();
        let client = ScramClient {
            mechanism,
            password: password.to_vec(),
            nonce,
            first_bare,
            server_signature: None,
        };
        (client, message)
    }

    /// Answers the server-first message with the client-final message.
    pub fn finish(&mut self, server_first: &[u8]) -> Result<Vec<u8>, Refused> {
        let server_first =
            std::str::from_utf8(server_first).map_err(|_| Refused("message is not UTF-8"))?;
        let mut nonce = None;
        let mut salt = None;
        let mut iterations = None;
        for field in server_first.split(',') {
            match field.split_at_checked(2) {
                Some(("r=", v)) => nonce = Some(v),
                Some(("s=", v)) => salt = BASE64.decode(v).ok(),
                Some(("i=", v)) => iterations = v.parse::<u32>().ok(),
                _ => {}
            }
        }
        let (Some(nonce), Some(salt), Some(iterations)) = (nonce, salt, iterations) else {
            return Err(Refused("malformed server-first message"));
        };
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err(Refused("server nonce does not extend the client's"));
        }
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
            return Err(Refused("server asks for iterations out of range"));
        }
        let mechanism = self.mechanism;
        let salted = mechanism.salted_password(&self.password, &salt, iterations);
        let client_key = mechanism.hmac(&salted, b"Client Key");
        let stored_key = mechanism.hash(&client_key);
        let without_proof = format!("c={},r={nonce}", BASE64.encode(b"n,,"));
        let auth_message = format!("{},{server_first},{without_proof}", self.first_bare);
        let signature = mechanism.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = mechanism.hmac(&salted, b"Server Key");
        self.server_signature = Some(mechanism.hmac(&server_key, auth_message.as_bytes()));
        Ok(format!("{without_proof},p={}", BASE64.encode(proof)).into_bytes())
    }

    /// Checks the server-final message: a server that does not know the password cannot sign
    /// it, so this is where the client learns it talked to the real server.
    pub fn verify(&self, server_final: &[u8]) -> Result<(), Refused> {
        let signature = std::str::from_utf8(server_final)
            .ok()
            .and_then(|s| s.strip_prefix("v="))
            .and_then(|v| BASE64.decode(v).ok())
            .ok_or(Refused("malformed server-final message"))?;
        match &self.server_signature {
            Some(expected) if bool::from(expected.ct_eq(&signature)) => Ok(()),
            _ => Err(Refused("server signature does not match")),
        }
    }
}
