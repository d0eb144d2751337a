//! The web view on two 200-node networks run live, in headless Chromium (root, namespaces, TUN,
//! `chromium`, `iperf3`): Topology Zoo's Cogentco drawn where its cities are, and a generated
//! Internet-like graph laid out by force. For each, at the view that fits the whole network no
//! two shown labels overlap (the page counts them from the boxes the browser drew) and a
//! zoomed-in view shows more of them; a screenshot taken before traffic has no heat colour in
//! the graph, and one taken while iperf3 loads a path has it along that path's links and almost
//! nowhere else. The screenshots are kept in the target directory (`web-zoo/`).

use crate::live_common::{self, Lab};
use crate::web_common::{self, attributes, free_port};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The browser's window: the graph gets what the header and the side panel leave.
const WINDOW: (u32, u32) = (1400, 900);

/// Where this test keeps its screenshots: beside the test binary, in the target directory.
fn artifacts() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().join("web-zoo");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Headless Chromium on `url` in a window `height` pixels tall, its scripts given 4 s of virtual
/// time, with `output` (`--dump-dom`, or `--screenshot=FILE`); what it printed.
///
/// A screenshot is of a page as tall as the window, but Chromium lays the page out shorter (the
/// window less its frame) and grows it just before taking the picture; the page refits. So a
/// DOM to compare with a screenshot is taken in a window taller by the frame (`full_size_dom`).
fn chromium(url: &str, output: &str, height: u32) -> String {
    let window = format!("--window-size={},{height}", WINDOW.0);
    web_common::chromium(
        url,
        Duration::from_secs(4),
        &["--hide-scrollbars", &window, output],
    )
}

/// The body's `data-KEY`.
fn body_data(dom: &str, key: &str) -> String {
    let body = dom
        .split("<body")
        .nth(1)
        .unwrap()
        .split('>')
        .next()
        .unwrap();
    attributes(body, &format!("data-{key}"))
        .first()
        .unwrap_or_else(|| panic!("the page says no data-{key}: <body{body}>"))
        .clone()
}

/// The body's `data-KEY`, as a number.
fn body_number(dom: &str, key: &str) -> f64 {
    body_data(dom, key).parse().unwrap()
}

/// The DOM of `url` laid out in a page of the window's full size, as its screenshot is: the
/// first load measures the browser's frame, the second is taken in a window taller by it.
fn full_size_dom(url: &str) -> String {
    let first = chromium(url, "--dump-dom", WINDOW.1);
    let viewport = body_data(&first, "viewport");
    let height: u32 = viewport.split('x').nth(1).unwrap().parse().unwrap();
    let dom = chromium(url, "--dump-dom", 2 * WINDOW.1 - height);
    assert_eq!(
        body_data(&dom, "viewport"),
        format!("{}x{}", WINDOW.0, WINDOW.1),
        "a page of the window's size"
    );
    dom
}

/// The names of the nodes whose labels are shown.
fn labelled(dom: &str) -> std::collections::BTreeSet<String> {
    dom.split("<text")
        .skip(1)
        .filter_map(|t| {
            let (attrs, rest) = t.split_once('>')?;
            let name = rest.split("</text>").next()?;
            (!attrs.contains("display=\"none\"")).then(|| name.to_string())
        })
        .collect()
}

/// Numbers separated by spaces or commas in attribute `attr` of the first element that has it.
fn numbers(dom: &str, attr: &str) -> Vec<f64> {
    attributes(dom, attr)[0]
        .split([' ', ','])
        .map(|n| n.parse().unwrap())
        .collect()
}

/// A screenshot, decoded: width, height and RGB bytes.
struct Shot {
    w: usize,
    h: usize,
    rgb: Vec<u8>,
}

impl Shot {
    fn read(path: &Path) -> Shot {
        let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        let channels = info.color_type.samples();
        assert!(channels >= 3, "a colour screenshot: {:?}", info.color_type);
        let rgb = buf[..info.buffer_size()]
            .chunks(channels)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect();
        Shot {
            w: info.width as usize,
            h: info.height as usize,
            rgb,
        }
    }

