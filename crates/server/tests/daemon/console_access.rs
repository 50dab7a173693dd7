//! The console when logd authenticates its clients: a login with a logd user's password, a
//! session cookie that scripts cannot read and other sites cannot send, a CSRF token on every
//! change, and every call kept to the ACLs of the session's principal, against a real daemon
//! with a SASL listener and `--authorizer acl`.

use std::io::{Read, Write};

use serde_json::{Value, json};

use super::acls::Cluster;
use super::metrics::{get, scrape};

/// An HTTP answer: status line, head, and body as JSON.
struct Answer {
    status: String,
    head: String,
    body: Value,
}

/// A browser of the console: its session cookie and CSRF token once logged in.
#[derive(Default)]
struct Browser {
    cookie: Option<String>,
    csrf: Option<String>,
}

impl Browser {
    /// Sends `method path` with a JSON `body` (if any), the cookie, and `csrf` as the token.
    fn send_with(
        &self,
        http: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
        csrf: Option<&str>,
    ) -> Answer {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {http}\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        );
        if let Some(cookie) = &self.cookie {
            head.push_str(&format!("Cookie: theme=dark; {cookie}\r\n"));
        }
        if let Some(csrf) = csrf {
            head.push_str(&format!("X-CSRF-Token: {csrf}\r\n"));
        }
        let mut stream = std::net::TcpStream::connect(http).unwrap();
        write!(stream, "{head}\r\n{body}").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (head, body) = response.split_once("\r\n\r\n").unwrap();
        Answer {
            status: head.lines().next().unwrap().to_owned(),
            head: head.to_owned(),
            body: serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}")),
        }
    }

    /// As [`Browser::send_with`] with the session's own CSRF token.
    fn send(&self, http: &str, method: &str, path: &str, body: Option<Value>) -> Answer {
        self.send_with(http, method, path, body, self.csrf.as_deref())
    }

    fn get(&self, http: &str, path: &str) -> Answer {
        self.send(http, "GET", path, None)
    }

    /// Logs in as `user` with `password`, keeping the cookie and token on success.
    fn login(&mut self, http: &str, user: &str, password: &str) -> Answer {
        let answer = self.send_with(
            http,
            "POST",
            "/api/v1/login",
            Some(json!({ "user": user, "password": password })),
            None,
        );
        if answer.status.ends_with("200 OK") {
            let cookie = answer
                .head
                .lines()
                .find_map(|l| l.strip_prefix("set-cookie: "))
                .expect("a session cookie");
            self.cookie = Some(cookie.split(';').next().unwrap().to_owned());
            self.csrf = answer.body["csrf_token"].as_str().map(str::to_owned);
        }
        answer
    }
}

