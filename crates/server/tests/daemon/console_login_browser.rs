//! The console's login in a real browser (headless chromium through Playwright), against a
//! daemon with a SASL listener and `--authorizer acl`: the login form in place of the console,
//! a wrong password refused, then a user who sees only the topic her ACLs let her describe and
//! is refused a change, the session's cookie out of the page's reach, and logging out. The login
//! page's screenshots at a laptop's and a phone's width go to `target/console-screenshots/`.

use std::path::Path;

use super::acls::Cluster;
use super::{python_script, system_chromium};

/// Drives the console at `sys.argv[1]` with the browser at `sys.argv[2]`, saving screenshots
/// in `sys.argv[3]`; prints one JSON object with what it saw.
const LOGIN: &str = r##"
import json, sys
from playwright.sync_api import sync_playwright

url, chromium, shots = sys.argv[1], sys.argv[2], sys.argv[3]
seen = {}
with sync_playwright() as p:
    browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(url)
    page.wait_for_selector("#login-form", state="visible")
    seen["console_hidden"] = page.is_hidden("#console")
    page.screenshot(path=f"{shots}/login-1280.png", full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(200)
    seen["phone_scroll_width"] = page.evaluate("document.documentElement.scrollWidth")
    page.screenshot(path=f"{shots}/login-390.png", full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})

    page.fill("#login-user", "alice")
    page.fill("#login-password", "not-her-password")
    page.click("#login-form button")
    page.wait_for_selector("#login-error", state="visible")
    seen["wrong_password"] = page.inner_text("#login-error")

    page.fill("#login-password", "alice-pw")
    page.click("#login-form button")
    page.wait_for_selector("#topics button:text-is('orders')")
    seen["who"] = page.inner_text("#who")
    seen["topics"] = page.locator("#topics button").all_inner_texts()
    seen["cookie_in_page"] = page.evaluate("document.cookie")

    page.fill("#new-name", "hers")
    page.click("#create-form button")
    page.wait_for_selector("#error", state="visible")
    seen["create_refused"] = page.inner_text("#error")

    page.click("#logout")
    page.wait_for_selector("#login-form", state="visible")
    page.reload()
    page.wait_for_selector("#login-form", state="visible")
    seen["after_logout_console_hidden"] = page.is_hidden("#console")
    browser.close()
print(json.dumps(seen))
"##;

#[test]
fn the_console_asks_for_a_login_in_a_real_browser() {
    let Some(chromium) = system_chromium() else {
        return;
    };
    let cluster = Cluster::start();
    let http = cluster.daemon().metrics.clone().unwrap();
    for topic in ["orders", "secret"] {
        let (ok, out, err) = cluster.logd_as("admin", &["topics", "create", topic]);
        assert!(ok, "{out}{err}");
    }
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

    let shots = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("console-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let url = format!("http://{http}/");
    let out = python_script(
        LOGIN,
        &[&url, chromium.to_str().unwrap(), shots.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "the browser script failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["console_hidden"], true, "{seen}");
    assert_eq!(seen["wrong_password"], "wrong user name or password");
    assert_eq!(seen["who"], "User:alice");
    assert_eq!(seen["topics"], serde_json::json!(["orders"]), "not secret");
    assert_eq!(seen["cookie_in_page"], "", "the session cookie is HttpOnly");
    assert!(
        seen["create_refused"]
            .as_str()
            .unwrap()
            .contains("User:alice may not CREATE TOPIC hers"),
        "{seen}"
    );
    assert_eq!(seen["after_logout_console_hidden"], true);
    assert!(
        seen["phone_scroll_width"].as_i64().unwrap() <= 390,
        "{seen}"
    );
    for shot in ["login-1280", "login-390"] {
        let size = std::fs::metadata(shots.join(format!("{shot}.png")))
            .unwrap()
            .len();
        assert!(size > 1000, "{shot}.png is {size} bytes");
    }
}