    fn pixel(&self, x: usize, y: usize) -> [u8; 3] {
        let i = (y * self.w + x) * 3;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    /// The pixels inside `area` (left, top, width, height) that `test` picks.
    fn pick(&self, area: [f64; 4], test: impl Fn([u8; 3]) -> bool) -> Vec<(usize, usize)> {
        let [left, top, w, h] = area.map(|v| v.max(0.0) as usize);
        let mut out = Vec::new();
        for y in top..(top + h).min(self.h) {
            for x in left..(left + w).min(self.w) {
                if test(self.pixel(x, y)) {
                    out.push((x, y));
                }
            }
        }
        out
    }
}

/// A heat colour of the legend's ramp (yellow through orange to red): red strong, blue weak.
/// Idle links are grey, dots grey or blue, labels near black, the background near white.
fn heat([r, g, b]: [u8; 3]) -> bool {
    r >= 170 && b <= 110 && r as i32 - b as i32 >= 100 && g <= 235
}

/// Anything but the graph's background (#fafafa).
fn ink([r, g, b]: [u8; 3]) -> bool {
    r < 235 || g < 235 || b < 235
}

/// A link as the page drew it, in the screenshot's pixels: its two ends.
type Segment = ((f64, f64), (f64, f64));

/// Where the page drew link `label` in the window, from its line's layout coordinates, the
/// SVG's viewBox and the graph's place in the window.
fn segment(dom: &str, label: &str, viewbox: &[f64], graph: &[f64]) -> Segment {
    let line = dom
        .split("<line ")
        .find(|l| {
            l.split('>')
                .next()
                .unwrap()
                .contains(&format!("data-link=\"{label}\""))
        })
        .unwrap_or_else(|| panic!("link {label} is drawn"));
    let line = format!(" {}", line.split('>').next().unwrap());
    let k = graph[2] / viewbox[2];
    let at = |x: &str, y: &str| {
        (
            graph[0] + (numbers(&line, x)[0] - viewbox[0]) * k,
            graph[1] + (numbers(&line, y)[0] - viewbox[1]) * k,
        )
    };
    (at("x1", "y1"), at("x2", "y2"))
}

/// The distance from pixel `p` to segment `s`.
fn distance(p: (f64, f64), ((ax, ay), (bx, by)): Segment) -> f64 {
    let (dx, dy) = (bx - ax, by - ay);
    let t = (((p.0 - ax) * dx + (p.1 - ay) * dy) / (dx * dx + dy * dy).max(1e-9)).clamp(0.0, 1.0);
    (p.0 - ax - t * dx).hypot(p.1 - ay - t * dy)
}

/// What a layout is checked with: the run, the page's address, the name of its screenshots,
/// the labels it must show at fit, the node to zoom in on and the labels that zoom must add.
struct Case<'a> {
    lab: &'a mut Lab,
    port: u16,
    name: &'a str,
    layout: &'a str,
    fit_labels: f64,
    zoom_at: &'a str,
    zoom_gains: usize,
}

