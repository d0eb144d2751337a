//! What streams out of a live run (root, namespaces, TUN): `netloom events` prints the run's
//! events as JSON lines in the order they happen and exits 0 when the run stops; a client
//! killed mid-stream leaves the run as it was. Each test skips, saying why, where it cannot run.

#[macro_use]
mod live_common;

use live_common::{two_hosts, Lab};
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

/// Starts `netloom events` against the lab; its lines arrive on the receiver as printed.
fn events(lab: &Lab) -> (Child, Receiver<serde_json::Value>) {
    let mut child = lab
        .cmd()
        .args(["events", "--name", &lab.name])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let event = serde_json::from_str(&line).expect("each line is one JSON object");
            if tx.send(event).is_err() {
                return;
            }
        }
    });
    (child, rx)
}

fn next(rx: &Receiver<serde_json::Value>) -> serde_json::Value {
    rx.recv_timeout(Duration::from_secs(10))
        .expect("an event within 10 s")
}

#[test]
fn events_arrive_in_order_and_the_stream_ends_with_the_run() {
    require_live!("true");
    let mut lab = Lab::new("sev", &two_hosts("1ms"));
    lab.start(&[]);
    // A client killed mid-stream changes nothing for the run or the other clients.
    let (mut killed, _) = events(&lab);
    let (mut client, rx) = events(&lab);
    let started = next(&rx);
    assert_eq!(started["type"], "started", "{started}");
    assert_eq!(started["hosts"], 2);
    killed.kill().unwrap();
    killed.wait().unwrap();

    lab.control(&["link", "set", "h1", "h2", "delay=2ms"]);
    lab.control(&["link", "down", "h1", "h2"]);
    lab.control(&["link", "up", "h1", "h2"]);
    let seen: Vec<serde_json::Value> = (0..5).map(|_| next(&rx)).collect();
    let kinds: Vec<&str> = seen.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "link-changed",
            "link-changed",
            "routes-recomputed",
            "link-changed",
            "routes-recomputed"
        ],
        "{seen:?}"
    );
    assert_eq!(seen[0]["set"]["delay"], "2ms");
    assert_eq!(seen[1]["up"], false);
    assert_eq!(seen[2]["up"], false);
    assert_eq!(seen[4]["link"], "h1-h2");
    let instants: Vec<u64> = std::iter::once(&started)
        .chain(&seen)
        .map(|e| e["at_ns"].as_u64().expect("every event has at_ns"))
        .collect();
    assert!(instants.is_sorted(), "run-relative, in order: {instants:?}");
    assert!(
        lab.exec("h1", &["true"]).status.success(),
        "the run goes on"
    );

    lab.stop();
    let mut last = next(&rx);
    while last["type"] == "accuracy-alarm" {
        last = next(&rx);
    }
    assert_eq!(last["type"], "stopped", "{last}");
    assert!(last["reason"].is_string(), "{last}");
    let status = client.wait().unwrap();
    assert!(status.success(), "events exits 0 when the run stops");
}

#[test]
fn events_of_a_run_that_does_not_exist_is_one_clear_error() {
    let lab = Lab::new("sen", &two_hosts("1ms"));
    let out = lab
        .cmd()
        .args(["events", "--name", "nosuch"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no experiment named nosuch"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
