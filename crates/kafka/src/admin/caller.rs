//! [`Caller`]: who asks for something through either front door, a Kafka connection or a
//! console session: its principal, its address, and the refusals already logged for it.

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::Mutex;

/// Refusals remembered per caller; past this, further new ones are not logged (a client
/// naming endless topics cannot grow the broker's memory).
const MAX_DENIALS_LOGGED: usize = 1024;

/// Who asks. Clones share the record of refusals already logged (each refusal is logged once
/// per caller, address and resource), so a client retrying a refused request does not flood
/// the log.
#[derive(Debug, Clone)]
pub struct Caller {
    principal: String,
    host: String,
    denials: Arc<Mutex<HashSet<String>>>,
}

impl Caller {
    /// `principal` (`User:NAME`, a certificate's subject, `User:ANONYMOUS`) at `host` (the
    /// client's address, as Kafka shows it `/10.0.0.7` or bare).
    pub fn new(principal: impl Into<String>, host: impl Into<String>) -> Caller {
        Caller {
            principal: principal.into(),
            host: host.into(),
            denials: Arc::default(),
        }
    }

    /// The same principal at `host`, sharing the record of refusals logged (a console
    /// session's requests, each from the address it came from).
    pub fn at(&self, host: impl Into<String>) -> Caller {
        Caller {
            host: host.into(),
            ..self.clone()
        }
    }

    /// `User:NAME`, a certificate's subject, or `User:ANONYMOUS`.
    pub fn principal(&self) -> &str {
        &self.principal
    }

    /// The client's address as it was given.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The address as ACLs name hosts: Kafka's `/10.0.0.7` without the slash.
    pub(crate) fn acl_host(&self) -> &str {
        self.host.strip_prefix('/').unwrap_or(&self.host)
    }

    /// Whether the refusal described by `key` is new for this caller (and remembered).
    pub(crate) fn first_denial(&self, key: String) -> bool {
        let mut seen = self.denials.lock();
        seen.len() < MAX_DENIALS_LOGGED && seen.insert(key)
    }
}
