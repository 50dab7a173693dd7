//! Arbitrary bytes as the SASL messages a client sends before it is authenticated: SCRAM's
//! client-first and client-final messages (parsed, and run through a server exchange against a
//! known user), PLAIN's message, and a server-first message as logd's own client reads it. A
//! refusal or an answer, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use logd_kafka::auth::plain::parse_plain;
use logd_protocol::scram::{
    ScramClient, ScramCredential, ScramMechanism, ScramServer, parse_client_final,
    parse_client_first, unescape_saslname,
};

fuzz_target!(|data: &[u8]| {
    let _ = parse_client_first(data);
    let _ = parse_client_final(data);
    let _ = parse_plain(data);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = unescape_saslname(text);
    }
    // The first byte splits the rest into a client-first and a client-final message.
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let (first, last) = rest.split_at(usize::from(split).min(rest.len()));
    let credential = ScramCredential::from_salted_password(
        ScramMechanism::Sha256,
        &[7; 32],
        b"salt".to_vec(),
        4096,
    );
    let mut server = ScramServer::new(ScramMechanism::Sha256);
    if server
        .step(first, |_| Some(credential.clone()), |_| b"unknown".to_vec())
        .is_ok()
    {
        let _ = server.step(last, |_| None, |_| Vec::new());
    }
    let (mut client, _) = ScramClient::start(ScramMechanism::Sha512, "fuzz", b"pw");
    let _ = client.finish(data);
    let _ = client.verify(data);
});
