//! What streams out of a live run (root, namespaces, TUN): `netloom events` prints the run's
//! events as JSON lines in the order they happen and exits 0 when the run stops; `netloom
//! capture` writes pcapng that tshark reads, live through a pipe too, with the emulated times
//! (a packet leaves a pipe exactly its delay and serialization after it entered) and the packets
//! the pipe dropped with their cause; a client killed mid-stream leaves the run as it was; bad
//! captures are one clear error. Each test skips, saying why, where it cannot run.

use crate::live_common::{two_hosts, Lab};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
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
    // Accuracy alarms aside: a late release on a busy machine raises one between any two.
    let seen: Vec<serde_json::Value> = std::iter::repeat_with(|| next(&rx))
        .filter(|e| e["type"] != "accuracy-alarm")
        .take(5)
        .collect();
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

/// Starts `netloom capture ARGS --name NAME` against the lab.
fn capture(lab: &Lab, args: &[&str], stdout: Stdio) -> Child {
    lab.cmd()
        .arg("capture")
        .args(args)
        .args(["--name", &lab.name])
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until the lab reports `n` captures running.
fn wait_captures(lab: &Lab, n: usize) {
    let give_up = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let out = lab.control(&["stats", "--json"]);
        let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let running = stats["captures"].as_array().map_or(0, Vec::len);
        if running == n {
            return;
        }
        assert!(
            std::time::Instant::now() < give_up,
            "{running} captures, not {n}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A captured packet as tshark shows it: interface, time (ns since 1970), comment, ICMP type
/// and sequence number.
#[derive(Debug, PartialEq)]
struct Seen {
    interface: String,
    at_ns: u128,
    comment: String,
    icmp: String,
    seq: String,
}

/// What tshark reads from `tshark_stdout`, a `-T fields` listing of those fields.
fn parse(listing: &[u8]) -> Vec<Seen> {
    String::from_utf8_lossy(listing)
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            let (s, ns) = f[1].split_once('.').expect("seconds.nanoseconds");
            assert_eq!(ns.len(), 9, "nanosecond timestamps: {line}");
            Seen {
                interface: f[0].into(),
                at_ns: s.parse::<u128>().unwrap() * 1_000_000_000 + ns.parse::<u128>().unwrap(),
                comment: f[2].into(),
                icmp: f[3].into(),
                seq: f[4].into(),
            }
        })
        .collect()
}

const FIELDS: [&str; 12] = [
    "-T",
    "fields",
    "-e",
    "frame.interface_name",
    "-e",
    "frame.time_epoch",
    "-e",
    "frame.comment",
    "-e",
    "icmp.type",
    "-e",
    "icmp.seq",
];

fn tshark(file: &Path) -> Vec<Seen> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(FIELDS)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let malformed = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(["-Y", "_ws.malformed || _ws.expert.severity >= error"])
        .output()
        .unwrap();
    assert!(
        malformed.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&malformed.stdout)
    );
    parse(&out.stdout)
}

