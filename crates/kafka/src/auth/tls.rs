//! TLS for listeners on rustls (`ring` provider, TLS 1.2 and 1.3): the certificate chain and
//! key from PEM files, optional client certificates checked against a CA, and a reload that
//! swaps in new files for the connections that come after (SIGHUP in the daemon), so a
//! certificate is rotated without a restart. A client certificate's subject, written as RFC
//! 2253 as Kafka does (`CN=writer,O=acme`), becomes the connection's principal.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::RwLock;
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::{Error, Result};

/// Where a listener's TLS material lives and whether clients must present certificates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// PEM certificate chain, the server's own first.
    pub cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// PEM CA certificates client certificates must chain to (needed with `client_auth`).
    pub ca: Option<PathBuf>,
    /// Clients must present a certificate signed by `ca` (Kafka `ssl.client.auth=required`).
    pub client_auth: bool,
}

/// A listener's TLS configuration, reloadable while connections are served.
#[derive(Debug)]
pub struct TlsServer {
    settings: TlsSettings,
    config: RwLock<Arc<rustls::ServerConfig>>,
}

impl TlsServer {
    /// Loads the files `settings` names; any problem is an error naming the file.
    pub fn load(settings: TlsSettings) -> Result<TlsServer> {
        let config = build(&settings)?;
        Ok(TlsServer {
            settings,
            config: RwLock::new(Arc::new(config)),
        })
    }

    /// Re-reads the files: connections accepted from now on use them. On an error the old
    /// ones stay in force.
    pub fn reload(&self) -> Result<()> {
        let config = build(&self.settings)?;
        *self.config.write() = Arc::new(config);
        Ok(())
    }

    /// Whether clients must present a certificate.
    pub fn requires_client_certificates(&self) -> bool {
        self.settings.client_auth
    }

    pub(crate) fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.config.read().clone())
    }
}

fn tls_error(path: &Path, reason: impl std::fmt::Display) -> Error {
    Error::Tls {
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| tls_error(path, e))?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| tls_error(path, e))?;
    if certs.is_empty() {
        return Err(tls_error(path, "no PEM certificate in the file"));
    }
    Ok(certs)
}

fn build(settings: &TlsSettings) -> Result<rustls::ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = certificates(&settings.cert)?;
    let key =
        PrivateKeyDer::from_pem_file(&settings.key).map_err(|e| tls_error(&settings.key, e))?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| tls_error(&settings.cert, e))?;
    let builder = if settings.client_auth {
        let ca = settings.ca.as_deref().ok_or_else(|| {
            tls_error(
                &settings.cert,
                "client certificates are required but no CA is given",
            )
        })?;
        let mut roots = rustls::RootCertStore::empty();
        for cert in certificates(ca)? {
            roots.add(cert).map_err(|e| tls_error(ca, e))?;
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| tls_error(ca, e))?;
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    builder
        .with_single_cert(chain, key)
        .map_err(|e| tls_error(&settings.key, e))
}

/// The principal of a client certificate: `User:` and its subject in RFC 2253 form (most
/// specific attribute first, as Kafka's default principal builder writes it).
pub(crate) fn certificate_principal(cert: &CertificateDer<'_>) -> Option<String> {
    use x509_parser::prelude::{FromDer, X509Certificate};
    let (_, cert) = X509Certificate::from_der(cert.as_ref()).ok()?;
    let registry = x509_parser::objects::oid_registry();
    let mut parts = Vec::new();
    for rdn in cert
        .subject()
        .iter_rdn()
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
    {
        let attributes: Vec<String> = rdn
            .iter()
            .map(|attr| {
                let name = x509_parser::objects::oid2abbrev(attr.attr_type(), registry)
                    .map(str::to_owned)
                    .unwrap_or_else(|_| attr.attr_type().to_id_string());
                let value = attr.as_str().map(escape_rfc2253).unwrap_or_default();
                format!("{name}={value}")
            })
            .collect();
        parts.push(attributes.join("+"));
    }
    Some(format!("User:{}", parts.join(",")))
}

/// RFC 2253 escaping of an attribute value.
fn escape_rfc2253(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for (i, c) in value.chars().enumerate() {
        let edge =
            (i == 0 && (c == ' ' || c == '#')) || (i + 1 == value.chars().count() && c == ' ');
        if edge || matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_2253_escapes() {
        assert_eq!(escape_rfc2253("a,b"), "a\\,b");
        assert_eq!(escape_rfc2253(" #x "), "\\ #x\\ ");
        assert_eq!(escape_rfc2253("#x"), "\\#x");
        assert_eq!(escape_rfc2253("plain"), "plain");
    }

    #[test]
    fn principal_lists_the_subject_most_specific_first() {
        let mut params = rcgen::CertificateParams::new(vec!["client".into()]).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "acme, inc");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "writer");
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        assert_eq!(
            certificate_principal(cert.der()).as_deref(),
            Some("User:CN=writer,O=acme\\, inc")
        );
    }

    #[test]
    fn missing_and_empty_files_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        for (cert, key) in [
            (dir.path().join("absent.pem"), empty.clone()),
            (empty.clone(), empty.clone()),
        ] {
            let err = TlsServer::load(TlsSettings {
                cert: cert.clone(),
                key,
                ca: None,
                client_auth: false,
            })
            .unwrap_err()
            .to_string();
            assert!(err.contains(&cert.display().to_string()), "{err}");
        }
    }
}
