//! Hostile sizes: topologies past the address plan, large enough that tables of nodes × hosts
//! would not fit in memory, and generator flags that ask for absurd sizes. Each is refused with
//! the limit, or handled in little memory and time; none panics or aborts.

mod common;

use common::{run, TempDir};

/// `netloom gen star --hosts N` into `dir`, returning the file (JSON, which loads faster than
/// TOML).
fn star(dir: &TempDir, hosts: usize) -> std::path::PathBuf {
    let file = dir.path().join(format!("star{hosts}.json"));
    let hosts = hosts.to_string();
    let file_arg = file.to_str().expect("utf-8 temp path");
    run(&["gen", "star", "--hosts", &hosts, "-o", file_arg]).ok();
    file
}

#[test]
fn run_past_the_address_plan_is_refused_before_anything_is_made() {
    // One host more than 198.18.0.0/15 numbers. The refusal comes from the plan, before routes,
    // namespaces or the registry, so it needs neither root nor the live lock.
    let dir = TempDir::new("scale-plan");
    let file = star(&dir, 131_071);
    let out = run(&[
        "run".as_ref(),
        file.as_os_str(),
        "--name".as_ref(),
        "hostile-scale-plan".as_ref(),
    ])
    .expect_code(2);
    assert!(
        out.stderr.contains("131071 hosts") && out.stderr.contains("room for 131070 hosts"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("198.18.0.0/15"), "{}", out.stderr);
    assert!(
        out.stderr.contains(file.to_str().unwrap()),
        "{}",
        out.stderr
    );
}
