//! Importers against real files: every Topology Zoo file in `tests/data/topology-zoo` (CC BY
//! 4.0, see its README.md) imports and resolves once hosts are attached; native → GraphML →
//! native keeps every parameter; malformed files name the element and line.

use netloom_topo::doc::*;
use netloom_topo::export::{to_dot, to_graphml};
use netloom_topo::{
    import_path, import_str, load_path_as, resolve, write, HostPlan, ImportOptions, InputFormat,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

fn zoo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/topology-zoo")
}

fn zoo_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(zoo_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "graphml"))
        .collect();
    files.sort();
    files
}

fn with_hosts(plan: &str) -> ImportOptions {
    ImportOptions {
        hosts: HostPlan::parse(plan).unwrap(),
        ..ImportOptions::default()
    }
}

#[test]
fn every_zoo_file_imports_and_resolves_with_hosts() {
    let files = zoo_files();
    assert_eq!(files.len(), 30);
    for path in files {
        let imported = import_path(&path, None, &with_hosts("1")).unwrap();
        let topo = resolve(&imported.file, &path.display().to_string())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(!topo.hosts.is_empty(), "{}", path.display());
        // What was assumed is always said: at least the attached hosts.
        assert!(
            imported
                .notes
                .iter()
                .any(|n| n.contains("host(s) attached")),
            "{}",
            path.display()
        );
        // The native text loads back to the same topology.
        let toml = write::to_toml(&imported.file);
        let (again, notes) = load_path_as(
            &write_temp(&path, "toml", &toml),
            None,
            &ImportOptions::default(),
        )
        .unwrap();
        assert_eq!(again.links, topo.links, "{}", path.display());
        assert!(notes.is_empty());
    }
}