#[test]
fn captures_are_pcapng_with_emulated_times_and_the_pipes_drops() {
    require_live!("ping", "tshark");
    let mut lab = Lab::new("scp", &two_hosts("5ms"));
    lab.start(&[]);
    let enter = lab.dir.join("enter.pcapng");
    let enter_path = enter.to_str().unwrap();
    // Entries into h1 -> h2 to a file; exits of both directions through a pipe into tshark.
    let mut entering = capture(
        &lab,
        &[
            "h1",
            "h2",
            "--direction",
            "a-b",
            "--when",
            "enter",
            "-w",
            enter_path,
        ],
        Stdio::null(),
    );
    let mut live = capture(&lab, &["h1", "h2", "-w", "-"], Stdio::piped());
    let reader = Command::new("tshark")
        .args(["-l", "-r", "-"])
        .args(FIELDS)
        .stdin(live.stdout.take().unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // One more, killed: the run and the other captures go on as before.
    let mut killed = capture(&lab, &["h2", "-w", "-"], Stdio::null());
    wait_captures(&lab, 3);
    let table = String::from_utf8(lab.control(&["stats"]).stdout).unwrap();
    assert!(table.contains("capture of h1 h2 (a-b): "), "{table}");
    killed.kill().unwrap();
    killed.wait().unwrap();

    let ping = |count: &str| {
        lab.exec(
            "h1",
            &["ping", "-4", "-c", count, "-i", "0.2", "-W", "1", "h2"],
        )
    };
    assert!(ping("3").status.success());
    lab.control(&["link", "set", "h1", "h2", "--direction", "a-b", "loss=100%"]);
    assert!(!ping("2").status.success(), "every request lost");
    let report = lab.stop();
    assert_eq!(report["accuracy"]["physical_drops"], 0);

    for child in [&mut entering, &mut live] {
        let status = child.wait().unwrap();
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        assert!(status.success(), "{err}");
        assert!(err.contains("the capture lost 0"), "{err}");
    }
    let exits = parse(&reader.wait_with_output().unwrap().stdout);
    let entries = tshark(&enter);
    // Requests: 3 answered, 2 lost; replies: 3.
    let requests = |seen: &[Seen]| -> Vec<(String, u128, String)> {
        seen.iter()
            .filter(|s| s.icmp == "8")
            .map(|s| (s.seq.clone(), s.at_ns, s.comment.clone()))
            .collect()
    };
    let (entered, left) = (requests(&entries), requests(&exits));
    assert_eq!(entered.len(), 5, "{entries:?}");
    assert_eq!(left.len(), 5, "{exits:?}");
    assert!(exits
        .iter()
        .all(|s| s.interface == "h1->h2" || s.interface == "h2->h1"));
    assert_eq!(exits.iter().filter(|s| s.icmp == "0").count(), 3);
    assert!(exits
        .iter()
        .filter(|s| s.icmp == "0")
        .all(|s| s.interface == "h2->h1"));
    // A request left the pipe its delay and its serialization (84 bytes at 1 Gbit/s) after
    // it entered, to the nanosecond: the file holds the emulated times, not when it was seen.
    for ((seq, t_in, _), (seq_out, t_out, _)) in entered[..3].iter().zip(&left[..3]) {
        assert_eq!(seq, seq_out);
        assert_eq!(t_out - t_in, 5_000_000 + 672, "request {seq}");
    }
    // The lost requests are in both files, once, at the instant of the drop, with its cause.
    for (seen, _) in [(&entered, "enter"), (&left, "exit")] {
        for (_, _, comment) in &seen[3..] {
            assert_eq!(comment, "dropped: loss");
        }
        assert!(seen[..3].iter().all(|(_, _, c)| c.is_empty()));
    }
    assert_eq!(entered[3].1, left[3].1, "the same instant in both captures");
}

#[test]
fn a_bad_capture_is_one_clear_error_and_leaves_no_file() {
    require_live!("true");
    let mut lab = Lab::new("scb", &two_hosts("1ms"));
    lab.start(&[]);
    let file = lab.dir.join("x.pcapng");
    let path = file.to_str().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &["h9", "-w", path],
            "no node is named \"h9\" (did you mean \"h1\"?)",
        ),
        (&["h1", "h3", "-w", path], "no node is named \"h3\""),
        (
            &["h1", "h2", "-w", "/nonexistent/x.pcapng"],
            "-w /nonexistent/x.pcapng",
        ),
        (
            &["h1", "--direction", "a-b", "-w", path],
            "--direction is for a link",
        ),
    ];
    for (args, error) in cases {
        let out = lab
            .cmd()
            .arg("capture")
            .args(args)
            .args(["--name", &lab.name])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(error), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!file.exists(), "{args:?} left a file");
    }
    let out = lab
        .cmd()
        .args(["capture", "h1", "h2", "-w", path, "--name", "nosuch"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no experiment named nosuch"));
    assert!(!file.exists());
    let report = lab.stop();
    assert_eq!(report["accuracy"]["physical_drops"], 0, "the run untouched");
}
