//! A link's `mtu`: layered like every parameter into `PipeConfig::mtu`, changed by a patch as
//! `netloom link set` does, left at the default by imports, and refused out of range with the
//! link, the line and the valid range.

use crate::common::load;
use netloom_link::DEFAULT_MTU;
use netloom_topo::{
    import_path, load_str, resolve, summarize, Format, HostPlan, ImportOptions, LinkPatch, Topology,
};
use std::path::Path;

/// h1 - r1 - h2 with `defaults` added to `[defaults]`: the access class sets its MTU, the r1-h2
/// link sets one direction's (on line 20).
fn layered(defaults: &str) -> String {
    format!(
        "hosts = [\"h1\", \"h2\"]\nrouters = [\"r1\"]\n\n[defaults]\nbw = \"1Gbit\"\ndelay = \"1ms\"\n{defaults}\n\n\
         [classes.access]\nmtu = 9000\n\n\
         [[link]]\na = \"h1\"\nb = \"r1\"\nclass = \"access\"\n\n\
         [[link]]\na = \"r1\"\nb = \"h2\"\nb_to_a = {{ mtu = 1400 }}\n"
    )
}

/// The MTUs of link `i`, a to b then b to a.
fn mtus(t: &Topology, i: usize) -> (u32, u32) {
    let l = &t.links[i];
    (
        t.pipes[l.ab as usize].config.mtu,
        t.pipes[l.ba as usize].config.mtu,
    )
}

#[test]
fn mtu_layers_from_defaults_class_link_and_direction() {
    let t = load(&layered(""));
    assert_eq!(mtus(&t, 0), (9000, 9000), "the class's");
    assert_eq!(
        mtus(&t, 1),
        (DEFAULT_MTU, 1400),
        "the default, and b_to_a's own"
    );
    let summary = summarize(&t);
    assert_eq!((summary.min_mtu, summary.max_mtu), (1400, 9000));
    let t = load(&layered("mtu = 4000"));
    assert_eq!(mtus(&t, 0), (9000, 9000), "a class beats [defaults]");
    assert_eq!(mtus(&t, 1), (4000, 1400), "[defaults], and b_to_a's own");
}

#[test]
fn a_patch_changes_the_mtu_and_nothing_else() {
    let t = load(&layered(""));
    let before = t.pipes[t.links[0].ab as usize].config;
    let after = LinkPatch::from_words(&["mtu=1280"])
        .unwrap()
        .apply(&before)
        .unwrap();
    assert_eq!(after.mtu, 1280);
    assert_eq!(
        netloom_link::PipeConfig {
            mtu: before.mtu,
            ..after
        },
        before
    );
}

#[test]
fn imported_links_get_the_default_mtu() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let options = ImportOptions {
        hosts: HostPlan::parse("1").unwrap(),
        ..ImportOptions::default()
    };
    for file in ["topology-zoo/Abilene.graphml", "modelnet/inet.graph"] {
        let imported =
            import_path(&data.join(file), None, &options).unwrap_or_else(|e| panic!("{file}: {e}"));
        let t = resolve(&imported.file, file).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(!t.pipes.is_empty(), "{file}");
        assert!(
            t.pipes.iter().all(|p| p.config.mtu == DEFAULT_MTU),
            "{file}"
        );
    }
}

#[test]
fn an_mtu_out_of_range_names_the_link_its_line_and_the_valid_range() {
    let valid = "write a number of bytes from 1280 to 65535 (Ethernet's is 1500)";
    for (mtu, why) in [
        ("1000", "mtu 1000 is too small: every link carries IPv6 (each host has an IPv6 address), which needs at least 1280"),
        ("1279", "mtu 1279 is too small: every link carries IPv6"),
        ("67", "mtu 67 is below 68, the smallest MTU IPv4 allows, and every link carries IPv6"),
        ("-1", "mtu -1 is below 68"),
        ("65536", "mtu 65536 is above 65535, the largest IP packet and TUN device MTU"),
    ] {
        let text = layered("").replace("mtu = 1400", &format!("mtu = {mtu}"));
        let err = load_str(&text, Format::Toml, "topo.toml").unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("topo.toml:20: link r1-h2: b_to_a.{why}")),
            "{mtu}: {err}"
        );
        assert!(err.contains(valid), "{err}");
    }
    for (mtu, wrong) in [
        ("\"9000\"", "the string \"9000\""),
        ("1500.5", "the number 1500.5"),
    ] {
        let text = layered(&format!("mtu = {mtu}"));
        let err = load_str(&text, Format::Toml, "topo.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("mtu must be a whole number, not {wrong}")),
            "{err}"
        );
    }
}
