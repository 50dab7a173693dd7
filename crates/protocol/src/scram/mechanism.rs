//! A SCRAM mechanism's primitives (HMAC, hash, PBKDF2), the credential a server stores, the
//! random bytes and nonces both sides draw, and why an exchange was refused.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;

/// Fewest PBKDF2 iterations a credential may have (Kafka's and Redpanda's minimum): a stored
/// credential with fewer is refused at login.
pub const MIN_ITERATIONS: u32 = 4096;
/// Most iterations a credential may have (Kafka's maximum).
pub const MAX_ITERATIONS: u32 = 16384;
/// Iterations of credentials created without a choice.
pub const DEFAULT_ITERATIONS: u32 = 8192;
/// Bytes of a new credential's random salt.
const SALT_BYTES: usize = 32;

/// A SCRAM mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScramMechanism {
    /// SCRAM-SHA-256 (RFC 7677).
    Sha256,
    /// SCRAM-SHA-512.
    Sha512,
}

impl ScramMechanism {
    /// Both, in the order they are offered.
    pub const ALL: [ScramMechanism; 2] = [ScramMechanism::Sha256, ScramMechanism::Sha512];

    /// The SASL mechanism name (`SCRAM-SHA-256`).
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism called `name` (case-insensitive, as Kafka's tools accept it).
    pub fn from_name(name: &str) -> Option<ScramMechanism> {
        Self::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(name))
    }

    /// The mechanism's number in Kafka's AlterUserScramCredentials and
    /// DescribeUserScramCredentials (`ScramMechanism.java`: 1 and 2).
    pub fn kafka_type(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    /// The mechanism numbered `kafka_type` in Kafka's admin APIs.
    pub fn from_kafka_type(kafka_type: i8) -> Option<ScramMechanism> {
        Self::ALL.into_iter().find(|m| m.kafka_type() == kafka_type)
    }

    /// HMAC with the mechanism's hash.
    pub fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        fn mac<M: Mac + hmac::digest::KeyInit>(key: &[u8], data: &[u8]) -> Vec<u8> {
            let mut mac = <M as hmac::digest::KeyInit>::new_from_slice(key)
                .expect("HMAC takes keys of any length");
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
        match self {
            ScramMechanism::Sha256 => mac::<Hmac<Sha256>>(key, data),
            ScramMechanism::Sha512 => mac::<Hmac<Sha512>>(key, data),
        }
    }

    pub(crate) fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
            ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// RFC 5802's SaltedPassword: `Hi(password, salt, iterations)`, PBKDF2 with HMAC.
    pub fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => {
                let mut out = vec![0; 32];
                pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut out);
                out
            }
            ScramMechanism::Sha512 => {
                let mut out = vec![0; 64];
                pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, iterations, &mut out);
                out
            }
        }
    }
}

/// What the server keeps of one user's password for one mechanism.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredential {
    /// The PBKDF2 salt.
    pub salt: Vec<u8>,
    /// PBKDF2 iterations.
    pub iterations: u32,
    /// `H(ClientKey)`: what a client's proof must hash to.
    pub stored_key: Vec<u8>,
    /// `HMAC(SaltedPassword, "Server Key")`: signs the server's final message.
    pub server_key: Vec<u8>,
}

impl std::fmt::Debug for ScramCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Keys stay out of logs and panics.
        f.debug_struct("ScramCredential")
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

impl ScramCredential {
    /// A credential for `password` with a fresh random salt.
    pub fn new(mechanism: ScramMechanism, password: &[u8], iterations: u32) -> ScramCredential {
        let salt = random_bytes(SALT_BYTES);
        let salted = mechanism.salted_password(password, &salt, iterations);
        ScramCredential::from_salted_password(mechanism, &salted, salt, iterations)
    }

    /// The credential of a SaltedPassword computed elsewhere (Kafka's
    /// AlterUserScramCredentials carries this, never the password).
    pub fn from_salted_password(
        mechanism: ScramMechanism,
        salted_password: &[u8],
        salt: Vec<u8>,
        iterations: u32,
    ) -> ScramCredential {
        let client_key = mechanism.hmac(salted_password, b"Client Key");
        ScramCredential {
            salt,
            iterations,
            stored_key: mechanism.hash(&client_key),
            server_key: mechanism.hmac(salted_password, b"Server Key"),
        }
    }

    /// Whether `password` is the one this credential was made from (SASL PLAIN's check: the
    /// salted key is recomputed, so no password is ever stored). Constant time in the keys.
    pub fn matches_password(&self, mechanism: ScramMechanism, password: &[u8]) -> bool {
        let salted = mechanism.salted_password(password, &self.salt, self.iterations);
        let client_key = mechanism.hmac(&salted, b"Client Key");
        bool::from(mechanism.hash(&client_key).ct_eq(&self.stored_key))
    }
}

/// `n` random bytes from the operating system.
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut bytes = vec![0; n];
    // The kernel's random source does not fail on Linux once booted; if it ever did, a login
    // must not go ahead with a predictable nonce.
    getrandom::fill(&mut bytes).expect("the operating system's random source failed");
    bytes
}

/// A fresh nonce of 32 random letters and digits. Base64 would do by the RFC, but
/// librdkafka 2.0 garbles a nonce holding `+`, `/` or `=` (Kafka's own nonces are
/// alphanumeric, so no client meets one otherwise).
pub(crate) fn random_nonce() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    // 256 is a multiple of 64 but not 62: bytes at or above 248 are dropped, so every
    // character is equally likely.
    let mut nonce = String::with_capacity(32);
    while nonce.len() < 32 {
        for b in random_bytes(32) {
            if b < 248 && nonce.len() < 32 {
                nonce.push(ALPHABET[usize::from(b % 62)] as char);
            }
        }
    }
    nonce
}

/// Why an exchange was refused: for the log line, never for the client (which is told only
/// that authentication failed, so it learns nothing about which part was wrong).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused(pub &'static str);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}
