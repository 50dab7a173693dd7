//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka runs them: the stored
//! credential (salt, iterations, StoredKey, ServerKey; never the password), the strict parsing
//! of the client's two messages, and both ends of the exchange. The server side refuses
//! anything that does not follow the RFC and checks the proof in constant time; it answers an
//! unknown user exactly as a wrong password (a salt derived from the name, a proof that cannot
//! match), so a login attempt does not tell whether a user exists.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
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

    pub(crate) fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
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

    fn hash(self, data: &[u8]) -> Vec<u8> {
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
fn random_nonce() -> String {
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

/// The client's first message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFirst {
    /// The GS2 header (`n,,` or `n,a=NAME,`), which the final message must echo.
    pub gs2_header: String,
    /// The user, unescaped (`=2C` is `,`, `=3D` is `=`).
    pub username: String,
    /// The client's nonce.
    pub nonce: String,
    /// `client-first-message-bare`, part of what both proofs sign.
    pub bare: String,
}

/// Parses a client-first message. Only `n` is accepted as the channel-binding flag: logd
/// offers no `-PLUS` mechanism, so `p=` asks for something never offered; `y` would say the
/// client thinks the server lacks channel binding, which is true, but no Kafka client sends
/// it and Kafka refuses it too. An authorization id must name the user itself.
pub fn parse_client_first(message: &[u8]) -> Result<ClientFirst, Refused> {
    let message = std::str::from_utf8(message).map_err(|_| Refused("message is not UTF-8"))?;
    let rest = match message.as_bytes().first() {
        Some(b'n') => message.get(1..).unwrap_or_default(),
        Some(b'p') => return Err(Refused("channel binding requested but not offered")),
        Some(b'y') => return Err(Refused("channel binding flag y is not accepted")),
        _ => return Err(Refused("client-first message has no GS2 header")),
    };
    let rest = rest
        .strip_prefix(',')
        .ok_or(Refused("malformed GS2 header"))?;
    let (raw_authzid, bare) = rest
        .split_once(',')
        .ok_or(Refused("malformed GS2 header"))?;
    let authzid = match raw_authzid {
        "" => None,
        a => Some(unescape_saslname(
            a.strip_prefix("a=")
                .ok_or(Refused("malformed authorization id"))?,
        )?),
    };
    let gs2_header = format!("n,{raw_authzid},");
    let mut fields = bare.split(',');
    let username = fields
        .next()
        .and_then(|f| f.strip_prefix("n="))
        .ok_or(Refused("client-first message has no username"))?;
    let username = unescape_saslname(username)?;
    let nonce = fields
        .next()
        .and_then(|f| f.strip_prefix("r="))
        .ok_or(Refused("client-first message has no nonce"))?;
    check_nonce(nonce)?;
    for extension in fields {
        check_extension(extension)?;
    }
    if authzid.as_ref().is_some_and(|a| *a != username) {
        return Err(Refused("authorization id differs from the username"));
    }
    Ok(ClientFirst {
        gs2_header,
        username,
        nonce: nonce.to_owned(),
        bare: bare.to_owned(),
    })
}

/// The client's final message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFinal {
    /// The channel binding, decoded (the GS2 header again, as no binding is used).
    pub channel_binding: Vec<u8>,
    /// Client nonce followed by server nonce.
    pub nonce: String,
    /// `ClientKey XOR ClientSignature`.
    pub proof: Vec<u8>,
    /// `client-final-message-without-proof`, part of what both proofs sign.
    pub without_proof: String,
}

