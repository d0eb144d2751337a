//! Writing and reading back: a document with every key set survives TOML and JSON unchanged, and
//! `LinkEntry`'s hand-written `Deserialize` rejects unknown keys that serde's flatten would drop.

use netloom_topo::doc::*;
use netloom_topo::{load_str, parse_str, resolve, write, Format};

/// A document that sets every key of the schema at least once.
fn everything() -> TopologyFile {
    let all = LinkParams {
        bw: Some("100Mbit".into()),
        delay: Some("1.5ms".into()),
        jitter: Some("10us".into()),
        reorder: Some(true),
        loss: Some(LossSpec::Simple(Fraction::Text("0.5%".into()))),
        queue: Some(QueueSpec::Size("64KiB".into())),
        aqm: Some("red".into()),
        red: Some(RedSpec {
            min_th: Some(5000.0),
            max_th: Some(20000.0),
            max_p: Some(Fraction::Number(0.05)),
            weight: Some(0.01),
        }),
        duplicate: Some(Fraction::Number(0.001)),
        ooo_rate: Some(Fraction::Text("1%".into())),
        ooo_delay: Some("2ms".into()),
        up: Some(true),
        ..Default::default()
    };
    let wireless = LinkParams {
        bw: Some("11Mbit".into()),
        aqm: Some("droptail".into()),
        wireless: Some("802.11b".into()),
        snr: Some("12dB".into()),
        netload: Some(Fraction::Text("1%".into())),
        collision: Some(Fraction::Number(0.04)),
        retry_limit: Some(4),
        mac_profile: Some("tests/data/wireless/lab.profile".into()),
        ..Default::default()
    };
    let traced = LinkParams {
        trace: Some("tests/data/wireless/cell.trace".into()),
        ..Default::default()
    };
    let ge = LossSpec::GilbertElliott(GilbertElliottSpec {
        model: "gilbert-elliott".into(),
        p: Fraction::Text("1%".into()),
        r: Fraction::Number(0.25),
        bad_loss: Some(Fraction::Number(0.9)),
        good_loss: Some(Fraction::Text("0.1%".into())),
    });
    TopologyFile {
        topology: Some(Meta {
            name: Some("everything".into()),
            routing: Some("hops".into()),
            kernel_routers: Some(true),
            addresses: Some("10.0.0.0/8".into()),
        }),
        defaults: Some(all.clone()),
        classes: [(
            "lossy".to_string(),
            LinkParams {
                loss: Some(ge.clone()),
                queue: Some(QueueSpec::Packets(50)),
                ..Default::default()
            },
        )]
        .into(),
        hosts: vec![
            NodeEntry::Name("h1".into()),
            NodeEntry::Full(Box::new(NodeTable {
                name: "h2".into(),
                group: Some("east".into()),
                lat: Some(52.52),
                lon: Some(13.4),
                ipv4: Some("10.0.0.7".into()),
                cpu: Some(0.5),
                ..NodeTable::default()
            })),
        ],
        routers: vec![NodeEntry::Full(Box::new(NodeTable {
            name: "r1".into(),
            group: Some("core".into()),
            kernel: Some(true),
            routing: Some("ospf".into()),
            asn: Some(65001),
            area: Some("0.0.0.1".into()),
            daemon: Some("frr".into()),
            hello: Some("1s".into()),
            dead: Some("4s".into()),
            // Any file that exists beside the document (the tests run in the crate's directory).
            config: Some("Cargo.toml".into()),
            ..NodeTable::default()
        }))],
        routing: Some(RoutingSection {
            protocol: Some("static".into()),
            daemon: Some("bird".into()),
            area: Some("2".into()),
            hello: Some("10s".into()),
            dead: Some("40s".into()),
            asn: [("core".to_string(), 65002)].into(),
        }),
        links: vec![
            LinkEntry {
                a: "h1".into(),
                b: "r1".into(),
                class: Some("lossy".into()),
                shared: Some(false),
                params: LinkParams {
                    aqm: Some("droptail".into()),
                    ..all.clone()
                },
                a_to_b: Some(LinkParams {
                    bw: Some("2MB/s".into()),
                    loss: Some(ge),
                    ..Default::default()
                }),
                b_to_a: Some(LinkParams {
                    delay: Some("0".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            LinkEntry {
                a: "r1".into(),
                b: "h2".into(),
                shared: Some(true),
                ..Default::default()
            },
            LinkEntry {
                a: "h1".into(),
                b: "r1".into(),
                shared: Some(true),
                params: wireless,
                schedule: Some(ScheduleSpec {
                    every: Some("60s".into()),
                    events: vec![
                        ScheduleEvent {
                            at: Some("10s".into()),
                            set: LinkParams {
                                snr: Some("5dB".into()),
                                ..Default::default()
                            },
                            ..Default::default()
                        },
                        ScheduleEvent {
                            from: Some("20s".into()),
                            to: Some("25s".into()),
                            set: LinkParams {
                                up: Some(false),
                                ..Default::default()
                            },
                            ..Default::default()
                        },
                    ],
                }),
                ..Default::default()
            },
            LinkEntry {
                a: "r1".into(),
                b: "h2".into(),
                params: LinkParams {
                    aqm: Some("droptail".into()),
                    ..traced.clone()
                },
                b_to_a: Some(traced),
                markov: Some(MarkovSpec {
                    start: "good".into(),
                    states: [
                        (
                            "good".to_string(),
                            MarkovStateSpec {
                                dwell: DwellSpec::Fixed("5s".into()),
                                next: [("bad".to_string(), Fraction::Number(1.0))].into(),
                                set: LinkParams::default(),
                            },
                        ),
                        (
                            "bad".to_string(),
                            MarkovStateSpec {
                                dwell: DwellSpec::Points(vec![
                                    (Fraction::Number(0.0), "1s".into()),
                                    (Fraction::Text("100%".into()), "3s".into()),
                                ]),
                                next: [("good".to_string(), Fraction::Text("100%".into()))].into(),
                                set: LinkParams {
                                    delay: Some("200ms".into()),
                                    ..Default::default()
                                },
                            },
                        ),
                    ]
                    .into(),
                }),
                ..Default::default()
            },
        ],
    }
}

#[test]
fn every_key_survives_toml_and_json() {
    let file = everything();
    let toml = write::to_toml(&file);
    assert_eq!(
        parse_str(&toml, Format::Toml, "t.toml").unwrap(),
        file,
        "{toml}"
    );
    let json = write::to_json(&file);
    assert_eq!(
        parse_str(&json, Format::Json, "t.json").unwrap(),
        file,
        "{json}"
    );
}

#[test]
fn written_files_load_to_the_same_topology() {
    let file = everything();
    let topo = resolve(&file, "everything").unwrap();
    for (text, format) in [
        (write::to_toml(&file), Format::Toml),
        (write::to_json(&file), Format::Json),
    ] {
        assert_eq!(load_str(&text, format, "everything").unwrap(), topo);
    }
}

#[test]
fn serde_deserialize_of_a_link_rejects_unknown_keys() {
    let text = "a = \"h1\"\nb = \"h2\"\nbandwith = \"1Mbit\"\n";
    let e = toml::from_str::<LinkEntry>(text).unwrap_err();
    assert!(
        e.to_string()
            .contains("unknown key \"bandwith\" in [[link]] (did you mean \"bw\"?)"),
        "{e}"
    );
    let link: LinkEntry = serde_json::from_str(r#"{"a": "h1", "b": "h2", "bw": "1Mbit"}"#).unwrap();
    assert_eq!(link.params.bw.as_deref(), Some("1Mbit"));
}
