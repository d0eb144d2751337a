//! What a live host starts with and may change, as on any machine: the MTU of its `nl0` (from its
//! links, or `run --mtu`), its TCP congestion control (cubic or `run --tcp-cc`, whatever the
//! machine runs) and per-namespace sysctls set from inside it. Each test skips, saying why, where
//! it cannot run (not root, no TUN, no sysctl).

use crate::live_common::Lab;

/// h1 - r1 - h2 at 1 Gbit/s and 1 ms; the r1-h2 link carries `h2_link` (extra keys).
fn chain(h2_link: &str) -> String {
    format!(
        "hosts = [\"h1\", \"h2\"]\nrouters = [\"r1\"]\n[defaults]\nbw = \"1Gbit\"\ndelay = \"1ms\"\n\
         [[link]]\na = \"h1\"\nb = \"r1\"\n[[link]]\na = \"r1\"\nb = \"h2\"\n{h2_link}\n"
    )
}

/// What `argv` printed in `host`, trimmed; panics with its error output if it failed.
fn output(lab: &Lab, host: &str, argv: &[&str]) -> String {
    let out = lab.exec(host, argv);
    assert!(
        out.status.success(),
        "{argv:?} in {host}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn mtu(lab: &Lab, host: &str) -> String {
    output(lab, host, &["cat", "/sys/class/net/nl0/mtu"])
}

#[test]
fn a_host_s_mtu_follows_the_link_it_sends_on_unless_run_sets_one() {
    require_live!("cat");
    // h2 sends on a 1400-byte direction; the other direction and h1's link keep 1500.
    let mut lab = Lab::new("mtu", &chain("b_to_a = { mtu = 1400 }"));
    lab.start(&[]);
    assert_eq!(
        (mtu(&lab, "h1"), mtu(&lab, "h2")),
        ("1500".into(), "1400".into())
    );
    // `link set` takes an MTU with the file's checks; it changes the link, not the hosts' nl0.
    lab.control(&["link", "set", "r1", "h2", "mtu=1280"]);
    assert_eq!(mtu(&lab, "h2"), "1400");
    let out = lab
        .cmd()
        .args(["link", "set", "r1", "h2", "mtu=1000", "--name", &lab.name])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("mtu 1000 is too small"), "{err}");
    lab.stop();
    lab.start(&["--mtu", "9000"]);
    assert_eq!(
        (mtu(&lab, "h1"), mtu(&lab, "h2")),
        ("9000".into(), "9000".into())
    );
    lab.stop();
}

/// A `net.ipv4` list sysctl of the machine, as words.
fn machine_list(name: &str) -> Vec<String> {
    std::fs::read_to_string(format!("/proc/sys/net/ipv4/{name}"))
        .unwrap()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[test]
fn hosts_start_with_cubic_and_may_set_any_available_congestion_control() {
    require_live!("sysctl");
    let available = machine_list("tcp_available_congestion_control");
    let machine = machine_list("tcp_congestion_control").remove(0);
    if !available.iter().any(|a| a == "cubic") {
        eprintln!("SKIPPED: this kernel has no cubic (available: {available:?})");
        return;
    }
    // Its turn first, so that no other test's run starts while the list is narrowed.
    let mut lab = Lab::new("tcc", &chain(""));
    // The allowed list as a machine boots with it (its default and reno), so that an algorithm
    // the machine has but does not allow exists whatever earlier runs added: inside a namespace
    // the kernel refuses such an algorithm with EPERM, even to root.
    std::fs::write(
        "/proc/sys/net/ipv4/tcp_allowed_congestion_control",
        format!("reno {machine}"),
    )
    .unwrap();
    lab.start(&[]);
    let key = "net.ipv4.tcp_congestion_control";
    // Not inherited from the machine (whose default may be anything, BBR here).
    assert_eq!(output(&lab, "h1", &["sysctl", "-n", key]), "cubic");
    for name in &available {
        output(&lab, "h1", &["sysctl", "-w", &format!("{key}={name}")]);
        assert_eq!(&output(&lab, "h1", &["sysctl", "-n", key]), name);
    }
    // The host's own: h2 still has what it started with, and the new namespace's defaults that
    // docs/live.md lists.
    assert_eq!(output(&lab, "h2", &["sysctl", "-n", key]), "cubic");
    for (sysctl, value) in [
        ("net.ipv4.tcp_ecn", "2"),
        ("net.ipv4.tcp_mtu_probing", "0"),
        ("net.ipv4.ip_no_pmtu_disc", "0"),
        ("net.ipv4.ip_default_ttl", "64"),
    ] {
        assert_eq!(
            output(&lab, "h2", &["sysctl", "-n", sysctl]),
            value,
            "{sysctl}"
        );
    }
    lab.stop();
    let reno = available.iter().find(|a| *a != "cubic").unwrap();
    lab.start(&["--tcp-cc", reno]);
    assert_eq!(&output(&lab, "h2", &["sysctl", "-n", key]), reno);
    lab.stop();
}

#[test]
fn an_unknown_congestion_control_is_refused_before_anything_is_made() {
    require_live!("cat");
    let lab = Lab::new("tcpx", &chain(""));
    let out = lab
        .cmd()
        .args([
            "run",
            "--name",
            &lab.name,
            "--duration",
            "1s",
            "--tcp-cc",
            "vegass",
        ])
        .arg(lab.dir.join("topo.toml"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "TCP congestion control \"vegass\" is not available on this machine; available: "
        ),
        "{err}"
    );
    assert!(lab.namespaces().is_empty());
    assert!(!lab.dir.join("run").join(&lab.name).exists());
}
