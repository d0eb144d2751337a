//! Every bad-file case gives one clear error: file, line (TOML), link or node, what is valid.

use crate::common::{load_err, one_error};
use netloom_topo::{load_str, ErrorKind, Format};

const NODES: &str = r#"hosts = ["h1", "h2"]
routers = ["r1", "r2"]
"#;

/// Three links h1-r1, r1-r2, r2-h2; `middle` is spliced into the r1-r2 link.
fn with_middle(middle: &str) -> String {
    format!(
        r#"{NODES}
[defaults]
bw = "1Gbit"
delay = "1ms"

[[link]]
a = "h1"
b = "r1"

[[link]]
a = "r1"
b = "r2"
{middle}

[[link]]
a = "r2"
b = "h2"
"#
    )
}

#[test]
fn the_base_file_loads() {
    let topo = load_str(&with_middle(""), Format::Toml, "topo.toml").unwrap();
    assert_eq!(topo.links.len(), 3);
}

#[test]
fn ambiguous_bandwidth_names_line_link_and_both_readings() {
    assert_eq!(
        one_error(&with_middle(r#"bw = "10 mbps""#)),
        "topo.toml:15: link r1-r2: bw \"10 mbps\" is ambiguous: tc reads it as 10 megabytes/s, \
         most people as 10 megabits/s; write \"10Mbit\" or \"10MB/s\""
    );
}

#[test]
fn unknown_key_in_a_link_is_an_error_with_a_suggestion() {
    let e = load_err(&with_middle(r#"bandwith = "10Mbit""#));
    assert_eq!(e.kind(), ErrorKind::UnknownKey);
    assert_eq!(e.first().line, Some(15));
    let m = e.to_string();
    assert!(m.starts_with("topo.toml:15: link r1-r2: unknown key \"bandwith\" in [[link]] (did you mean \"bw\"?); valid keys: a, b, class"), "{m}");
    let m = one_error(&with_middle(r#"a_to_b = { dealy = "5ms" }"#));
    assert!(
        m.contains("link r1-r2: unknown key \"a_to_b.dealy\" (did you mean \"delay\"?)"),
        "{m}"
    );
    let m = one_error(&with_middle("colour = 3"));
    assert!(!m.contains("did you mean"), "{m}");
}

#[test]
fn unknown_keys_elsewhere() {
    let m = one_error(&format!("{NODES}nodes = []\n"));
    assert!(
        m.starts_with("topo.toml:3: unknown key \"nodes\" in the file"),
        "{m}"
    );
    let m = one_error(&with_middle("").replace("[defaults]\n", "[defaults]\nlatency = \"1ms\"\n"));
    assert!(m.starts_with("topo.toml:5: [defaults]: unknown key \"latency\" in [defaults] (did you mean \"delay\"?)"), "{m}");
    let m = one_error(&with_middle(
        r#"loss = { model = "gilbert-elliott", p = "1%", r = "10%", q = 1 }"#,
    ));
    assert!(m.contains("unknown key \"loss.q\""), "{m}");
    let m = one_error(&format!(
        "{}\n[topology]\nrouting = \"hops\"\nseed = 1\n",
        with_middle("")
    ));
    assert!(m.contains("[topology]: unknown key \"seed\""), "{m}");
}

#[test]
fn dangling_link_end() {
    let text = with_middle("").replace("b = \"h2\"", "b = \"h3\"");
    let e = load_err(&text);
    assert_eq!(e.kind(), ErrorKind::UnknownName);
    assert_eq!(
        e.to_string(),
        "topo.toml:19: link r2-h3: b = \"h3\" is not a node (did you mean \"h1\"?); declare it in hosts or routers"
    );
}

#[test]
fn duplicate_names_across_hosts_and_routers() {
    let text = with_middle("").replace(
        r#"routers = ["r1", "r2"]"#,
        r#"routers = ["r1", "r2", "h1"]"#,
    );
    let e = load_err(&text);
    assert_eq!(e.kind(), ErrorKind::Duplicate);
    assert_eq!(
        e.to_string(),
        "topo.toml:2: router h1: the name is already used by a host; hosts and routers share one namespace, so every name must be unique"
    );
}

#[test]
fn self_loop() {
    let e = load_err(&with_middle("").replace("a = \"r1\"\nb = \"r2\"", "a = \"r1\"\nb = \"r1\""));
    assert_eq!(e.kind(), ErrorKind::SelfLoop);
    assert!(e
        .to_string()
        .contains("link r1-r1: a and b are both \"r1\"; a link joins two different nodes"));
}

#[test]
fn zero_negative_and_unitless_rates() {
    let m = one_error(&with_middle(r#"bw = "0Mbit""#));
    assert!(
        m.starts_with("topo.toml:15: link r1-r2: bw \"0Mbit\" is zero; a rate must be positive"),
        "{m}"
    );
    let m = one_error(&with_middle(r#"bw = "-10Mbit""#));
    assert!(m.contains("bw \"-10Mbit\" is negative"), "{m}");
    let m = one_error(&with_middle("bw = 100"));
    assert!(
        m.contains("bw \"100\" has no unit; write \"100Mbit\" or \"100bit\""),
        "{m}"
    );
    let m = one_error(&with_middle(r#"delay = "5""#));
    assert!(
        m.contains("delay \"5\" has no unit; write \"5ms\" or \"5s\""),
        "{m}"
    );
}

#[test]
fn unknown_class_lists_the_defined_ones() {
    let text = format!(
        "{}\n[classes.core]\nbw = \"10Gbit\"\n",
        with_middle(r#"class = "cor""#)
    );
    let m = one_error(&text);
    assert_eq!(
        m,
        "topo.toml:15: link r1-r2: class \"cor\" is not defined (did you mean \"core\"?); defined classes: core"
    );
}

#[test]
fn bad_codel_fq_codel_and_ecn() {
    let m = one_error(&with_middle("aqm = \"codel\"\ncodel_target = \"0ms\""));
    assert!(
        m.starts_with(
            "topo.toml:12: link r1-r2: codel_target (0s) must be above 0 and below \
             codel_interval (100ms)"
        ),
        "{m}"
    );
    let m = one_error(&with_middle("aqm = \"fq_codel\"\ncodel_interval = \"1ms\""));
    assert!(
        m.contains("codel_target (5ms) must be above 0 and below codel_interval (1ms)"),
        "{m}"
    );
    let m = one_error(&with_middle("aqm = \"fq_codel\"\nfq_quantum = 0"));
    assert!(
        m.contains("fq_quantum 0 must be a number of bytes from 1 to 65536"),
        "{m}"
    );
    let m = one_error(&with_middle("fq_flows = 100000"));
    assert!(
        m.contains("fq_flows 100000 must be a number of flow queues from 1 to 65536"),
        "{m}"
    );
    let m = one_error(&with_middle("ecn = true"));
    assert!(
        m.starts_with("topo.toml:12: link r1-r2: ecn = true needs an AQM"),
        "{m}"
    );
    let m = one_error(&with_middle("aqm = \"red\"\necn = \"yes\""));
    assert!(m.contains("ecn"), "{m}");
}

#[test]
fn bad_aqm_and_red() {
    let m = one_error(&with_middle(r#"aqm = "fq-codel""#));
    assert!(
        m.contains(
            "aqm \"fq-codel\" is not known (did you mean \"fq_codel\"?); write \"droptail\", \
             \"red\", \"codel\" or \"fq_codel\""
        ),
        "{m}"
    );
    let m = one_error(&with_middle(
        "aqm = \"red\"\nred = { min_th = 30, max_th = 20 }",
    ));
    assert!(
        m.starts_with("topo.toml:12: link r1-r2: red.min_th (30) must be below red.max_th (20)"),
        "{m}"
    );
    let m = one_error(&with_middle("aqm = \"red\"\nred = { weight = 2 }"));
    assert!(
        m.contains("red.weight 2 is out of range; valid: (0, 1]"),
        "{m}"
    );
    let m = one_error(&with_middle("aqm = \"red\"\nred = { max_p = 0 }"));
    assert!(
        m.contains("red.max_p 0 is out of range; valid: (0, 1]"),
        "{m}"
    );
}

#[test]
fn host_without_a_link() {
    let text = with_middle("").replace(r#"hosts = ["h1", "h2"]"#, r#"hosts = ["h1", "h2", "h3"]"#);
    let e = load_err(&text);
    assert_eq!(e.kind(), ErrorKind::Unconnected);
    assert_eq!(
        e.to_string(),
        "topo.toml:1: host h3: has no link; connect it with a [[link]] (a = \"h3\", b = \"r1\")"
    );
}

#[test]
fn hosts_that_cannot_reach_each_other() {
    let m = one_error(&with_middle("up = false"));
    assert_eq!(
        m,
        "topo.toml:1: host h2: cannot reach host h1 over links that are up (1 link(s) start with up = false and do not count); every pair of hosts must be connected"
    );
    let text = r#"hosts = ["h1", "h2"]
routers = ["r1", "r2"]
[defaults]
bw = "1Gbit"
delay = "1ms"
[[link]]
a = "h1"
b = "r1"
[[link]]
a = "h2"
b = "r2"
"#;
    assert!(one_error(text).contains("host h2: cannot reach host h1 over links that are up;"));
}

#[test]
fn missing_bandwidth_says_where_to_set_it() {
    let text = with_middle(r#"class = "wan""#).replace("bw = \"1Gbit\"\n", "")
        + "\n[classes.wan]\ndelay = \"20ms\"\n";
    let e = load_err(&text);
    assert_eq!(e.kind(), ErrorKind::Missing);
    // All three links lack a bandwidth; the first is reported at its [[link]] header.
    assert_eq!(e.diagnostics().len(), 3);
    assert_eq!(
        e.diagnostics()[1].to_string(),
        "topo.toml:11: link r1-r2: no bandwidth; set bw (like bw = \"100Mbit\") on the link, in its class \"wan\" or in [defaults]"
    );
}

#[test]
fn loss_above_one_suggests_a_percentage() {
    let m = one_error(&with_middle("loss = 50"));
    assert_eq!(
        m,
        "topo.toml:15: link r1-r2: loss 50 is more than 1; a plain number is a fraction in [0, 1]; did you mean \"50%\"?"
    );
}

#[test]
fn wrong_types_say_what_is_expected() {
    let m = one_error(&with_middle(r#"reorder = "yes""#));
    assert!(
        m.contains("link r1-r2: reorder must be true or false, not the string \"yes\""),
        "{m}"
    );
    let m = one_error(&with_middle("queue = 1.5"));
    assert!(
        m.contains("queue must be a whole number of packets like 100 or a size like \"64KB\""),
        "{m}"
    );
    let m = one_error(&with_middle(r#"queue = "100""#));
    assert!(
        m.contains("queue \"100\" has no unit; write 100 (packets, without quotes) or \"100B\""),
        "{m}"
    );
    let m = one_error("link = 3\n");
    assert!(
        m.contains("link must be an array of tables ([[link]] in TOML), not the number 3"),
        "{m}"
    );
}

#[test]
fn shared_links_have_no_directions() {
    let m = one_error(&with_middle("shared = true\na_to_b = { delay = \"2ms\" }"));
    assert!(
        m.contains("a shared link is one pipe for both directions, so it has no a_to_b"),
        "{m}"
    );
}

#[test]
fn bad_routing_metric() {
    let m = one_error(&format!(
        "{}\n[topology]\nrouting = \"hop\"\n",
        with_middle("")
    ));
    assert!(m.ends_with("[topology]: routing \"hop\" is not known (did you mean \"hops\"?); write \"delay\" or \"hops\""), "{m}");
    assert!(m.starts_with("topo.toml:22:"), "{m}");
}

#[test]
fn missing_link_end() {
    let m = one_error(&with_middle("").replace("a = \"h1\"\n", ""));
    assert!(
        m.starts_with("topo.toml:8: link #1: missing key \"a\""),
        "{m}"
    );
}

#[test]
fn parallel_links_are_numbered() {
    let text = with_middle("") + "\n[[link]]\na = \"r2\"\nb = \"r1\"\ndelay = \"1\"\n";
    let m = one_error(&text);
    assert!(
        m.starts_with("topo.toml:24: link #4 (r2-r1): delay \"1\" has no unit"),
        "{m}"
    );
}

#[test]
fn syntax_errors_have_lines() {
    let m = one_error("hosts = [\"h1\"]\nrouters = [\"r1\"\n[[link]]\n");
    assert!(m.starts_with("topo.toml:3: invalid TOML:"), "{m}");
    let e = load_str("{\n  \"hosts\": [\"h1\",]\n}", Format::Json, "topo.json").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Syntax);
    assert!(
        e.to_string().starts_with("topo.json:2: invalid JSON:"),
        "{e}"
    );
}

#[test]
fn json_errors_have_lines_too() {
    let json = r#"{
  "hosts": ["h1", "h2"],
  "link": [
    {"a": "h1", "b": "h2",
     "bw": "10mbps", "delay": "1ms"}
  ]
}"#;
    let e = load_str(json, Format::Json, "topo.json").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("topo.json:5: link h1-h2: bw \"10mbps\" is ambiguous"),
        "{e}"
    );
    let e = load_str(
        &json.replace("\"bw\"", "\"bandwidth\""),
        Format::Json,
        "topo.json",
    )
    .unwrap_err();
    assert!(
        e.to_string().starts_with(
            "topo.json:5: link h1-h2: unknown key \"bandwidth\" in [[link]] (did you mean \"bw\"?)"
        ),
        "{e}"
    );
}

#[test]
fn several_errors_are_reported_together() {
    let text = with_middle("bw = \"fast\"\ndelay = \"-1ms\"\nspeed = 1");
    let e = load_err(&text);
    // Schema problems (unknown keys) come first; values are checked once the schema is clean.
    assert_eq!(e.diagnostics().len(), 1, "{e}");
    let e = load_err(&with_middle(
        "bw = \"fast\"\ndelay = \"-1ms\"\njitter = \"x\"",
    ));
    assert_eq!(e.diagnostics().len(), 3, "{e}");
    let lines: Vec<_> = e.diagnostics().iter().map(|d| d.line).collect();
    assert_eq!(lines, vec![Some(15), Some(16), Some(17)]);
}

#[test]
fn no_hosts() {
    let m = one_error("routers = [\"r1\"]\n");
    assert!(m.starts_with("topo.toml: no hosts;"), "{m}");
}

#[test]
fn a_gap_in_one_direction_names_the_direction() {
    let text = with_middle("").replace("bw = \"1Gbit\"\n", "")
        + "\n[[link]]\na = \"h1\"\nb = \"h2\"\na_to_b = { bw = \"1Mbit\" }\n";
    let e = load_err(&text);
    let last = e.diagnostics().last().unwrap().to_string();
    assert!(
        last.starts_with("topo.toml:20: link h1-h2: b_to_a: no bandwidth;"),
        "{e}"
    );
}

#[test]
fn node_errors_do_not_hide_link_errors() {
    let text = with_middle("")
        .replace("[\"h1\", \"h2\"]", "[\"h1\", \"h2\", \"h1\"]")
        .replace("bw = \"1Gbit\"\n", "");
    let e = load_err(&text);
    assert_eq!(e.kind(), ErrorKind::Duplicate);
    assert!(e.to_string().contains("link r1-r2: no bandwidth"), "{e}");
}

#[test]
fn node_coordinates_are_both_or_neither_and_in_range() {
    let at = |node: &str| {
        with_middle("").replace(
            "routers = [\"r1\", \"r2\"]",
            &format!("routers = [{node}, \"r2\"]"),
        )
    };
    let topo = load_str(
        &at(r#"{ name = "r1", lat = -33.9, lon = 151.2 }"#),
        Format::Toml,
        "topo.toml",
    )
    .unwrap();
    assert_eq!(
        topo.node(topo.node_id("r1").unwrap()).position,
        Some(netloom_topo::Position::Earth {
            lat: -33.9,
            lon: 151.2
        })
    );
    assert_eq!(topo.node(topo.node_id("r2").unwrap()).position, None);
    assert_eq!(
        one_error(&at(r#"{ name = "r1", lat = 91, lon = 0 }"#)),
        "topo.toml:2: router r1: lat = 91 is not in [-90, 90] degrees"
    );
    assert_eq!(
        one_error(&at(r#"{ name = "r1", lon = -181, lat = 0 }"#)),
        "topo.toml:2: router r1: lon = -181 is not in [-180, 180] degrees"
    );
    assert!(one_error(&at(r#"{ name = "r1", lat = 45 }"#))
        .starts_with("topo.toml:2: router r1: lat needs lon too: { name = \"r1\", lat = 48.85"));
    assert!(one_error(&at(r#"{ name = "r1", y = 4 }"#))
        .starts_with("topo.toml:2: router r1: y needs x too"));
    assert_eq!(
        one_error(&at(r#"{ name = "r1", lat = 1, lon = 2, x = 3, y = 4 }"#)),
        "topo.toml:2: router r1: a node is on the Earth (lat, lon) or on a plane (x, y), not both"
    );
    assert_eq!(
        one_error(&at(r#"{ name = "r1", x = inf, y = 4 }"#)),
        "topo.toml:2: router r1: x = inf is not a finite number"
    );
    assert!(one_error(&at(r#"{ name = "r1", lat = "north", lon = 2 }"#)).contains("lat"));
}

#[test]
fn kernel_routers_per_router_and_for_the_whole_topology() {
    let load = |nodes: &str, meta: &str| {
        let text = with_middle("").replacen(NODES, nodes, 1) + meta;
        let topo = load_str(&text, Format::Toml, "topo.toml").unwrap();
        ["h1", "r1", "r2"].map(|n| topo.node(topo.node_id(n).unwrap()).kernel)
    };
    let own = "hosts = [\"h1\", \"h2\"]\nrouters = [{ name = \"r1\", kernel = true }, \"r2\"]\n";
    assert_eq!(load(NODES, ""), [false, false, false]);
    assert_eq!(load(own, ""), [false, true, false]);
    let all = "\n[topology]\nkernel_routers = true\n";
    assert_eq!(load(NODES, all), [false, true, true]);
    let except =
        "hosts = [\"h1\", \"h2\"]\nrouters = [\"r1\", { name = \"r2\", kernel = false }]\n";
    assert_eq!(load(except, all), [false, true, false]);
    // `netloom check` names them.
    let text = with_middle("").replacen(NODES, own, 1);
    let summary = netloom_topo::summarize(&load_str(&text, Format::Toml, "t.toml").unwrap());
    assert!(
        summary
            .to_string()
            .contains("\nrouters   2 (1 kernel: r1)\n"),
        "{summary}"
    );
}

#[test]
fn bad_kernel_keys() {
    let nodes = |routers: &str| {
        with_middle("").replacen(
            NODES,
            &format!("hosts = [\"h1\", \"h2\"]\nrouters = [{routers}, \"r2\"]\n"),
            1,
        )
    };
    let m = one_error(&nodes(r#"{ name = "r1", kernel = "yes" }"#));
    assert!(
        m.starts_with("topo.toml:2: ")
            && m.contains("kernel must be true or false, not the string \"yes\""),
        "{m}"
    );
    let m = one_error(&nodes(r#"{ name = "r1", kernal = true }"#));
    assert!(
        m.contains("unknown key \"routers.kernal\" (did you mean \"kernel\"?)"),
        "{m}"
    );
    let m = one_error(&format!(
        "{}\n[topology]\nkernel_router = true\n",
        with_middle("")
    ));
    assert!(m.contains("(did you mean \"kernel_routers\"?)"), "{m}");
    let m = one_error(&with_middle("").replacen(
        NODES,
        "hosts = [{ name = \"h1\", kernel = true }, \"h2\"]\nrouters = [\"r1\", \"r2\"]\n",
        1,
    ));
    assert!(
        m.starts_with("topo.toml:1: host h1: ") && m.contains("`kernel` applies to routers only"),
        "{m}"
    );
}
