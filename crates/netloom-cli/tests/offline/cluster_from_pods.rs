//! `netloom cluster from-pods` as a user runs it: kubectl's JSON of netloom's DaemonSet (a
//! recorded list: three nodes, one pod Pending, another app's pod beside them) on standard input
//! or named, the cluster file it writes read back as `run --cluster` reads it, and its errors.

use crate::common;
use crate::common::{repo_file, run, TempDir};
use netloom_live::cluster::Cluster;
use std::io::Write;
use std::process::{Command, Stdio};

fn fixture() -> std::path::PathBuf {
    repo_file("crates/netloom-live/tests/data/pods-daemonset.json")
}

#[test]
fn kubectl_s_pod_list_on_standard_input_becomes_a_cluster_file_of_the_running_pods() {
    let json = std::fs::read(fixture()).unwrap();
    let mut child = Command::new(common::bin())
        .args(["cluster", "from-pods"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&json).unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    assert!(out.status.success(), "{stderr}");
    let cluster = Cluster::parse(&stdout, "stdout").unwrap();
    let machines: Vec<(&str, String, String)> = cluster
        .machines
        .iter()
        .map(|m| (m.name.as_str(), m.address.to_string(), m.launcher.join(" ")))
        .collect();
    assert_eq!(
        machines,
        [
            (
                "k1",
                "172.18.0.3".into(),
                "kubectl exec -i -n netloom netloom-5xq7d -c netloom --".into()
            ),
            (
                "k2",
                "172.18.0.4".into(),
                "kubectl exec -i -n netloom netloom-k2m9w -c netloom --".into()
            ),
        ]
    );
    assert_eq!(
        stderr,
        "netloom: machine k1: pod netloom/netloom-5xq7d on node kind-worker at 172.18.0.3\n\
         netloom: machine k2: pod netloom/netloom-k2m9w on node kind-worker2 at 172.18.0.4\n\
         netloom: left out (not running): netloom-tz4hb (Pending)\n"
    );
}

#[test]
fn a_named_list_with_kubectl_s_context_and_a_port_goes_to_a_file() {
    let dir = TempDir::new("from-pods");
    let file = dir.path().join("cluster.toml");
    let fixture = fixture();
    let out = run(&[
        "cluster",
        "from-pods",
        fixture.to_str().unwrap(),
        "-n",
        "netloom",
        "--context",
        "kind-kind",
        "--netloom",
        "/usr/bin/netloom",
        "--port",
        "7081",
        "-o",
        file.to_str().unwrap(),
    ])
    .ok();
    assert_eq!(out.stdout, "");
    let cluster = Cluster::read(&file).unwrap();
    assert_eq!(cluster.machines.len(), 2);
    for m in &cluster.machines {
        assert_eq!(
            m.launcher[..4],
            ["kubectl", "--context", "kind-kind", "exec"]
        );
        assert_eq!((m.netloom.as_str(), m.port), ("/usr/bin/netloom", 7081));
    }
}

#[test]
fn what_cannot_make_a_cluster_is_refused_with_exit_2_saying_why() {
    let fixture = fixture();
    let path = fixture.to_str().unwrap();
    let out = run(&["cluster", "from-pods", path, "-l", "app=iperf"]).expect_code(2);
    assert_eq!(out.stderr, format!("netloom: {path}: only one pod with labels app=iperf is running (iperf-server on node kind-worker); a cluster has at least two machines (on one node, run `netloom run` in the pod without --cluster)\n"));
    let dir = TempDir::new("from-pods");
    let list: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&fixture).unwrap()).unwrap();
    let pod = dir.write("pod.json", &list["items"][0].to_string());
    let out = run(&["cluster", "from-pods", pod.to_str().unwrap()]).expect_code(2);
    assert!(
        out.stderr
            .ends_with("pod.json: the input is a Pod, not a list of pods; give the output of `kubectl get pods -o json` (a List or PodList)\n"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stdout, "");
}

#[test]
fn input_past_the_json_limit_is_refused_not_read_whole() {
    let out = run(&["cluster", "from-pods", "/dev/zero"]).expect_code(2);
    assert!(
        out.stderr.starts_with("netloom: /dev/zero: ") && out.stderr.contains("device"),
        "{}",
        out.stderr
    );
    let mut child = Command::new(common::bin())
        .args(["cluster", "from-pods"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // 65 MiB of blanks (JSON allows them): more than the limit; the writer stops when refused.
    let blanks = vec![b' '; 1 << 20];
    let writer = std::thread::spawn(move || {
        for _ in 0..65 {
            if stdin.write_all(&blanks).is_err() {
                break;
            }
        }
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "netloom: standard input: more than 64 MiB, the most read of a JSON input file\n"
    );
}