/// Parses a client-final message: `c=...,r=...[,extensions],p=...`, the proof last.
pub fn parse_client_final(message: &[u8]) -> Result<ClientFinal, Refused> {
    let message = std::str::from_utf8(message).map_err(|_| Refused("message is not UTF-8"))?;
    let (without_proof, proof) = message
        .rsplit_once(",p=")
        .ok_or(Refused("client-final message has no proof"))?;
    let proof = BASE64
        .decode(proof)
        .map_err(|_| Refused("proof is not base64"))?;
    let mut fields = without_proof.split(',');
    let channel_binding = fields
        .next()
        .and_then(|f| f.strip_prefix("c="))
        .ok_or(Refused("client-final message has no channel binding"))?;
    let channel_binding = BASE64
        .decode(channel_binding)
        .map_err(|_| Refused("channel binding is not base64"))?;
    let nonce = fields
        .next()
        .and_then(|f| f.strip_prefix("r="))
        .ok_or(Refused("client-final message has no nonce"))?;
    check_nonce(nonce)?;
    for extension in fields {
        check_extension(extension)?;
    }
    Ok(ClientFinal {
        channel_binding,
        nonce: nonce.to_owned(),
        proof,
        without_proof: without_proof.to_owned(),
    })
}

/// A nonce is printable ASCII without commas (RFC 5802 `printable`).
fn check_nonce(nonce: &str) -> Result<(), Refused> {
    if nonce.is_empty()
        || !nonce
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b',')
    {
        return Err(Refused("nonce is empty or not printable"));
    }
    Ok(())
}

/// Extensions are `name=value` with a one-letter-or-longer alphabetic name. A mandatory
/// extension (`m=`) must be refused when not understood (RFC 5802); Kafka's `tokenauth`
/// (delegation tokens) is not served by logd, so asking for it fails the login.
fn check_extension(extension: &str) -> Result<(), Refused> {
    let (name, value) = extension
        .split_once('=')
        .ok_or(Refused("malformed extension"))?;
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(Refused("malformed extension"));
    }
    match name {
        "m" => Err(Refused("mandatory extension not supported")),
        "tokenauth" if value.eq_ignore_ascii_case("true") => {
            Err(Refused("delegation tokens are not supported"))
        }
        _ => Ok(()),
    }
}

/// Undoes SCRAM's name escaping: `=2C` is `,`, `=3D` is `=`; any other `=` is malformed.
pub fn unescape_saslname(name: &str) -> Result<String, Refused> {
    if name.is_empty() {
        return Err(Refused("empty name"));
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find('=') {
        out.push_str(&rest[..at]);
        match rest.get(at..at + 3) {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return Err(Refused("malformed escape in name")),
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    if out.contains('\0') {
        return Err(Refused("name holds a NUL"));
    }
    Ok(out)
}

/// SCRAM's name escaping: `,` becomes `=2C`, `=` becomes `=3D`.
pub fn escape_saslname(name: &str) -> String {
    name.replace('=', "=3D").replace(',', "=2C")
}

/// What a server step produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerStep {
    /// Send this and expect the client's next message.
    Continue(Vec<u8>),
    /// Authenticated: send this last message; `username` is who logged in.
    Done {
        /// The server-final message.
        response: Vec<u8>,
        /// The authenticated user.
        username: String,
    },
}

/// The server side of one SCRAM exchange: client-first, then client-final, then done. Any
/// message after that, or out of turn, is refused.
pub struct ScramServer {
    mechanism: ScramMechanism,
    server_nonce: String,
    state: ServerState,
}

enum ServerState {
    AwaitingClientFirst,
    AwaitingClientFinal {
        first: ClientFirst,
        server_first: String,
        /// `None` for an unknown user: the exchange goes on and fails at the proof.
        credential: Option<ScramCredential>,
    },
    Finished,
}

impl std::fmt::Debug for ScramServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramServer")
            .field("mechanism", &self.mechanism)
            .finish_non_exhaustive()
    }
}

impl ScramServer {
    /// A new exchange for `mechanism`.
    pub fn new(mechanism: ScramMechanism) -> ScramServer {
        ScramServer::with_nonce(mechanism, random_nonce())
    }

    /// The exchange's mechanism.
    pub fn mechanism(&self) -> ScramMechanism {
        self.mechanism
    }

    fn with_nonce(mechanism: ScramMechanism, server_nonce: String) -> ScramServer {
        ScramServer {
            mechanism,
            server_nonce,
            state: ServerState::AwaitingClientFirst,
        }
    }