fn topic_names(answer: &Answer) -> Vec<String> {
    answer.body["topics"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", answer.body))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn with_authentication_the_console_asks_for_a_login_and_keeps_to_the_acls() {
    let cluster = Cluster::start();
    let http = cluster.daemon().metrics.clone().expect("HTTP listener");
    let anonymous = Browser::default();

    // Nothing without a session but the login; scrapers still get /metrics and /health.
    for path in ["/api/v1/topics", "/api/v1/session", "/api/v1/groups"] {
        let answer = anonymous.get(&http, path);
        assert_eq!(answer.status, "HTTP/1.1 401 Unauthorized", "{path}");
        assert_eq!(answer.body["error"], "log in first");
    }
    assert_eq!(get(&http, "/health").0, "HTTP/1.1 200 OK");
    assert_eq!(get(&http, "/metrics").0, "HTTP/1.1 200 OK");

    // A wrong password and an unknown user get the same answer.
    let mut alice = Browser::default();
    let wrong = alice.login(&http, "alice", "not-her-password");
    let unknown = alice.login(&http, "mallory", "mallory-pw");
    for refused in [&wrong, &unknown] {
        assert_eq!(refused.status, "HTTP/1.1 401 Unauthorized");
        assert_eq!(
            refused.body,
            json!({ "error": "wrong user name or password" })
        );
    }
    assert!(alice.cookie.is_none());

    // The super user logs in: the cookie is HttpOnly and SameSite=Strict.
    let mut admin = Browser::default();
    let logged_in = admin.login(&http, "admin", "admin-pw");
    assert_eq!(logged_in.status, "HTTP/1.1 200 OK", "{}", logged_in.body);
    assert_eq!(logged_in.body["principal"], "User:admin");
    let set_cookie = logged_in
        .head
        .lines()
        .find(|l| l.starts_with("set-cookie: logd_session="))
        .unwrap_or_else(|| panic!("{}", logged_in.head));
    assert!(
        set_cookie.contains("; HttpOnly") && set_cookie.contains("; SameSite=Strict"),
        "{set_cookie}"
    );
    let session = admin.get(&http, "/api/v1/session");
    assert_eq!(session.body["principal"], "User:admin");
    assert_eq!(session.body["login_required"], true);
    assert_eq!(session.body["csrf_token"], logged_in.body["csrf_token"]);

    // A change without the session's CSRF token, or with another, changes nothing.
    let create = |name: &str| Some(json!({ "name": name }));
    for token in [None, Some("0".repeat(64))] {
        let refused = admin.send_with(
            &http,
            "POST",
            "/api/v1/topics",
            create("orders"),
            token.as_deref(),
        );
        assert_eq!(refused.status, "HTTP/1.1 403 Forbidden");
        assert!(
            refused.body["error"].as_str().unwrap().contains("CSRF"),
            "{}",
            refused.body
        );
    }
    assert!(!topic_names(&admin.get(&http, "/api/v1/topics")).contains(&"orders".into()));
    for name in ["orders", "secret"] {
        let created = admin.send(&http, "POST", "/api/v1/topics", create(name));
        assert_eq!(created.status, "HTTP/1.1 201 Created", "{}", created.body);
    }
    let produced = admin.send(
        &http,
        "POST",
        "/api/v1/topics/secret/messages",
        Some(json!({ "key": "k", "value": "classified" })),
    );
    assert_eq!(produced.status, "HTTP/1.1 201 Created", "{}", produced.body);

    // Alice may read orders and nothing else.
    let (ok, out, err) = cluster.logd_as(
        "admin",
        &[
            "acls",
            "add",
            "--topic",
            "orders",
            "--operation",
            "READ",
            "--allow-principal",
            "User:alice",
        ],
    );
    assert!(ok, "{out}{err}");
    let logged_in = alice.login(&http, "alice", "alice-pw");
    assert_eq!(logged_in.status, "HTTP/1.1 200 OK", "{}", logged_in.body);
    assert_eq!(topic_names(&alice.get(&http, "/api/v1/topics")), ["orders"]);
    assert_eq!(
        alice.get(&http, "/api/v1/topics/orders").status,
        "HTTP/1.1 200 OK"
    );
    assert_eq!(
        alice.get(&http, "/api/v1/topics/orders/messages").status,
        "HTTP/1.1 200 OK"
    );
    // The console's refusals are counted as the Kafka side's are (one guard decides both).
    let denied = |op: &str, rt: &str| {
        scrape(&http)
            .get(&format!(
                r#"logd_authorization_denied_total{{operation="{op}",resource_type="{rt}"}}"#
            ))
            .copied()
            .unwrap_or(0.0)
    };
    let (described_before, read_before, cluster_before) = (
        denied("DESCRIBE", "TOPIC"),
        denied("READ", "TOPIC"),
        denied("DESCRIBE", "CLUSTER"),
    );
    for path in [
        "/api/v1/topics/secret",
        "/api/v1/topics/secret/messages",
        "/api/v1/topics/secret/search?q=classified",
        "/api/v1/broker",
    ] {
        let refused = alice.get(&http, path);
        assert_eq!(
            refused.status, "HTTP/1.1 403 Forbidden",
            "{path}: {}",
            refused.body
        );
        assert!(
            refused.body["error"]
                .as_str()
                .unwrap()
                .starts_with("User:alice may not "),
            "{}",
            refused.body
        );
    }
    let refused = alice.get(&http, "/api/v1/topics/secret/messages");
    assert_eq!(
        refused.body["error"], "User:alice may not READ TOPIC secret",
        "nothing of the record is shown"
    );
    assert_eq!(denied("DESCRIBE", "TOPIC"), described_before + 1.0);
    assert_eq!(denied("READ", "TOPIC"), read_before + 3.0);
    assert_eq!(denied("DESCRIBE", "CLUSTER"), cluster_before + 1.0);
    // A group on secret: admin sees it in the list, the group view and the charts; alice in
    // none of them.
    let reset = admin.send(
        &http,
        "POST",
        "/api/v1/groups/payroll/reset-offsets",
        Some(json!({ "to": "earliest", "topics": ["secret"], "execute": true })),
    );
    assert_eq!(reset.status, "HTTP/1.1 200 OK", "{}", reset.body);
    let group_names = |browser: &Browser| -> Vec<String> {
        browser.get(&http, "/api/v1/groups").body["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["group"].as_str().unwrap().to_owned())
            .collect()
    };
    let charted = |browser: &Browser| -> bool {
        let history = browser.get(&http, "/api/v1/history").body;
        let last = history["samples"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        last["groups"].get("payroll").is_some()
    };
    assert_eq!(group_names(&admin), ["payroll"]);
    assert!(charted(&admin));
    assert_eq!(group_names(&alice), Vec::<String>::new());
    assert!(!charted(&alice));
    assert_eq!(
        alice.get(&http, "/api/v1/groups/payroll").status,
        "HTTP/1.1 403 Forbidden"
    );

    // Reading is not writing, creating or deleting.
    let attempts = [
        (
            "POST",
            "/api/v1/topics/orders/messages",
            json!({ "value": "v" }),
        ),
        ("POST", "/api/v1/topics", json!({ "name": "hers" })),
        (
            "DELETE",
            "/api/v1/topics/orders",
            json!({ "confirm": "orders" }),
        ),
        (
            "POST",
            "/api/v1/topics/orders/partitions",
            json!({ "count": 4 }),
        ),
    ];
    for (method, path, body) in attempts {
        let refused = alice.send(&http, method, path, Some(body));
        assert_eq!(
            refused.status, "HTTP/1.1 403 Forbidden",
            "{method} {path}: {}",
            refused.body
        );
    }
    let orders = admin.get(&http, "/api/v1/topics/orders");
    assert_eq!(orders.body["partitions"].as_array().unwrap().len(), 1);
    assert_eq!(orders.body["partitions"][0]["high_watermark"], 0);

    // A replay writes only where its caller may write: alice may read a dead-letter topic
    // whose letter came from secret, but not put it back there.
    assert_eq!(
        admin
            .send(&http, "POST", "/api/v1/topics", create("orders.dlq"))
            .status,
        "HTTP/1.1 201 Created"
    );
    let letter = json!({
        "value": "failed",
        "headers": [
            { "key": "logd.dlq.original.topic", "value": "secret" },
            { "key": "logd.dlq.original.partition", "value": "0" },
            { "key": "logd.dlq.original.offset", "value": "0" },
            { "key": "logd.dlq.error.class", "value": "Boom" },
            { "key": "logd.dlq.reason", "value": "permanent" },
        ],
    });
    let produced = admin.send(
        &http,
        "POST",
        "/api/v1/topics/orders.dlq/messages",
        Some(letter),
    );
    assert_eq!(produced.status, "HTTP/1.1 201 Created", "{}", produced.body);
    let (ok, out, err) = cluster.logd_as(
        "admin",
        &[
            "acls",
            "add",
            "--topic",
            "orders.dlq",
            "--operation",
            "READ",
            "--allow-principal",
            "User:alice",
        ],
    );
    assert!(ok, "{out}{err}");
    let planned = alice.send(
        &http,
        "POST",
        "/api/v1/dead-letters/orders.dlq/replay",
        Some(json!({ "dry_run": true })),
    );
    assert_eq!(planned.status, "HTTP/1.1 200 OK", "{}", planned.body);
    assert_eq!(planned.body["replays"][0]["target"], "secret");
    let refused = alice.send(
        &http,
        "POST",
        "/api/v1/dead-letters/orders.dlq/replay",
        Some(json!({})),
    );
    assert_eq!(refused.status, "HTTP/1.1 403 Forbidden", "{}", refused.body);
    assert_eq!(
        refused.body["error"],
        "User:alice may not WRITE TOPIC secret"
    );
    let secret = admin.get(&http, "/api/v1/topics/secret");
    assert_eq!(
        secret.body["partitions"][0]["high_watermark"], 1,
        "only admin's record"
    );
    let dead_letters = alice.get(&http, "/api/v1/dead-letters");
    assert_eq!(
        dead_letters.body["topics"][0]["pending"], 1,
        "still pending"
    );

    // Logging out ends the session; the old cookie gets 401.
    let out = alice.send(&http, "POST", "/api/v1/logout", Some(json!({})));
    assert_eq!(out.status, "HTTP/1.1 200 OK");
    assert_eq!(
        alice.get(&http, "/api/v1/topics").status,
        "HTTP/1.1 401 Unauthorized"
    );
    assert_eq!(admin.get(&http, "/api/v1/topics").status, "HTTP/1.1 200 OK");
}

#[test]
fn with_a_login_the_console_goes_off_loopback_only_when_clear_text_passwords_are_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let serve = |extra: &[&str]| {
        let mut args = vec![
            "serve",
            "--listener",
            "SASL=SASL_PLAINTEXT://127.0.0.1:0",
            "--http-listen",
            "0.0.0.0:0",
            "--data-dir",
            data,
        ];
        args.extend(extra);
        super::logd(&args, "")
    };
    let (ok, _, stderr) = serve(&[]);
    assert!(!ok);
    assert!(
        stderr.contains("clear text") && stderr.contains("--allow-plain-without-tls"),
        "{stderr}"
    );
    let daemon = super::Daemon::start(
        dir.path(),
        &[
            "--listener",
            "SASL=SASL_PLAINTEXT://127.0.0.1:0",
            "--http-listen",
            "0.0.0.0:0",
            "--allow-plain-without-tls",
        ],
    );
    let http = daemon.metrics.clone().unwrap();
    let answer = Browser::default().get(&http, "/api/v1/topics");
    assert_eq!(answer.status, "HTTP/1.1 401 Unauthorized");
}
