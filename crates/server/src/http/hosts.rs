//! Which names the console answers to, against DNS rebinding: a web page the user visits can
//! point its own name at 127.0.0.1 and then call the console through the user's browser, which
//! sends the page's name as `Host`. The console and its API serve only a `Host` that is an IP
//! address (a page cannot rebind to one: its origin would be the address itself), `localhost`
//! or a name under it, or a name given with `--http-allowed-hosts`; and a change (any method
//! but GET and HEAD) whose `Origin` is not its `Host` is refused, so another site's page cannot
//! post to the console either. Development servers (Vite, webpack's) guard the same way.
//! `/metrics` and `/health` are not guarded: scrapers reach them by any name.

use std::net::IpAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// The names the console answers to beyond addresses and `localhost`.
#[derive(Debug, Clone, Default)]
pub(crate) struct AllowedHosts {
    /// Lower-case names; `*` allows every name.
    names: Arc<Vec<String>>,
}

impl AllowedHosts {
    /// The names given with `--http-allowed-hosts` (`*` for any).
    pub(crate) fn new(names: &[String]) -> AllowedHosts {
        AllowedHosts {
            names: Arc::new(
                names
                    .iter()
                    .map(|n| n.trim().to_ascii_lowercase())
                    .collect(),
            ),
        }
    }

    /// Whether `host` (a `Host` header's name, without its port) may be served.
    fn allows(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        bare.parse::<IpAddr>().is_ok()
            || host == "localhost"
            || host.ends_with(".localhost")
            || self.names.iter().any(|n| n == "*" || *n == host)
    }
}

/// The name part of a `Host` header or of an origin's authority: `name`, `name:port`,
/// `[v6]:port`.
fn name_of(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority
            .find(']')
            .map_or(authority, |end| &authority[..=end]);
    }
    authority
        .rsplit_once(':')
        .map_or(authority, |(name, _)| name)
}

/// Refuses a request whose `Host` is not one of the console's names, or a change whose
/// `Origin` is another site's.
pub(crate) async fn guard(
    State(allowed): State<AllowedHosts>,
    request: Request,
    next: Next,
) -> Response {
    if let Err(refusal) = check(&allowed, request.method(), request.headers()) {
        tracing::warn!(refusal, "console request refused (DNS rebinding guard)");
        return (StatusCode::FORBIDDEN, Json(json!({ "error": refusal }))).into_response();
    }
    next.run(request).await
}

fn check(allowed: &AllowedHosts, method: &Method, headers: &HeaderMap) -> Result<(), String> {
    // Browsers always send Host; a client without one is not a browser a page can drive.
    let Some(host) = headers.get(header::HOST) else {
        return Ok(());
    };
    let host = host
        .to_str()
        .map_err(|_| "the Host header is not text".to_owned())?;
    if !allowed.allows(name_of(host)) {
        return Err(format!(
            "Host {host:?} is not a name of this console; serve it under that name with \
             --http-allowed-hosts {}",
            name_of(host)
        ));
    }
    if matches!(*method, Method::GET | Method::HEAD) {
        return Ok(());
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().unwrap_or("");
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    if authority.is_some_and(|a| a.eq_ignore_ascii_case(host)) {
        return Ok(());
    }
    Err(format!(
        "a change from Origin {origin:?} to Host {host:?}: the console takes changes only from \
         its own pages (--http-allowed-hosts names the hosts it serves)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (name.clone(), value.parse().unwrap()))
            .collect()
    }

    #[test]
    fn addresses_localhost_and_named_hosts_are_served() {
        let allowed = AllowedHosts::new(&["Console.Example".into()]);
        for host in [
            "127.0.0.1:9644",
            "127.0.0.1",
            "[::1]:9644",
            "10.1.2.3:80",
            "localhost:9644",
            "LOCALHOST",
            "app.localhost:1",
            "console.example:9644",
            "console.example",
        ] {
            let h = headers(&[(header::HOST, host)]);
            assert_eq!(check(&allowed, &Method::GET, &h), Ok(()), "{host}");
        }
        assert_eq!(check(&allowed, &Method::GET, &HeaderMap::new()), Ok(()));
    }

    #[test]
    fn other_names_are_refused_naming_the_option() {
        let allowed = AllowedHosts::new(&[]);
        for host in [
            "attacker.example",
            "attacker.example:9644",
            "localhost.attacker.example",
        ] {
            let refusal =
                check(&allowed, &Method::GET, &headers(&[(header::HOST, host)])).expect_err(host);
            assert!(refusal.contains("--http-allowed-hosts"), "{refusal}");
        }
        let any = AllowedHosts::new(&["*".into()]);
        let h = headers(&[(header::HOST, "attacker.example")]);
        assert_eq!(check(&any, &Method::GET, &h), Ok(()));
    }

    #[test]
    fn a_change_from_another_origin_is_refused() {
        let allowed = AllowedHosts::new(&[]);
        let from = |origin: &str| {
            check(
                &allowed,
                &Method::POST,
                &headers(&[(header::HOST, "127.0.0.1:9644"), (header::ORIGIN, origin)]),
            )
        };
        assert_eq!(from("http://127.0.0.1:9644"), Ok(()));
        for origin in [
            "http://attacker.example",
            "http://127.0.0.1:9645",
            "null",
            "https://127.0.0.1:9644.attacker.example",
        ] {
            assert!(from(origin).is_err(), "{origin}");
        }
        // Reads carry no risk of change: an Origin on a GET is not checked.
        let h = headers(&[
            (header::HOST, "127.0.0.1:9644"),
            (header::ORIGIN, "http://attacker.example"),
        ]);
        assert_eq!(check(&allowed, &Method::GET, &h), Ok(()));
        // No Origin: not a browser's cross-site request.
        let h = headers(&[(header::HOST, "127.0.0.1:9644")]);
        assert_eq!(check(&allowed, &Method::DELETE, &h), Ok(()));
    }
}
