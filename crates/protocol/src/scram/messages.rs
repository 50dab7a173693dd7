//! The strict parsing of the client's two SCRAM messages (RFC 5802 section 7), and SCRAM's
//! name escaping, which both sides use.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;

use super::mechanism::Refused;

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