    /// Takes the client's next message. `lookup` gives the stored credential of a user for
    /// this mechanism; `unknown_salt` gives the salt to show for a user that has none, the
    /// same on every attempt, so an unknown user looks like a known one.
    pub fn step(
        &mut self,
        message: &[u8],
        lookup: impl FnOnce(&str) -> Option<ScramCredential>,
        unknown_salt: impl FnOnce(&str) -> Vec<u8>,
    ) -> Result<ServerStep, Refused> {
        match std::mem::replace(&mut self.state, ServerState::Finished) {
            ServerState::AwaitingClientFirst => {
                let first = parse_client_first(message)?;
                let credential = lookup(&first.username);
                let (salt, iterations) = match &credential {
                    Some(c) => (c.salt.clone(), c.iterations),
                    None => (unknown_salt(&first.username), DEFAULT_ITERATIONS),
                };
                let server_first = format!(
                    "r={}{},s={},i={}",
                    first.nonce,
                    self.server_nonce,
                    BASE64.encode(salt),
                    iterations
                );
                let response = server_first.clone().into_bytes();
                self.state = ServerState::AwaitingClientFinal {
                    first,
                    server_first,
                    credential,
                };
                Ok(ServerStep::Continue(response))
            }
            ServerState::AwaitingClientFinal {
                first,
                server_first,
                credential,
            } => {
                let last = parse_client_final(message)?;
                if last.channel_binding != first.gs2_header.as_bytes() {
                    return Err(Refused("channel binding does not echo the GS2 header"));
                }
                let expected_nonce = server_first
                    .strip_prefix("r=")
                    .and_then(|s| s.split(',').next())
                    .unwrap_or_default();
                // Kafka accepts any final nonce that ends with the server-first one
                // (`ScramSaslServer`: `endsWith`), and librdkafka before 2.1 relies on it: it
                // sends its own nonce again in front. A replay from another exchange still
                // fails, since it cannot end with this exchange's fresh server nonce.
                if !last.nonce.ends_with(expected_nonce) {
                    return Err(Refused("nonce does not end with the server's"));
                }
                let Some(credential) = credential else {
                    return Err(Refused("unknown user"));
                };
                if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&credential.iterations) {
                    return Err(Refused("stored credential's iterations are out of range"));
                }
                let auth_message =
                    format!("{},{},{}", first.bare, server_first, last.without_proof);
                let mechanism = self.mechanism;
                let signature = mechanism.hmac(&credential.stored_key, auth_message.as_bytes());
                if last.proof.len() != signature.len() {
                    return Err(Refused("proof has the wrong length"));
                }
                let client_key: Vec<u8> = last
                    .proof
                    .iter()
                    .zip(&signature)
                    .map(|(p, s)| p ^ s)
                    .collect();
                if !bool::from(mechanism.hash(&client_key).ct_eq(&credential.stored_key)) {
                    return Err(Refused("wrong proof"));
                }
                let server_signature =
                    mechanism.hmac(&credential.server_key, auth_message.as_bytes());
                Ok(ServerStep::Done {
                    response: format!("v={}", BASE64.encode(server_signature)).into_bytes(),
                    username: first.username,
                })
            }
            ServerState::Finished => Err(Refused("message after the exchange ended")),
        }
    }
}

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

    fn start_with_nonce(
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

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 7677 section 3: user "user", password "pencil".
    const CLIENT_FIRST: &str = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
    const SERVER_NONCE: &str = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
    const SALT: &str = "W22ZaJ0SNY7soEsUEjb6gQ==";
    const SERVER_FIRST: &str =
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    const CLIENT_FINAL: &str = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
                                p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    const SERVER_FINAL: &str = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

    fn pencil() -> ScramCredential {
        let salt = BASE64.decode(SALT).unwrap();
        let salted = ScramMechanism::Sha256.salted_password(b"pencil", &salt, 4096);
        ScramCredential::from_salted_password(ScramMechanism::Sha256, &salted, salt, 4096)
    }

    fn rfc_server(credential: Option<ScramCredential>) -> (ScramServer, Vec<u8>) {
        let mut server = ScramServer::with_nonce(ScramMechanism::Sha256, SERVER_NONCE.into());
        let step = server
            .step(
                CLIENT_FIRST.as_bytes(),
                |_| credential,
                |_| b"fake".to_vec(),
            )
            .unwrap();
        let ServerStep::Continue(first) = step else {
            panic!("expected server-first, got {step:?}")
        };
        (server, first)
    }

    fn no_lookup(_: &str) -> Option<ScramCredential> {
        None
    }

    fn no_salt(_: &str) -> Vec<u8> {
        Vec::new()
    }

    #[test]
    fn server_follows_rfc_7677_vectors() {
        let (mut server, first) = rfc_server(Some(pencil()));
        assert_eq!(first, SERVER_FIRST.as_bytes());
        let step = server
            .step(CLIENT_FINAL.as_bytes(), no_lookup, no_salt)
            .unwrap();
        assert_eq!(
            step,
            ServerStep::Done {
                response: SERVER_FINAL.as_bytes().to_vec(),
                username: "user".into()
            }
        );
        // The exchange is over: the same final message again is refused.
        assert!(
            server
                .step(CLIENT_FINAL.as_bytes(), no_lookup, no_salt)
                .is_err()
        );
    }

    #[test]
    fn client_follows_rfc_7677_vectors() {
        let (mut client, first) = ScramClient::start_with_nonce(
            ScramMechanism::Sha256,
            "user",
            b"pencil",
            "rOprNGfwEbeRWgbNEkqO".into(),
        );
        assert_eq!(first, CLIENT_FIRST.as_bytes());
        let last = client.finish(SERVER_FIRST.as_bytes()).unwrap();
        assert_eq!(last, CLIENT_FINAL.as_bytes());
        client.verify(SERVER_FINAL.as_bytes()).unwrap();
        assert!(client.verify(b"v=AAAA").is_err());
    }

    #[test]
    fn wrong_proof_is_refused() {
        let (mut server, _) = rfc_server(Some(pencil()));
        let mut last = CLIENT_FINAL.to_owned();
        last.replace_range(last.len() - 3..last.len() - 2, "B");
        assert_eq!(
            server.step(last.as_bytes(), no_lookup, no_salt),
            Err(Refused("wrong proof"))
        );
    }

    #[test]
    fn unknown_user_looks_like_a_known_one_and_fails_at_the_proof() {
        let (mut server, first) = rfc_server(None);
        let first = String::from_utf8(first).unwrap();
        assert!(first.contains(&format!("s={}", BASE64.encode(b"fake"))));
        assert!(first.ends_with(",i=8192"));
        assert_eq!(
            server.step(CLIENT_FINAL.as_bytes(), no_lookup, no_salt),
            Err(Refused("unknown user"))
        );
    }

    #[test]
    fn nonce_must_be_the_servers() {
        let (mut server, _) = rfc_server(Some(pencil()));
        let last = CLIENT_FINAL.replace("$k0,", "$k1,");
        assert_eq!(
            server.step(last.as_bytes(), no_lookup, no_salt),
            Err(Refused("nonce does not end with the server's"))
        );
    }

    #[test]
    fn channel_binding_must_echo_the_header() {
        let (mut server, _) = rfc_server(Some(pencil()));
        let last = CLIENT_FINAL.replace("c=biws", &format!("c={}", BASE64.encode("y,,")));
        assert_eq!(
            server.step(last.as_bytes(), no_lookup, no_salt),
            Err(Refused("channel binding does not echo the GS2 header"))
        );
    }

    #[test]
    fn too_few_iterations_in_a_stored_credential_fail_the_login() {
        let salt = BASE64.decode(SALT).unwrap();
        let salted = ScramMechanism::Sha256.salted_password(b"pencil", &salt, 4096);
        let mut weak =
            ScramCredential::from_salted_password(ScramMechanism::Sha256, &salted, salt, 4096);
        weak.iterations = 4095;
        let mut server = ScramServer::with_nonce(ScramMechanism::Sha256, SERVER_NONCE.into());
        server
            .step(CLIENT_FIRST.as_bytes(), |_| Some(weak), no_salt)
            .unwrap();
        assert_eq!(
            server.step(CLIENT_FINAL.as_bytes(), no_lookup, no_salt),
            Err(Refused("stored credential's iterations are out of range"))
        );
    }

    #[test]
    fn client_first_is_parsed_strictly() {
        let first = parse_client_first(b"n,,n=a=2Cb=3Dc,r=xyz").unwrap();
        assert_eq!(first.username, "a,b=c");
        assert_eq!(first.bare, "n=a=2Cb=3Dc,r=xyz");
        assert_eq!(first.gs2_header, "n,,");
        let first = parse_client_first(b"n,a=bob,n=bob,r=xyz,ext=1").unwrap();
        assert_eq!(first.gs2_header, "n,a=bob,");
        for bad in [
            &b"p=tls-unique,,n=bob,r=xyz"[..],
            b"y,,n=bob,r=xyz",
            b"n,a=eve,n=bob,r=xyz",
            b"n,,n=b=2Xob,r=xyz",
            b"n,,n=bob=,r=xyz",
            b"n,,r=xyz",
            b"n,,n=bob",
            b"n,,n=bob,r=",
            b"n,,n=bob,r=a b",
            b"n,,n=,r=xyz",
            b"n,,m=x,n=bob,r=xyz",
            b"n,,n=bob,r=xyz,tokenauth=true",
            b"n,,n=bob,r=xyz,=1",
            b"",
            b"\xff\xfe",
            b"n",
        ] {
            assert!(
                parse_client_first(bad).is_err(),
                "{:?} was accepted",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn client_final_is_parsed_strictly() {
        for bad in [
            &b"c=biws,r=abc"[..],
            b"c=biws,p=AAAA",
            b"r=abc,p=AAAA",
            b"c=!!,r=abc,p=AAAA",
            b"c=biws,r=abc,p=!!",
            b"",
        ] {
            assert!(
                parse_client_final(bad).is_err(),
                "{:?} was accepted",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn plain_check_recomputes_the_stored_key() {
        for mechanism in ScramMechanism::ALL {
            let credential = ScramCredential::new(mechanism, b"s3cret", MIN_ITERATIONS);
            assert!(credential.matches_password(mechanism, b"s3cret"));
            assert!(!credential.matches_password(mechanism, b"s3cres"));
            assert!(!credential.matches_password(mechanism, b""));
        }
    }

    #[test]
    fn client_and_server_agree_on_both_mechanisms() {
        for mechanism in ScramMechanism::ALL {
            let credential = ScramCredential::new(mechanism, b"pw", MIN_ITERATIONS);
            let mut server = ScramServer::new(mechanism);
            let (mut client, first) = ScramClient::start(mechanism, "a,b", b"pw");
            let lookup = |name: &str| (name == "a,b").then(|| credential.clone());
            let ServerStep::Continue(server_first) = server.step(&first, lookup, no_salt).unwrap()
            else {
                panic!("expected server-first")
            };
            let last = client.finish(&server_first).unwrap();
            let ServerStep::Done { response, username } =
                server.step(&last, no_lookup, no_salt).unwrap()
            else {
                panic!("expected the end")
            };
            assert_eq!(username, "a,b");
            client.verify(&response).unwrap();
        }
    }

    proptest::proptest! {
        #[test]
        fn saslname_escaping_round_trips(name in "[^\\x00]{1,40}") {
            let escaped = escape_saslname(&name);
            proptest::prop_assert!(!escaped.contains(','));
            proptest::prop_assert_eq!(unescape_saslname(&escaped).unwrap(), name);
        }

        #[test]
        fn parsers_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let _ = parse_client_first(&bytes);
            let _ = parse_client_final(&bytes);
        }
    }
}
