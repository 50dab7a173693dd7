//! Who calls the console's API and what they may do.
//!
//! With authentication on (a Kafka listener that authenticates, by SASL or client
//! certificates), the console asks for a logd user's password (`POST /api/v1/login`, checked
//! against the same SCRAM credentials as SASL PLAIN) and opens a session: a random token in an
//! `HttpOnly`, `SameSite=Strict` cookie, and a CSRF token that every change must carry in
//! `X-CSRF-Token`. Without authentication every caller is `User:ANONYMOUS`, as a Kafka client
//! on a PLAINTEXT listener is. Either way every call is checked against the broker's ACLs
//! (under `--authorizer acl`) for the caller's principal and address, with the operations
//! Kafka checks for the same work: what a caller may not describe is left out of listings, and
//! what it may not do is refused with 403.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use logd_kafka::acl::{CLUSTER_NAME, Operation, ResourceType};
use logd_kafka::admin::{self, Admin};
use logd_kafka::auth::ANONYMOUS;
use logd_kafka::auth::credentials::CredentialStore;
use logd_kafka::auth::scram::random_bytes;
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::json;
use subtle::ConstantTimeEq;

use super::State as Shared;
use super::params::Failure;
use super::refusals::status_of;

/// The session cookie's name.
const SESSION_COOKIE: &str = "logd_session";
/// The header a change carries its session's CSRF token in.
const CSRF_HEADER: &str = "x-csrf-token";
/// A session unused for this long is closed.
const SESSION_IDLE: Duration = Duration::from_secs(3600);
/// Sessions kept at most; a login beyond this closes the least recently used.
const MAX_SESSIONS: usize = 1000;

/// The console's rules for callers, shared by every request.
pub(crate) struct Access {
    /// `Some` when the console asks for a login.
    logins: Option<Logins>,
    /// The broker's admin operations and ACL checks, so the console decides, counts and logs
    /// refusals as the Kafka side does.
    admin: Admin,
    /// Every caller without a login (its refusals logged once per address and resource).
    anonymous: admin::Caller,
}

struct Logins {
    credentials: Arc<CredentialStore>,
    /// By session token.
    sessions: Mutex<HashMap<String, Session>>,
}

struct Session {
    /// The principal, and the refusals logged for this session.
    caller: admin::Caller,
    csrf: String,
    last_used: Instant,
}

impl Access {
    /// A login against `credentials` when `login` is set; changes and checks through `admin`
    /// (the broker's, with its ACLs and metrics).
    pub(crate) fn new(login: bool, credentials: Arc<CredentialStore>, admin: Admin) -> Access {
        Access {
            logins: login.then(|| Logins {
                credentials,
                sessions: Mutex::default(),
            }),
            admin,
            anonymous: admin::Caller::new(ANONYMOUS, ""),
        }
    }
}

/// The principal and address of a request that passed [`guard`], and what it may do.
#[derive(Clone)]
pub(crate) struct Caller {
    /// Who, from where.
    who: admin::Caller,
    /// The session's CSRF token, when logged in.
    csrf: Option<String>,
    access: Arc<Access>,
}

impl Caller {
    /// `User:NAME`, or `User:ANONYMOUS` without a login.
    pub(crate) fn principal(&self) -> &str {
        self.who.principal()
    }

    /// Who, from where, as the admin operations take it.
    pub(crate) fn who(&self) -> &admin::Caller {
        &self.who
    }

    /// The admin operations the console's changes go through.
    pub(crate) fn admin(&self) -> &Admin {
        &self.access.admin
    }

    /// Whether the caller may do `operation` on `name` of `resource_type` (always without
    /// ACLs), asked quietly: for what filters a listing.
    pub(crate) fn may(
        &self,
        operation: Operation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        self.admin()
            .guard()
            .allows(&self.who, operation, resource_type, name)
    }

    /// As [`Caller::may`], a refusal being 403 that names what was refused, counted in
    /// `/metrics` and logged as the Kafka side's are.
    pub(crate) fn require(
        &self,
        operation: Operation,
        resource_type: ResourceType,
        name: &str,
    ) -> Result<(), Failure> {
        self.admin()
            .guard()
            .check(&self.who, operation, resource_type, name)
            .map_err(|refused| status_of(&refused))
    }

    /// As [`Caller::require`] on the cluster.
    pub(crate) fn require_on_cluster(&self, operation: Operation) -> Result<(), Failure> {
        self.require(operation, ResourceType::Cluster, CLUSTER_NAME)
    }

    /// Whether the caller may see the topic `name` (Kafka's DESCRIBE, which READ, WRITE and
    /// the rest imply).
    pub(crate) fn sees_topic(&self, name: &str) -> bool {
        self.may(Operation::Describe, ResourceType::Topic, name)
    }

    /// Whether the caller may see the group `name`.
    pub(crate) fn sees_group(&self, name: &str) -> bool {
        self.may(Operation::Describe, ResourceType::Group, name)
    }

