//! Root tests of what happens around an experiment owned by another (or a dead) process: `clean`
//! after a crash, which must spare namespaces that are not netloom's, and `exec`.

use crate::common::{can_run, etc_entry_exists, netns_exists, unique, Leftovers, SIGNAL_HANDLERS};
use netloom_os::{OsError, Testbed, TestbedSpec};
use std::process::Command;

#[test]
fn clean_after_a_crash_removes_everything_and_spares_foreign_namespaces() {
    if !can_run("clean_after_a_crash_removes_everything_and_spares_foreign_namespaces") {
        return;
    }
    let name = unique("crash");
    let foreign = format!("nl-foreign-{}", std::process::id());
    let spec = TestbedSpec::planned(&name, ["h1", "h2"]);
    let namespaces: Vec<String> = ["h1", "h2"]
        .iter()
        .map(|h| netloom_os::namespace_name(&name, h))
        .collect();
    let _leftovers = Leftovers(
        namespaces
            .iter()
            .cloned()
            .chain([foreign.clone()])
            .collect(),
    );
    let status = Command::new("ip")
        .args(["netns", "add", &foreign])
        .status()
        .unwrap();
    assert!(status.success());

    // A crash: the owner vanishes without teardown, leaving a process inside a host.
    let experiment = Testbed::create(&spec).unwrap();
    let mut sleeper = netloom_os::command(&namespaces[0], &["sleep".into(), "30".into()])
        .unwrap()
        .spawn()
        .unwrap();
    // `ip netns exec` enters the namespace only after it has started: wait for that, or clean
    // could look before the sleeper is inside.
    wait_until_inside(sleeper.id(), &namespaces[0]);
    std::mem::forget(experiment);
    let registry = netloom_os::registry_dir().join(&name);
    let file = registry.join("experiment.json");
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let mut gone = Command::new("true").spawn().unwrap();
    let dead_pid = gone.id();
    gone.wait().unwrap();
    record["pid"] = dead_pid.into();
    record["pid_start"] = serde_json::Value::Null;
    std::fs::write(&file, record.to_string()).unwrap();

    let listed = netloom_os::running().unwrap();
    assert!(
        listed.iter().any(|r| r.name == name && !r.alive),
        "{listed:?}"
    );

    let report = netloom_os::clean(None).unwrap();
    assert_eq!(report.experiments, std::slice::from_ref(&name));
    assert_eq!(report.namespaces, namespaces);
    assert_eq!(report.processes, [sleeper.id()]);
    let status = sleeper.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    for ns in &namespaces {
        assert!(!netns_exists(ns), "{ns} left behind");
        assert!(!etc_entry_exists(ns), "/etc/netns/{ns} left behind");
    }
    assert!(!registry.exists());
    assert!(
        netns_exists(&foreign),
        "clean removed a namespace that is not netloom's"
    );
    assert!(
        netloom_os::clean(Some(&name)).unwrap().is_empty(),
        "clean is idempotent"
    );
}

/// Waits (up to 5 s) until process `pid` is in network namespace `ns`.
fn wait_until_inside(pid: u32, ns: &str) {
    use std::os::unix::fs::MetadataExt;
    let id = |path: std::path::PathBuf| std::fs::metadata(path).map(|m| (m.dev(), m.ino())).ok();
    let target = id(std::path::Path::new("/run/netns").join(ns));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while id(format!("/proc/{pid}/ns/net").into()) != target {
        assert!(
            std::time::Instant::now() < deadline,
            "process {pid} never entered {ns}"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

#[test]
fn a_foreign_namespace_of_the_same_name_is_refused_and_kept() {
    if !can_run("a_foreign_namespace_of_the_same_name_is_refused_and_kept") {
        return;
    }
    let spec = TestbedSpec::planned(&unique("clash"), ["h1", "h2"]);
    let taken = netloom_os::namespace_name(&spec.name, "h2");
    let _leftovers = Leftovers(vec![
        netloom_os::namespace_name(&spec.name, "h1"),
        taken.clone(),
    ]);
    assert!(Command::new("ip")
        .args(["netns", "add", &taken])
        .status()
        .unwrap()
        .success());
    let err = Testbed::create(&spec).unwrap_err();
    assert!(
        matches!(&err, OsError::NamespaceExists { ns } if *ns == taken),
        "{err}"
    );
    assert!(netns_exists(&taken));
    assert!(!netns_exists(&netloom_os::namespace_name(&spec.name, "h1")));
    assert!(!netloom_os::registry_dir().join(&spec.name).exists());
}

#[test]
fn exec_passes_the_exit_code_through() {
    if !can_run("exec_passes_the_exit_code_through") {
        return;
    }
    // exec waits in the foreground, holding the process's signal handlers.
    let _handlers = SIGNAL_HANDLERS.lock().unwrap_or_else(|e| e.into_inner());
    let spec = TestbedSpec::planned(&unique("exec"), ["h1"]);
    let _leftovers = Leftovers(vec![netloom_os::namespace_name(&spec.name, "h1")]);
    let experiment = Testbed::create(&spec).unwrap();
    let argv = |s: &str| -> Vec<String> { ["sh", "-c", s].map(String::from).to_vec() };
    let status = netloom_os::exec(&experiment.namespace(0), &argv("exit 3")).unwrap();
    assert_eq!(status.code(), Some(3));
    // Inside, the host sees its own address and resolves its name.
    let status = experiment
        .exec(
            "h1",
            &argv("ip -o addr show nl0 | grep -q 198.18.0.1/15 && getent hosts h1 >/dev/null"),
        )
        .unwrap();
    assert!(status.success());
    let err = netloom_os::exec("nl-no-such-namespace", &argv("true")).unwrap_err();
    assert!(matches!(err, OsError::NoNamespace { .. }), "{err}");
}

#[test]
fn a_failure_after_the_namespaces_exist_removes_them_and_keeps_what_is_not_ours() {
    if !can_run("a_failure_after_the_namespaces_exist_removes_them_and_keeps_what_is_not_ours") {
        return;
    }
    let spec = TestbedSpec::planned(&unique("rollback"), ["h1", "h2"]);
    let namespaces: Vec<String> = ["h1", "h2"]
        .iter()
        .map(|h| netloom_os::namespace_name(&spec.name, h))
        .collect();
    let _leftovers = Leftovers(namespaces.clone());
    // Someone else's /etc/netns directory for h2: hosts files are written after the namespaces
    // are up, so creation fails late.
    let foreign = std::path::Path::new("/etc/netns").join(&namespaces[1]);
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("resolv.conf"), "# not netloom's\n").unwrap();
    let err = Testbed::create(&spec).unwrap_err().to_string();
    assert!(err.contains("exists but is not this experiment's"), "{err}");
    for ns in &namespaces {
        assert!(!netns_exists(ns), "{ns} left behind");
    }
    assert!(!etc_entry_exists(&namespaces[0]));
    assert!(
        foreign.join("resolv.conf").exists(),
        "removed a directory that is not netloom's"
    );
    assert!(!netloom_os::registry_dir().join(&spec.name).exists());
}
