//! What the web view's modules (web.rs, web_zoo.rs) share: a free port for the server,
//! headless Chromium loading a page, and the attributes of the DOM it dumped.

use std::process::{Command, Stdio};
use std::time::Duration;

/// A port nothing listens on now (the system's pick for a socket just closed).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Loads `url` in headless Chromium (no sandbox, no GPU: the tests run as root on a machine
/// without a display), lets its scripts run for `budget` of virtual time, and returns what
/// Chromium printed; `flags` say what to print (`--dump-dom`, `--screenshot=FILE`) and anything
/// else the page needs, such as a window size. Fails the test if Chromium fails.
pub fn chromium(url: &str, budget: Duration, flags: &[&str]) -> String {
    let out = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .arg(format!("--virtual-time-budget={}", budget.as_millis()))
        .args(flags)
        .arg(url)
        .stderr(Stdio::null())
        .output()
        .expect("chromium runs");
    assert!(out.status.success(), "chromium failed on {url}");
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// The values of attribute `attr` on every element that has it.
pub fn attributes(dom: &str, attr: &str) -> Vec<String> {
    dom.split(&format!(" {attr}=\""))
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().to_string())
        .collect()
}