    /// Whether the caller may see the transactional id `name`.
    pub(crate) fn sees_transactional_id(&self, name: &str) -> bool {
        self.may(Operation::Describe, ResourceType::TransactionalId, name)
    }
}

/// Lets a request to the API through as a [`Caller`], or answers it: 401 when a login is due
/// and the request has no live session, 403 when a change lacks the session's CSRF token.
pub(crate) async fn guard(
    State(state): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut request: Request,
    next: Next,
) -> Response {
    let access = state.access.clone();
    let host = peer.ip().to_string();
    let caller = match &access.logins {
        None => Caller {
            who: access.anonymous.at(host),
            csrf: None,
            access: access.clone(),
        },
        Some(logins) => {
            let Some(session) = session_token(request.headers()).and_then(|token| {
                let mut sessions = logins.sessions.lock();
                let session = sessions.get_mut(token)?;
                if session.last_used.elapsed() > SESSION_IDLE {
                    sessions.remove(token);
                    return None;
                }
                session.last_used = Instant::now();
                Some((session.caller.at(host.clone()), session.csrf.clone()))
            }) else {
                return refuse(StatusCode::UNAUTHORIZED, "log in first");
            };
            let (who, csrf) = session;
            let changes = !matches!(*request.method(), Method::GET | Method::HEAD);
            let token = request
                .headers()
                .get(CSRF_HEADER)
                .map(|v| v.as_bytes())
                .unwrap_or_default();
            if changes && !bool::from(token.ct_eq(csrf.as_bytes())) {
                return refuse(
                    StatusCode::FORBIDDEN,
                    "a change needs the session's CSRF token in X-CSRF-Token",
                );
            }
            Caller {
                who,
                csrf: Some(csrf),
                access: access.clone(),
            }
        }
    };
    request.extensions_mut().insert(caller);
    next.run(request).await
}

/// `GET /api/v1/session`: who the caller is, whether the console asks for a login, and the
/// CSRF token changes must carry (none without a login).
pub(super) async fn session(axum::Extension(caller): axum::Extension<Caller>) -> Response {
    Json(json!({
        "login_required": caller.access.logins.is_some(),
        "principal": caller.principal(),
        "csrf_token": caller.csrf,
    }))
    .into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Login {
    user: String,
    password: String,
}

/// `POST /api/v1/login`: checks a logd user's password and opens a session (the cookie, and the
/// CSRF token in the answer). Wrong passwords and unknown users get the same 401.
pub(super) async fn login(
    State(state): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Json(login): Json<Login>,
) -> Response {
    let access = state.access.clone();
    let Some(logins) = &access.logins else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "this console has no login: authentication is off",
        );
    };
    let credentials = logins.credentials.clone();
    let user = login.user.clone();
    // Thousands of PBKDF2 rounds: off the listener's thread.
    let checked = tokio::task::spawn_blocking(move || {
        credentials.check_password(&user, login.password.as_bytes())
    })
    .await;
    match checked {
        Ok(Ok(())) => {}
        Ok(Err(refused)) => {
            tracing::info!(user = %login.user, host = %peer.ip(), reason = %refused, "console login refused");
            return refuse(StatusCode::UNAUTHORIZED, "wrong user name or password");
        }
        Err(e) => return refuse(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
    let token = random_token();
    let csrf = random_token();
    let principal = format!("User:{}", login.user);
    {
        let mut sessions = logins.sessions.lock();
        sessions.retain(|_, s| s.last_used.elapsed() <= SESSION_IDLE);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, s)| s.last_used)
                .map(|(t, _)| t.clone())
        {
            sessions.remove(&oldest);
        }
        sessions.insert(
            token.clone(),
            Session {
                caller: admin::Caller::new(principal.clone(), peer.ip().to_string()),
                csrf: csrf.clone(),
                last_used: Instant::now(),
            },
        );
    }
    tracing::info!(%principal, host = %peer.ip(), "console login");
    (
        [(
            header::SET_COOKIE,
            format!("{SESSION_COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"),
        )],
        Json(json!({ "principal": principal, "csrf_token": csrf })),
    )
        .into_response()
}

/// `POST /api/v1/logout`: closes the caller's session.
pub(super) async fn logout(State(state): State<Shared>, headers: HeaderMap) -> Response {
    if let (Some(logins), Some(token)) = (&state.access.logins, session_token(&headers)) {
        logins.sessions.lock().remove(token);
    }
    (
        [(
            header::SET_COOKIE,
            format!("{SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"),
        )],
        Json(json!({ "logged_out": true })),
    )
        .into_response()
}

/// The session token from the request's `Cookie` header.
fn session_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(SESSION_COOKIE)?.strip_prefix('='))
        .filter(|token| !token.is_empty())
}

/// 32 random bytes in hex.
fn random_token() -> String {
    random_bytes(32)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn refuse(status: StatusCode, error: &str) -> Response {
    (status, Json(json!({ "error": error }))).into_response()
}
