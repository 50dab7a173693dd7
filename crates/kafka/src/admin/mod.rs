//! The admin layer under both front doors, the Kafka handlers and the console: operations that
//! take the [`Caller`] and return a typed [`Refused`], so the ACLs a change needs are decided,
//! counted and logged in one place ([`Guard`]) and each front door only translates (a Kafka
//! error code, an HTTP status).

mod caller;
mod groups;
mod guard;
mod refused;
mod topics;

pub use caller::Caller;
pub use guard::Guard;
pub use refused::Refused;
pub use topics::NewTopic;

/// The admin operations over an engine, checked by a [`Guard`].
#[derive(Debug, Clone)]
pub struct Admin {
    log: logd::Log,
    guard: Guard,
    /// This broker's node id: the only broker a replica may be assigned to.
    node_id: i32,
}

impl Admin {
    /// Operations on `log`, checked by `guard`, on the broker with id `node_id`.
    pub fn new(log: logd::Log, guard: Guard, node_id: i32) -> Admin {
        Admin {
            log,
            guard,
            node_id,
        }
    }

    /// The checks every operation goes through; the front doors' reads use it too.
    pub fn guard(&self) -> &Guard {
        &self.guard
    }

    /// The engine.
    pub fn log(&self) -> &logd::Log {
        &self.log
    }
}