/// A file written for a test into a directory of its own (the tests of every module run at once
/// in one process), both removed when it is dropped.
struct Scratch {
    dir: PathBuf,
    path: PathBuf,
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `text` in a file named like `like`'s stem with extension `ext`.
fn write_temp(like: &Path, ext: &str, text: &str) -> Scratch {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "netloom-import-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(like.file_stem().unwrap()).with_extension(ext);
    let scratch = Scratch { dir, path };
    std::fs::write(&scratch.path, text).unwrap();
    scratch
}

#[test]
fn abilene_delays_come_from_distances_and_rates_from_the_labels() {
    let imported = import_path(&zoo_dir().join("Abilene.graphml"), None, &with_hosts("0")).unwrap();
    let f = &imported.file;
    assert_eq!(
        f.topology.as_ref().unwrap().name.as_deref(),
        Some("Abilene")
    );
    assert_eq!((f.routers.len(), f.links.len(), f.hosts.len()), (11, 14, 0));
    let ny_chicago = f
        .links
        .iter()
        .find(|l| l.a == "New_York" && l.b == "Chicago")
        .expect("Abilene links New York and Chicago");
    // 1145.8 km of great circle at 200 000 km/s (worked out separately with the haversine).
    assert_eq!(ny_chicago.params.delay.as_deref(), Some("5729us"));
    // Its only speed is the label "OC-192c": OC-192's line rate.
    assert_eq!(ny_chicago.params.bw.as_deref(), Some("9953280kbit"));
    let notes = imported.notes.join("\n");
    assert!(!notes.contains("had no rate"), "{notes}");
    assert!(
        notes.contains("14 of 14 links: delay from the great-circle distance"),
        "{notes}"
    );
    // Router-level: the loader refuses it until hosts are attached.
    let err = resolve(f, "Abilene.graphml").unwrap_err().to_string();
    assert!(err.contains("no hosts"), "{err}");
}

#[test]
fn zoo_speeds_parallel_links_and_missing_coordinates() {
    let geant = import_path(&zoo_dir().join("Geant2012.graphml"), None, &with_hosts("0")).unwrap();
    let rates: Vec<&str> = geant
        .file
        .links
        .iter()
        .filter_map(|l| l.params.bw.as_deref())
        .collect();
    assert!(
        rates.contains(&"10Gbit") && rates.contains(&"2500Mbit"),
        "{rates:?}"
    );
    assert!(geant
        .notes
        .join("\n")
        .contains("22 of 61 links had no rate"));

    // Highwinds is a multigraph: 53 edges over 31 pairs, kept as 53 links.
    let hw = import_path(&zoo_dir().join("Highwinds.graphml"), None, &with_hosts("1")).unwrap();
    assert_eq!(hw.file.links.len(), 53 + 18);
    let topo = resolve(&hw.file, "hw").unwrap();
    assert_eq!(topo.links.len(), 71);

    // Cesnet2 has no coordinates at all: every delay is the default, and the note says so.
    let options = ImportOptions {
        default_delay: "3ms".into(),
        default_bw: "10Gbit".into(),
        ..with_hosts("0")
    };
    let cesnet = import_path(&zoo_dir().join("Cesnet2.graphml"), None, &options).unwrap();
    assert!(cesnet
        .file
        .links
        .iter()
        .all(|l| l.params.delay.as_deref() == Some("3ms")));
    assert!(cesnet
        .file
        .links
        .iter()
        .all(|l| l.params.bw.as_deref() == Some("10Gbit")));
    let notes = cesnet.notes.join("\n");
    assert!(
        notes.contains("42 of 42 links had no delay and no length (30 node(s) without coordinates"),
        "{notes}"
    );

    // Bandcon has a router without links: it gets no hosts, and the note says so.
    let bandcon = import_path(&zoo_dir().join("Bandcon.graphml"), None, &with_hosts("2")).unwrap();
    assert_eq!(bandcon.file.hosts.len(), 2 * 21);
    assert!(bandcon
        .notes
        .join("\n")
        .contains("1 router(s) outside the largest connected part"));
}

/// How many links of an import have each rate.
fn rates(imported: &netloom_topo::Imported) -> BTreeMap<String, usize> {
    let mut count = BTreeMap::new();
    for l in &imported.file.links {
        *count
            .entry(l.params.bw.clone().unwrap_or_default())
            .or_default() += 1;
    }
    count
}

/// A Zoo file, how many of its edges take their rate from LinkLabel, how many links are still
/// at the assumed rate, and how many links have each rate after the import.
type Labelled = (&'static str, usize, usize, &'static [(&'static str, usize)]);

#[test]
fn zoo_link_labels_give_the_rates_nothing_else_gives() {
    // The Zoo files whose edges give a speed only in LinkLabel ("1Gbit" includes the links
    // still at the assumed default).
    let labelled: [Labelled; 5] = [
        // "< 10 Gbps" x 11, "< 2.5 Gbps" x 5, "< 155 Mbps" x 5, "< 1 Gbps", 2 without a label.
        (
            "Aarnet",
            22,
            2,
            &[
                ("10Gbit", 11),
                ("2500Mbit", 5),
                ("155Mbit", 5),
                ("1Gbit", 3),
            ],
        ),
        ("Abilene", 14, 0, &[("9953280kbit", 14)]), // "OC-192c"
        ("Cwix", 29, 12, &[("45Mbit", 29), ("1Gbit", 12)]), // "45 Mbps DS-3"
        ("Istar", 23, 0, &[("1544kbit", 18), ("44736kbit", 5)]), // T1, T3
        // OC-12, OC-48, OC-192 x 2, WANPHY x 2, 8*GbE; one "10GE" from LinkSpeed.
        (
            "TLex",
            7,
            8,
            &[
                ("622080kbit", 1),
                ("2488320kbit", 1),
                ("9953280kbit", 4),
                ("8Gbit", 1),
                ("10Gbit", 1),
                ("1Gbit", 8),
            ],
        ),
    ];
    let mut read_total = 0;
    for path in zoo_files() {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let imported = import_path(&path, None, &with_hosts("0")).unwrap();
        let notes = imported.notes.join("\n");
        let edges = imported.file.links.len();
        let Some((_, read, assumed, want)) = labelled.iter().find(|(f, ..)| *f == stem) else {
            assert!(!notes.contains("only in LinkLabel"), "{stem}: {notes}");
            continue;
        };
        read_total += read;
        assert!(
            notes.contains(&format!(
                "{read} of {edges} edges gave their rate only in LinkLabel, read from it: "
            )),
            "{stem}: {notes}"
        );
        let no_rate = format!("{assumed} of {edges} links had no rate");
        assert_eq!(notes.contains(&no_rate), *assumed > 0, "{stem}: {notes}");
        let want: BTreeMap<String, usize> = want.iter().map(|(r, n)| (r.to_string(), *n)).collect();
        assert_eq!(rates(&imported), want, "{stem}");
    }
    assert_eq!(read_total, 95);
    // Labels that name no speed are counted and shown, and their links keep the default.
    let belnet = import_path(&zoo_dir().join("Belnet.graphml"), None, &with_hosts("0")).unwrap();
    let notes = belnet.notes.join("\n");
    assert!(
        notes.contains(
            "29 of 33 edges had no rate and a LinkLabel with no speed in it: \"Blue\", \"Brown\", \"Green\", ..."
        ),
        "{notes}"
    );
    assert!(notes.contains("33 of 33 links had no rate"), "{notes}");
}

#[test]
fn hosts_attach_per_router_with_the_access_link() {
    let options = ImportOptions {
        access_bw: "100Mbit".into(),
        access_delay: "1ms".into(),
        ..with_hosts("0,New_York=2,Chicago=1")
    };
    let imported = import_path(&zoo_dir().join("Abilene.graphml"), None, &options).unwrap();
    let f = &imported.file;
    let names: Vec<String> = f
        .hosts
        .iter()
        .map(|h| match h {
            NodeEntry::Name(n) => n.clone(),
            NodeEntry::Full(t) => format!("{}@{}", t.name, t.group.clone().unwrap()),
        })
        .collect();
    assert_eq!(
        names,
        [
            "New_York-h1@New_York",
            "New_York-h2@New_York",
            "Chicago-h1@Chicago"
        ]
    );
    assert_eq!(f.classes["access"].bw.as_deref(), Some("100Mbit"));
    resolve(f, "abilene").unwrap();
    let err = import_path(
        &zoo_dir().join("Abilene.graphml"),
        None,
        &with_hosts("Chicgo=1"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("\"Chicgo\" is not a router (did you mean \"Chicago\"?)"),
        "{err}"
    );
}

/// A document that sets every parameter somewhere: defaults, a class, own keys, both
/// directions, Gilbert-Elliott loss, RED, a shared link, parallel links and groups.
fn everything() -> TopologyFile {
    let text = r#"
hosts = ["h1", { name = "h2", group = "east" }]
routers = ["r1", "r2"]
[topology]
name = "everything"
routing = "hops"
[defaults]
bw = "100Mbit"
delay = "1.5ms"
jitter = "10us"
reorder = true
[classes.lossy]
loss = { model = "gilbert-elliott", p = "1%", r = 0.25, bad_loss = 0.9, good_loss = "0.1%" }
queue = 50
aqm = "red"
red = { min_th = 5.0, max_th = 20.0, max_p = "2%", weight = 0.01 }
[[link]]
a = "h1"
b = "r1"
class = "lossy"
shared = false
duplicate = 0.001
ooo_rate = "1%"
ooo_delay = "2ms"
a_to_b = { bw = "2MB/s", red = { weight = 0.5 } }
b_to_a = { delay = "0", loss = "0.5%", up = true }
[[link]]
a = "r1"
b = "r2"
queue = "64KiB"
[[link]]
a = "r1"
b = "r2"
bw = "1Gbit"
up = false
[[link]]
a = "r2"
b = "h2"
shared = true
"#;
    toml::from_str(text).unwrap()
}

#[test]
fn native_to_graphml_to_native_keeps_every_parameter() {
    let file = everything();
    let topo = resolve(&file, "everything").unwrap();
    let graphml = to_graphml(&file, "everything", None);
    let back = import_str(
        &graphml,
        InputFormat::GraphMl,
        "e.graphml",
        &ImportOptions::default(),
    )
    .unwrap();
    assert!(
        back.notes.is_empty(),
        "nothing is assumed: {:?}",
        back.notes
    );
    assert_eq!(resolve(&back.file, "e.graphml").unwrap(), topo, "{graphml}");
    // The class comes back with the parameters its links share.
    assert_eq!(
        back.file.classes["lossy"].queue,
        Some(QueueSpec::Packets(50))
    );
    // And once more: GraphML of the imported document is the same text.
    assert_eq!(to_graphml(&back.file, "everything", None), graphml);
}

#[test]
fn dot_export_shows_every_link_with_its_parameters() {
    let dot = to_dot(&everything(), "everything", None);
    assert_eq!(dot.matches(" -- ").count(), 4);
    assert!(
        dot.contains("\"h1\" -- \"r1\" [label=\"100Mbit 1.5ms\""),
        "{dot}"
    );
    assert!(dot.contains("\"loss.model\"=\"gilbert-elliott\""), "{dot}");
    assert!(dot.contains("\"b_to_a.up\"=\"true\""), "{dot}");
}

#[test]
fn a_broken_zoo_file_names_the_edge_and_line() {
    let text = std::fs::read_to_string(zoo_dir().join("Abilene.graphml")).unwrap();
    let broken = text.replacen(
        "<edge source=\"0\" target=\"1\">",
        "<edge source=\"0\" target=\"n99\">",
        1,
    );
    assert_ne!(broken, text);
    let err = import_str(
        &broken,
        InputFormat::GraphMl,
        "zoo.graphml",
        &ImportOptions::default(),
    )
    .unwrap_err();
    let line = broken
        .lines()
        .position(|l| l.contains("target=\"n99\""))
        .unwrap()
        + 1;
    assert_eq!(
        err.to_string(),
        format!("zoo.graphml:{line}: edge #1 (source=\"0\" target=\"n99\"): target \"n99\" is not a node")
    );
    let truncated = &text[..text.len() / 2];
    let err = import_str(
        truncated,
        InputFormat::GraphMl,
        "zoo.graphml",
        &ImportOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().starts_with("zoo.graphml:"), "{err}");
    assert!(err.first().line.is_some());
}

#[test]
fn zoo_gml_shadow_gml_modelnet_and_inet_load_through_load_path_as() {
    let gml = r#"graph [
  Network "Tiny"
  node [ id 0 label "Paris" Latitude 48.85 Longitude 2.35 ]
  node [ id 1 label "Berlin" Latitude 52.52 Longitude 13.40 ]
  node [ id 2 label "Rome" host_bandwidth_up "10 Mbit" host_bandwidth_down "50 Mbit" ]
  edge [ source 0 target 1 LinkSpeed "10" LinkSpeedUnits "G" ]
  edge [ source 1 target 2 latency "12 ms" bandwidth "1 Gbit" packet_loss 0.001 ]
]
"#;
    let path = write_temp(Path::new("tiny"), "gml", gml);
    let (topo, notes) = load_path_as(&path, None, &with_hosts("1")).unwrap();
    assert_eq!(topo.name, "Tiny");
    assert_eq!((topo.hosts.len(), topo.links.len()), (3, 5));
    assert!(
        notes.iter().any(|n| n.contains("host_bandwidth_up")),
        "{notes:?}"
    );

    let inet = "3 2\n0 0 0\n1 300 400\n2 600 800\n0 1 1\n1 2 1\n";
    let path = write_temp(Path::new("tiny"), "inet", inet);
    let (topo, notes) = load_path_as(&path, None, &with_hosts("1")).unwrap();
    // 500 units at the default 5 us per unit.
    let delay = topo.pipes[0].config.delay;
    assert_eq!(delay, netloom_time::Duration::from_micros(2500));
    assert!(
        notes.iter().any(|n| n.contains("at 5us per unit")),
        "{notes:?}"
    );

    // An explicit format wins over the extension.
    let path = write_temp(Path::new("tiny-inet"), "txt", inet);
    assert!(load_path_as(&path, Some(InputFormat::Inet), &with_hosts("1")).is_ok());
    let err = load_path_as(&path, None, &with_hosts("1")).unwrap_err();
    assert!(err.to_string().contains("unknown file type"));
}

#[test]
fn zoo_and_inet_coordinates_survive_conversion_to_toml() {
    let imported = import_path(&zoo_dir().join("Abilene.graphml"), None, &with_hosts("1")).unwrap();
    let toml = write::to_toml(&imported.file);
    let topo = netloom_topo::load_str(&toml, netloom_topo::Format::Toml, "abilene.toml").unwrap();
    let new_york = topo.node(topo.node_id("New_York").unwrap());
    assert_eq!(
        new_york.position,
        Some(netloom_topo::Position::Earth {
            lat: 40.71427,
            lon: -74.00597
        }),
        "{toml}"
    );
    // Every router has its place; the hosts attached to them have none (drawn beside them).
    for node in &topo.nodes {
        let host = node.kind == netloom_topo::NodeKind::Host;
        assert_eq!(node.position.is_none(), host, "{}", node.name);
    }

    let inet = "3 2\n0 0 0\n1 300 400\n2 600 800\n0 1 1\n1 2 1\n";
    let imported = import_str(inet, InputFormat::Inet, "tiny.inet", &with_hosts("1")).unwrap();
    let toml = write::to_toml(&imported.file);
    let topo = netloom_topo::load_str(&toml, netloom_topo::Format::Toml, "tiny.toml").unwrap();
    let positions: Vec<_> = topo.nodes.iter().filter_map(|n| n.position).collect();
    assert_eq!(
        positions,
        [(0.0, 0.0), (300.0, 400.0), (600.0, 800.0)]
            .map(|(x, y)| netloom_topo::Position::Plane { x, y }),
        "{toml}"
    );
}
