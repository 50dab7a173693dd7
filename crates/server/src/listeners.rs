//! The daemon's listeners from its flags: `--listener NAME=PROTOCOL://HOST:PORT` (repeatable,
//! Kafka style) with `--advertised-listener NAME=HOST:PORT`, `--listen` as the short form of
//! one PLAINTEXT listener, the TLS and SASL settings they share, and protected mode: a listener
//! reachable from the network that authenticates nobody refuses to start unless allowed.

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use logd_kafka::auth::SaslMechanism;
use logd_kafka::auth::tls::{TlsServer, TlsSettings};
use logd_kafka::{ListenerConfig, SecurityProtocol};

/// One `--listener`, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListenerSpec {
    pub name: String,
    pub protocol: SecurityProtocol,
    pub addr: SocketAddr,
}

/// Parses `NAME=PROTOCOL://HOST:PORT`; `PROTOCOL://HOST:PORT` alone is named after its
/// protocol, as Kafka names listeners by default.
pub(crate) fn parse_listener(spec: &str) -> anyhow::Result<ListenerSpec> {
    let (name, rest) = match spec.split_once('=') {
        Some((name, rest)) => (Some(name), rest),
        None => (None, spec),
    };
    let (protocol, addr) = rest.split_once("://").with_context(|| {
        format!("listener {spec:?}: expected NAME=PROTOCOL://HOST:PORT, e.g. EXTERNAL=SASL_SSL://0.0.0.0:9093")
    })?;
    let protocol = SecurityProtocol::from_name(protocol).with_context(|| {
        format!("listener {spec:?}: protocol {protocol:?} is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
    })?;
    let addr: SocketAddr = addr
        .parse()
        .with_context(|| format!("listener {spec:?}: {addr:?} is not an IP address and port"))?;
    let name = name.unwrap_or(protocol.name()).to_owned();
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        bail!("listener {spec:?}: the name must be letters, digits, '_' or '-'");
    }
    Ok(ListenerSpec {
        name,
        protocol,
        addr,
    })
}

/// Parses `NAME=HOST:PORT`.
pub(crate) fn parse_advertised(spec: &str) -> anyhow::Result<(String, String, u16)> {
    let parse = || {
        let (name, addr) = spec.split_once('=')?;
        let (host, port) = addr.rsplit_once(':')?;
        Some((
            name.to_owned(),
            host.trim_matches(['[', ']']).to_owned(),
            port.parse().ok()?,
        ))
    };
    parse().with_context(|| format!("advertised listener {spec:?}: expected NAME=HOST:PORT"))
}

/// The security settings all listeners share.
#[derive(Debug, Clone)]
pub(crate) struct Security {
    pub tls: Option<TlsSettings>,
    pub sasl_mechanisms: Vec<SaslMechanism>,
    pub allow_plain_without_tls: bool,
    pub allow_unauthenticated: bool,
}

/// A listener bound and ready to serve.
pub(crate) struct Bound {
    pub socket: TcpListener,
    pub config: ListenerConfig,
}

/// Binds every listener, after checking the whole set: names unique, TLS material for TLS
/// listeners, and protected mode. Also returns the TLS configurations, to reload on SIGHUP.
pub(crate) fn bind(
    specs: &[ListenerSpec],
    advertised: &[(String, String, u16)],
    security: &Security,
) -> anyhow::Result<(Vec<Bound>, Vec<Arc<TlsServer>>)> {
    for (i, spec) in specs.iter().enumerate() {
        if specs[..i].iter().any(|s| s.name == spec.name) {
            bail!("two listeners are named {}", spec.name);
        }
    }
    for (name, ..) in advertised {
        if !specs.iter().any(|s| &s.name == name) {
            bail!("--advertised-listener names {name}, which is not a listener");
        }
    }
    // SSL listeners ask for client certificates when told to; SASL_SSL listeners authenticate
    // with SASL and never ask (Kafka's per-listener `ssl.client.auth` set that way).
    let load = |protocol: SecurityProtocol| -> anyhow::Result<Option<Arc<TlsServer>>> {
        if !specs.iter().any(|s| s.protocol == protocol) {
            return Ok(None);
        }
        let Some(settings) = &security.tls else {
            bail!("an SSL or SASL_SSL listener needs --tls-cert and --tls-key");
        };
        let settings = TlsSettings {
            client_auth: settings.client_auth && protocol == SecurityProtocol::Ssl,
            ..settings.clone()
        };
        let server = TlsServer::load(settings).context("cannot load the TLS certificate")?;
        Ok(Some(Arc::new(server)))
    };
    let ssl = load(SecurityProtocol::Ssl)?;
    let sasl_ssl = load(SecurityProtocol::SaslSsl)?;
    let client_certificates = ssl
        .as_ref()
        .is_some_and(|t| t.requires_client_certificates());
    let mut bound = Vec::new();
    for spec in specs {
        let authenticates = spec.protocol.uses_sasl()
            || (spec.protocol == SecurityProtocol::Ssl && client_certificates);
        if !authenticates && !spec.addr.ip().is_loopback() && !security.allow_unauthenticated {
            bail!(
                "protected mode: listener {} ({} on {}) would let anyone who can reach it read \
                 and write every topic. Use SASL_SSL (or SSL with --tls-client-auth required), \
                 bind it to 127.0.0.1, or pass --allow-unauthenticated if the network is \
                 trusted",
                spec.name,
                spec.protocol,
                spec.addr
            );
        }
        let mut sasl_mechanisms = Vec::new();
        if spec.protocol.uses_sasl() {
            sasl_mechanisms = security.sasl_mechanisms.clone();
            if spec.protocol == SecurityProtocol::SaslPlaintext && !security.allow_plain_without_tls
            {
                // PLAIN sends the password itself: not over clear text unless asked for.
                sasl_mechanisms.retain(|m| *m != SaslMechanism::Plain);
            }
            if sasl_mechanisms.is_empty() {
                bail!("listener {} has no SASL mechanism to offer", spec.name);
            }
        }
        let socket = TcpListener::bind(spec.addr)
            .with_context(|| format!("cannot listen on {} (listener {})", spec.addr, spec.name))?;
        crate::listen_backlog::deepen(&socket)
            .with_context(|| format!("cannot listen on {} (listener {})", spec.addr, spec.name))?;
        let local = socket.local_addr()?;
        let (advertised_host, advertised_port) = advertised
            .iter()
            .find(|(name, ..)| *name == spec.name)
            .map(|(_, host, port)| (host.clone(), *port))
            .unwrap_or_else(|| (local.ip().to_string(), local.port()));
        bound.push(Bound {
            socket,
            config: ListenerConfig {
                name: spec.name.clone(),
                protocol: spec.protocol,
                advertised_host,
                advertised_port,
                sasl_mechanisms,
                tls: match spec.protocol {
                    SecurityProtocol::Ssl => ssl.clone(),
                    SecurityProtocol::SaslSsl => sasl_ssl.clone(),
                    _ => None,
                },
            },
        });
    }
    Ok((bound, ssl.into_iter().chain(sasl_ssl).collect()))
}

