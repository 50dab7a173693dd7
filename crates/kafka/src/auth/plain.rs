//! SASL PLAIN (RFC 4616): the one message `[authzid] NUL authcid NUL passwd`, parsed as Kafka's
//! `PlainSaslServer` does. The password is checked against the user's stored SCRAM credential
//! by recomputing its salted key, so PLAIN needs no stored password.

use logd_protocol::scram::Refused;

/// A parsed PLAIN message.
#[derive(PartialEq, Eq)]
pub struct PlainMessage<'a> {
    /// The user logging in.
    pub username: &'a str,
    /// Their password.
    pub password: &'a [u8],
}

impl std::fmt::Debug for PlainMessage<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlainMessage")
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// Parses a PLAIN message: exactly three NUL-separated parts, a non-empty UTF-8 username and
/// password, and an authorization id that is empty or the username itself.
pub fn parse_plain(message: &[u8]) -> Result<PlainMessage<'_>, Refused> {
    let mut parts = message.split(|&b| b == 0);
    let (Some(authzid), Some(username), Some(password), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Refused("PLAIN message is not three NUL-separated parts"));
    };
    let username =
        std::str::from_utf8(username).map_err(|_| Refused("PLAIN username is not UTF-8"))?;
    if username.is_empty() || password.is_empty() {
        return Err(Refused("PLAIN username or password is empty"));
    }
    if !authzid.is_empty() && authzid != username.as_bytes() {
        return Err(Refused("authorization id differs from the username"));
    }
    Ok(PlainMessage { username, password })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_messages() {
        let m = parse_plain(b"\0alice\0pw").unwrap();
        assert_eq!((m.username, m.password), ("alice", &b"pw"[..]));
        assert!(parse_plain(b"alice\0alice\0pw").is_ok());
        for bad in [
            &b"bob\0alice\0pw"[..],
            b"\0alice\0",
            b"\0\0pw",
            b"\0alice\0pw\0",
            b"alice\0pw",
            b"",
            b"\0\xff\0pw",
        ] {
            assert!(parse_plain(bad).is_err(), "{bad:?} was accepted");
        }
    }

    proptest::proptest! {
        #[test]
        fn parser_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..100)) {
            let _ = parse_plain(&bytes);
        }
    }
}