/// Labels, then heat, for one layout; h1 and h2 are the lab's hosts, iperf3 runs between them.
fn check(case: Case) {
    let page = format!("http://127.0.0.1:{}/", case.port);
    let dir = artifacts();
    // At fit: labels shown, none overlapping.
    let fit = full_size_dom(&page);
    assert!(
        fit.contains(&format!("data-layout=\"{}\"", case.layout)),
        "{}",
        case.name
    );
    let (fit_shown, fit_overlaps) = (
        body_number(&fit, "labels"),
        body_number(&fit, "label-overlaps"),
    );
    let nodes = body_number(&fit, "nodes");
    assert!(nodes >= 190.0, "{}: {nodes} nodes drawn", case.name);
    assert_eq!(
        fit_overlaps, 0.0,
        "{}: overlapping labels at fit",
        case.name
    );
    assert!(
        fit_shown >= case.fit_labels && fit_shown <= nodes,
        "{}: {fit_shown} of {nodes} labels shown at fit",
        case.name
    );
    // Four times closer: labels that had no room at fit have it now (where fit hid many), and
    // still none overlap.
    let zoomed = full_size_dom(&format!("{page}?zoom=4&at={}", case.zoom_at));
    assert_eq!(body_number(&zoomed, "zoom"), 4.0);
    assert_eq!(body_number(&zoomed, "label-overlaps"), 0.0, "{}", case.name);
    let (at_fit, at_zoom) = (labelled(&fit), labelled(&zoomed));
    assert_eq!(at_fit.len() as f64, fit_shown);
    let gained: Vec<&String> = at_zoom.difference(&at_fit).collect();
    assert!(
        gained.len() >= case.zoom_gains,
        "{}: zoomed in on {}, labels for {gained:?} only, {} shown at fit",
        case.name,
        case.zoom_at,
        at_fit.len()
    );
    let graph = numbers(&fit, "data-graph-box");
    let viewbox = numbers(&fit, "viewBox");
    let area = [graph[0], graph[1], graph[2], graph[3]];
    // Before any traffic: a drawing, and no heat in it.
    let idle = dir.join(format!("{}-idle.png", case.name));
    chromium(&page, &format!("--screenshot={}", idle.display()), WINDOW.1);
    let shot = Shot::read(&idle);
    assert_eq!((shot.w, shot.h), (WINDOW.0 as usize, WINDOW.1 as usize));
    let drawn = shot.pick(area, ink).len();
    assert!(drawn > 2_000, "{}: {drawn} pixels drawn", case.name);
    let cold = shot.pick(area, heat).len();
    assert!(
        cold < 20,
        "{}: {cold} heat pixels with no traffic",
        case.name
    );
    // iperf3 at 8 Mbit/s from h1 to h2 over the 10 Mbit/s links the case set up.
    case.lab.spawn("h2", &["iperf3", "-s", "-1"]);
    case.lab.wait_listening("h2", 5201);
    case.lab.spawn(
        "h1",
        &[
            "iperf3", "-c", "h2", "-u", "-b", "8M", "-t", "60", "-l", "1200",
        ],
    );
    std::thread::sleep(Duration::from_secs(4));
    let loaded = dir.join(format!("{}-loaded.png", case.name));
    chromium(
        &page,
        &format!("--screenshot={}", loaded.display()),
        WINDOW.1,
    );
    // The links that carried it, by the run's own counters.
    let out = case.lab.control(&["stats", "--json"]);
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut hot: Vec<String> = stats["pipes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["bytes_out"].as_u64().unwrap() > 1_000_000)
        .map(|p| p["link"].as_str().unwrap().to_string())
        .collect();
    hot.sort();
    hot.dedup();
    assert!(hot.len() >= 3, "{}: iperf3's path {hot:?}", case.name);
    let segments: Vec<Segment> = hot
        .iter()
        .map(|l| segment(&fit, l, &viewbox, &graph))
        .collect();
    let shot = Shot::read(&loaded);
    let heated = shot.pick(area, heat);
    // Along every hot link longer than its ends' dots, heat within 4 px of most of its middle
    // (labels, drawn over links, and other nodes' dots may hide some of it).
    for (label, &s) in hot.iter().zip(&segments) {
        let length = (s.1 .0 - s.0 .0).hypot(s.1 .1 - s.0 .1);
        if length < 30.0 {
            continue;
        }
        let samples = 20;
        let near = (0..samples)
            .map(|i| 0.15 + 0.7 * i as f64 / (samples - 1) as f64)
            .filter(|t| {
                let p = (
                    s.0 .0 + t * (s.1 .0 - s.0 .0),
                    s.0 .1 + t * (s.1 .1 - s.0 .1),
                );
                heated
                    .iter()
                    .any(|&(x, y)| (x as f64 - p.0).hypot(y as f64 - p.1) <= 4.0)
            })
            .count();
        assert!(
            near >= samples * 6 / 10,
            "{}: heat at {near} of {samples} points along {label} ({}, kept)",
            case.name,
            loaded.display()
        );
    }
    // And almost nowhere else: idle links stay grey.
    let astray = heated
        .iter()
        .filter(|&&(x, y)| {
            segments
                .iter()
                .all(|&s| distance((x as f64, y as f64), s) > 10.0)
        })
        .count();
    assert!(
        heated.len() >= 200 && astray * 50 <= heated.len(),
        "{}: {} heat pixels, {astray} away from {hot:?} ({})",
        case.name,
        heated.len(),
        loaded.display()
    );
    eprintln!(
        "{}: {fit_shown} of {nodes} labels at fit, {} at zoom 4 on {} ({} more); {cold} heat \
         pixels idle, {} loaded along {hot:?}, {astray} away from it; screenshots in {}",
        case.name,
        at_zoom.len(),
        case.zoom_at,
        gained.len(),
        heated.len(),
        dir.display()
    );
}

/// Starts the lab's run with the web view on a free port, its output read on threads as it
/// comes: a 200-node run's final report is larger than a pipe holds, and a run that cannot
/// write it never exits.
fn start_with_web(lab: &mut Lab) -> u16 {
    let port = free_port();
    lab.start(&["--web", &format!("127.0.0.1:{port}")]);
    let child = lab.child.as_mut().unwrap();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    port
}

/// Stops the run as `netloom stop` does and waits for it to exit.
fn stop(lab: &mut Lab) {
    lab.stop_command();
    let status = lab.child.take().unwrap().wait().unwrap();
    assert!(status.success(), "the run ended with {status}");
}

/// The path of a file under the workspace's crates.
fn crate_file(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path)
}