/// `--tls-*` flags as settings (`None` without a certificate).
pub(crate) fn tls_settings(
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    ca: Option<PathBuf>,
    client_auth_required: bool,
) -> anyhow::Result<Option<TlsSettings>> {
    match (cert, key) {
        (Some(cert), Some(key)) => {
            if client_auth_required && ca.is_none() {
                bail!("--tls-client-auth required needs --tls-ca");
            }
            Ok(Some(TlsSettings {
                cert,
                key,
                ca,
                client_auth: client_auth_required,
            }))
        }
        (None, None) => Ok(None),
        _ => bail!("--tls-cert and --tls-key go together"),
    }
}

/// Parses `--sasl-mechanisms`.
pub(crate) fn parse_mechanisms(names: &[String]) -> anyhow::Result<Vec<SaslMechanism>> {
    names
        .iter()
        .map(|n| {
            SaslMechanism::from_name(n.trim()).with_context(|| {
                format!("SASL mechanism {n:?} is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listener_specs() {
        let l = parse_listener("EXTERNAL=SASL_SSL://0.0.0.0:9093").unwrap();
        assert_eq!(l.name, "EXTERNAL");
        assert_eq!(l.protocol, SecurityProtocol::SaslSsl);
        assert_eq!(l.addr, "0.0.0.0:9093".parse().unwrap());
        assert_eq!(parse_listener("ssl://127.0.0.1:1").unwrap().name, "SSL");
        for bad in [
            "X=TLS://1.2.3.4:1",
            "X=SSL://localhost:1",
            "X=SSL:/1.2.3.4:1",
            "=SSL://1.2.3.4:1",
            "a b=SSL://1.2.3.4:1",
        ] {
            assert!(parse_listener(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_advertised("EXTERNAL=broker.example:9093").unwrap(),
            ("EXTERNAL".into(), "broker.example".into(), 9093)
        );
        assert!(parse_advertised("EXTERNAL=broker.example").is_err());
    }

    fn security() -> Security {
        Security {
            tls: None,
            sasl_mechanisms: vec![SaslMechanism::Plain],
            allow_plain_without_tls: false,
            allow_unauthenticated: false,
        }
    }

    #[test]
    fn protected_mode_refuses_open_listeners_off_loopback() {
        let open = [parse_listener("PLAINTEXT://0.0.0.0:0").unwrap()];
        let err = bind(&open, &[], &security()).err().unwrap().to_string();
        assert!(err.contains("--allow-unauthenticated"), "{err}");
        let allowed = Security {
            allow_unauthenticated: true,
            ..security()
        };
        assert!(bind(&open, &[], &allowed).is_ok());
        assert!(
            bind(
                &[parse_listener("PLAINTEXT://127.0.0.1:0").unwrap()],
                &[],
                &security()
            )
            .is_ok()
        );
    }

    #[test]
    fn plain_is_not_offered_in_clear_text_unless_allowed() {
        let sasl = [parse_listener("SASL_PLAINTEXT://127.0.0.1:0").unwrap()];
        let err = bind(&sasl, &[], &security()).err().unwrap().to_string();
        assert!(err.contains("no SASL mechanism"), "{err}");
        let allowed = Security {
            allow_plain_without_tls: true,
            ..security()
        };
        let (bound, _) = bind(&sasl, &[], &allowed).unwrap();
        assert_eq!(bound[0].config.sasl_mechanisms, vec![SaslMechanism::Plain]);
    }

    #[test]
    fn tls_listeners_need_a_certificate_and_names_are_unique() {
        let err = bind(
            &[parse_listener("SSL://127.0.0.1:0").unwrap()],
            &[],
            &security(),
        )
        .err()
        .unwrap()
        .to_string();
        assert!(err.contains("--tls-cert"), "{err}");
        let twice = [
            parse_listener("A=PLAINTEXT://127.0.0.1:0").unwrap(),
            parse_listener("A=PLAINTEXT://127.0.0.1:0").unwrap(),
        ];
        assert!(bind(&twice, &[], &security()).is_err());
    }
}
