//! SCRAM against RFC 7677's vectors, both ends against each other, and the parsers' refusals.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;

use super::mechanism::*;
use super::messages::*;
use super::{ScramClient, ScramServer, ServerStep};

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