/// Runs `netloom ARGS`, which must succeed.
fn netloom_ok(args: &[&str]) {
    let out = live_common::netloom().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "netloom {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn cogentco_stays_readable_and_shows_its_heat_where_its_cities_are() {
    require_live!("chromium", "iperf3");
    let dir = std::env::temp_dir().join(format!("netloom-web-zoo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cogentco.toml");
    let zoo = crate_file("netloom-topo/tests/data/topology-zoo/Cogentco.graphml");
    // Routers only (the file has no hosts); the lab's two are added below.
    netloom_ok(&[
        "convert",
        "-o",
        file.to_str().unwrap(),
        zoo.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&file).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    // The lab's hosts, at both ends of the transatlantic Washington - Paris link, by links as
    // slow as it is made below: iperf3 loads the three of them.
    let text = format!(
        "{text}\n[[hosts]]\nname = \"h1\"\n\n[[hosts]]\nname = \"h2\"\n\n\
         [[link]]\na = \"h1\"\nb = \"Washington\"\nbw = \"10Mbit\"\ndelay = \"1ms\"\n\n\
         [[link]]\na = \"h2\"\nb = \"Paris\"\nbw = \"10Mbit\"\ndelay = \"1ms\"\n"
    );
    let mut lab = Lab::new("zoo", &text);
    let port = start_with_web(&mut lab);
    lab.control(&["link", "set", "Washington", "Paris", "bw=10Mbit"]);
    check(Case {
        lab: &mut lab,
        port,
        name: "cogentco",
        layout: "geographic",
        // Europe's cities crowd: fit names the spread-out ones, a zoom on Frankfurt many more.
        fit_labels: 15.0,
        zoom_at: "Frankfurt",
        zoom_gains: 10,
    });
    stop(&mut lab);
}

#[test]
fn a_generated_200_node_network_stays_readable_and_shows_its_heat() {
    require_live!("chromium", "iperf3");
    let dir = std::env::temp_dir().join(format!("netloom-web-gen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("inet.toml");
    // Internet-like, no positions: 198 routers and 2 hosts, every link 10 Mbit/s so that
    // iperf3's 8 Mbit/s heats each link of its path alike.
    netloom_ok(&[
        "gen",
        "inet",
        "--routers",
        "198",
        "--stubs",
        "20",
        "--hosts",
        "2",
        "--class",
        "client-stub=10Mbit/1ms",
        "--class",
        "stub-stub=10Mbit/1ms",
        "--class",
        "stub-transit=10Mbit/1ms",
        "--class",
        "transit-transit=10Mbit/1ms",
        "-o",
        file.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&file).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let mut lab = Lab::new("gen", &text);
    let port = start_with_web(&mut lab);
    check(Case {
        lab: &mut lab,
        port,
        name: "inet",
        layout: "force",
        // The force layout spreads 200 nodes with short names so that nearly all fit at fit
        // (199 of 200 in a 1400 x 900 window); the zoom on the hub must still overlap none.
        fit_labels: 180.0,
        zoom_at: "t1",
        zoom_gains: 0,
    });
    stop(&mut lab);
}
