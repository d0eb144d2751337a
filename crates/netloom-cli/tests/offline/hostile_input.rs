//! Hostile files and numbers given to the `netloom` binary (docs/limits.md, "Files and
//! numbers"): devices, FIFOs, directories and oversized files in every place netloom reads one,
//! entity expansion in GraphML, NaN and out-of-range numbers. Each must be refused quickly with
//! an error naming the file or flag, the value and the limit; none may hang, panic or read
//! gigabytes.

use crate::common::{bin, TempDir};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a run gave: exit code and standard error.
struct Ran {
    code: Option<i32>,
    stderr: String,
}

impl Ran {
    /// A generated case's outcome: success, or exit 2 with one error that starts with one of
    /// `starts`; never another exit code, never a panic. `case` names it in failures.
    fn valid_or_one_clear_error(&self, starts: &[&str], case: &str) {
        match self.code {
            Some(0) => {}
            Some(2) => assert!(
                starts.iter().any(|s| self.stderr.starts_with(s)),
                "{case}: the error must start with one of {starts:?}:\n{}",
                self.stderr
            ),
            code => panic!("{case}: exit {code:?}:\n{}", self.stderr),
        }
        assert!(
            !self.stderr.contains("panicked"),
            "{case}:\n{}",
            self.stderr
        );
    }
}

/// The address space every run here gets: any input under 1 MB must be handled in under 1 GB
/// (a run that needs more fails to allocate and aborts, which fails the test).
const MEMORY_LIMIT_KB: u64 = 1 << 20;

/// Runs the binary in `dir` with at most [`MEMORY_LIMIT_KB`] of address space, killed after
/// 20 s: a hang fails the test instead of stalling it.
fn run_in(dir: &Path, args: &[&str]) -> Ran {
    let err = dir.join(".stderr");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {MEMORY_LIMIT_KB} && exec \"$0\" \"$@\""))
        .arg(bin())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("run netloom");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("netloom {} hung (killed after 20 s)", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        code: status.code(),
        stderr: std::fs::read_to_string(&err).unwrap(),
    }
}

/// Runs `args` in `dir` and expects exit code 2 (bad input) with every one of `words` in the
/// error.
fn refused(dir: &Path, args: &[&str], words: &[&str]) {
    let ran = run_in(dir, args);
    assert_eq!(
        ran.code,
        Some(2),
        "netloom {} should be refused:\n{}",
        args.join(" "),
        ran.stderr
    );
    for word in words {
        assert!(
            ran.stderr.contains(word),
            "netloom {}: the error lacks {word:?}:\n{}",
            args.join(" "),
            ran.stderr
        );
    }
}

const TWO_HOSTS: &str =
    "hosts = [\"h1\", \"h2\"]\n\n[[link]]\na = \"h1\"\nb = \"h2\"\nbw = \"10Mbit\"\n";

// ---------------------------------------------------------------------------------------------
// Reads: devices, FIFOs, directories, large files

#[test]
fn topology_files_that_are_not_regular_files_are_refused_with_the_limit() {
    let dir = TempDir::new("hostile-devices");
    let d = dir.path();
    for (file, format, what) in [
        ("/dev/zero", "toml", "a character device"),
        ("/dev/urandom", "graphml", "a character device"),
        ("/dev/zero", "gml", "a character device"),
        ("/dev/urandom", "modelnet", "a character device"),
        ("/dev/zero", "inet", "a character device"),
        ("/", "json", "a directory"),
    ] {
        refused(
            d,
            &["check", file, "--format", format],
            &[file, what, "128 MiB"],
        );
    }
    let fifo = d.join("fifo.toml");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    refused(
        d,
        &["check", "fifo.toml"],
        &["fifo.toml", "a FIFO", "128 MiB"],
    );
    refused(
        d,
        &["convert", "fifo.toml", "-o", "x.dot"],
        &["fifo.toml", "a FIFO"],
    );
}

#[test]
fn a_topology_file_above_the_limit_is_refused_by_its_size_without_reading_it() {
    let dir = TempDir::new("hostile-large");
    // Sparse: 129 MiB that take no disk, and no time unless read.
    let big = std::fs::File::create(dir.path().join("big.toml")).unwrap();
    big.set_len(129 << 20).unwrap();
    let started = Instant::now();
    refused(
        dir.path(),
        &["check", "big.toml"],
        &["big.toml", "135266304 bytes", "above the limit of 128 MiB"],
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn trace_and_profile_files_that_are_devices_are_refused_with_the_limit() {
    let dir = TempDir::new("hostile-data");
    let trace = dir.write("trace.toml", &format!("{TWO_HOSTS}trace = \"/dev/zero\"\n"));
    let trace = trace.to_str().unwrap();
    refused(
        dir.path(),
        &["check", trace],
        &["/dev/zero", "a character device", "a trace file", "64 MiB"],
    );
    let profile = dir.write(
        "profile.toml",
        &format!("{TWO_HOSTS}wireless = \"802.11b\"\nmac_profile = \"/dev/urandom\"\n"),
    );
    refused(
        dir.path(),
        &["check", profile.to_str().unwrap()],
        &["/dev/urandom", "a MAC delay profile", "16 MiB"],
    );
}

/// A calibration, a cluster file and a sim report go through the same bounded reader: a
/// device was read until memory ran out, and a FIFO blocked forever.
#[test]
fn calibrations_cluster_files_and_reports_that_are_devices_or_fifos_are_refused() {
    let dir = TempDir::new("hostile-side");
    let topo = dir.write("t.toml", &format!("{TWO_HOSTS}delay = \"1ms\"\n"));
    let topo = topo.to_str().unwrap();
    let fifo = dir.path().join("fifo.json");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let fifo = fifo.to_str().unwrap();
    for (file, what) in [("/dev/zero", "a character device"), (fifo, "a FIFO")] {
        refused(
            dir.path(),
            &["check", topo, "--capacity", "--calibration", file],
            &[file, what, "a calibration file", "1 MiB"],
        );
        refused(
            dir.path(),
            &[
                "sim",
                topo,
                "--traffic",
                "pattern=all-to-all source=cbr rate=1Mbit",
                "--cluster",
                file,
            ],
            &[file, what, "a cluster file", "16 MiB"],
        );
        refused(
            dir.path(),
            &["web", "--report", file],
            &[file, what, "a sim report", "512 MiB"],
        );
    }
}

#[test]
fn observed_weights_and_assignments_that_are_devices_are_refused() {
    let dir = TempDir::new("hostile-weights");
    let topo = dir.write("t.toml", &format!("{TWO_HOSTS}delay = \"1ms\"\n"));
    let topo = topo.to_str().unwrap();
    refused(
        dir.path(),
        &[
            "partition",
            topo,
            "--cores",
            "2",
            "--weights",
            "observed:/dev/zero",
        ],
        &["/dev/zero", "a character device", "64 MiB"],
    );
    refused(
        dir.path(),
        &[
            "sim",
            topo,
            "--duration",
            "1s",
            "--traffic",
            "pattern=all-to-all source=cbr rate=1Mbit",
            "--assignment",
            "/dev/urandom",
        ],
        &["/dev/urandom", "a character device", "64 MiB"],
    );
}

// ---------------------------------------------------------------------------------------------
// GraphML entity expansion

/// A GraphML file whose one entity of `entity_kb` KB is referred to `refs` times.
fn wide_entities(entity_kb: usize, refs: usize) -> String {
    format!(
        "<?xml version=\"1.0\"?>\n<!DOCTYPE graphml [<!ENTITY e \"{}\">]>\n\
         <graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\">\n\
         <key id=\"d0\" for=\"node\" attr.name=\"label\" attr.type=\"string\"/>\n\
         <graph edgedefault=\"undirected\">\n<node id=\"a\"><data key=\"d0\">{}</data></node>\n\
         <node id=\"b\"/>\n<edge source=\"a\" target=\"b\"/>\n</graph>\n</graphml>\n",
        "x".repeat(entity_kb * 1000),
        "&e;".repeat(refs)
    )
}

#[test]
fn graphml_entities_that_expand_wide_are_refused_by_the_expansion_budget() {
    let dir = TempDir::new("hostile-entities");
    // 100 KB × 700 = 70 MB: above the 16 MiB budget, yet small enough that the code before the
    // budget expanded it (and went on) instead of exhausting memory.
    dir.write("wide.graphml", &wide_entities(100, 700));
    refused(
        dir.path(),
        &["check", "wide.graphml", "--hosts-per-router", "1"],
        &[
            "wide.graphml",
            "entity references would expand to 70000000 bytes",
            "16 MiB",
        ],
    );
    // The case: 350 KB that would expand to 5 GB, refused at once.
    let text = wide_entities(100, 50_000);
    assert!(text.len() < 350_000);
    dir.write("huge.graphml", &text);
    let started = Instant::now();
    refused(
        dir.path(),
        &["check", "huge.graphml", "--hosts-per-router", "1"],
        &["huge.graphml", "would expand to 5000000000 bytes"],
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // A few small entities, as tools write them, still load.
    dir.write("ok.graphml", &wide_entities(1, 3));
    let ran = run_in(
        dir.path(),
        &["check", "ok.graphml", "--hosts-per-router", "1"],
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
}

// ---------------------------------------------------------------------------------------------
// Validation cost: linear in the size of the file

/// Checks the file `name` with `text` and returns how long it took (it must be refused).
fn check_time(dir: &TempDir, name: &str, text: &str, words: &[&str]) -> Duration {
    dir.write(name, text);
    let started = Instant::now();
    refused(dir.path(), &["check", name], words);
    started.elapsed()
}

#[test]
fn many_unknown_keys_and_schedule_events_are_validated_in_linear_time() {
    let dir = TempDir::new("hostile-linear");
    // The code before took 14 s for 50,000 keys in TOML and 159 s in JSON (release build):
    // every error's line was counted from the top of the file, and every JSON path walked
    // from its start.
    let n = 50_000;
    let keys: String = (0..n).map(|i| format!("\"unknown{i}\": 1,\n")).collect();
    let json = format!(
        "{{\"hosts\": [\"h1\", \"h2\"],\n\"topology\": {{\n{keys}\"name\": \"x\"}},\n\
         \"link\": [{{\"a\": \"h1\", \"b\": \"h2\"}}]}}\n"
    );
    let took = check_time(
        &dir,
        "keys.json",
        &json,
        &[
            "keys.json:3: [topology]: unknown key \"unknown0\"",
            "and 49980 more errors",
        ],
    );
    assert!(
        took < Duration::from_secs(10),
        "{n} unknown keys took {took:?}"
    );
    let keys: String = (0..n).map(|i| format!("unknown{i} = 1\n")).collect();
    let toml = format!("hosts = [\"h1\", \"h2\"]\n[topology]\n{keys}");
    let took = check_time(&dir, "keys.toml", &toml, &["keys.toml:3: [topology]"]);
    assert!(
        took < Duration::from_secs(10),
        "{n} unknown keys took {took:?}"
    );
    // Every state of a schedule used to be found by going through every event: 19 s for
    // 25,000 events.
    let n = 20_000;
    let events: String = (0..n)
        .map(|i| {
            format!(
                "  {{ at = \"{}ms\", set = {{ delay = \"{}ms\" }} }},\n",
                i + 1,
                i % 50
            )
        })
        .collect();
    let schedule = format!("{TWO_HOSTS}delay = \"1ms\"\nschedule = {{ events = [\n{events}] }}\n");
    dir.write("schedule.toml", &schedule);
    let started = Instant::now();
    let ran = run_in(dir.path(), &["check", "schedule.toml"]);
    let took = started.elapsed();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(took < Duration::from_secs(10), "{n} events took {took:?}");
}

// ---------------------------------------------------------------------------------------------
// Numbers: NaN, infinities and ranges

#[test]
fn nan_and_infinite_numbers_in_a_topology_are_refused_with_the_valid_range() {
    let dir = TempDir::new("hostile-nan");
    // Before, TOML's nan and inf became null, which reads as absent: no loss at all.
    for (i, (line, words)) in [
        (
            "loss = nan",
            &["loss \"NaN\" is not a probability", "[0, 1]"][..],
        ),
        (
            "loss = inf",
            &["loss \"inf\" is not a probability", "[0, 1]"],
        ),
        ("loss = -inf", &["loss \"-inf\"", "[0, 1]"]),
        ("duplicate = nan", &["duplicate \"NaN\"", "[0, 1]"]),
        (
            "aqm = \"red\"\nred = { weight = nan }",
            &["red.weight NaN is not a number; valid: (0, 1]"],
        ),
        (
            "aqm = \"red\"\nred = { min_th = inf, max_th = 30 }",
            &["red.min_th inf is out of range; valid: (0, ∞)"],
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let name = format!("nan{i}.toml");
        dir.write(&name, &format!("{TWO_HOSTS}delay = \"1ms\"\n{line}\n"));
        let mut expected = vec![format!("{name}:")];
        expected.extend(words.iter().map(|w| w.to_string()));
        let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
        refused(dir.path(), &["check", &name], &expected);
    }
}

#[test]
fn coordinates_that_imply_an_absurd_delay_are_refused_not_saturated() {
    let dir = TempDir::new("hostile-far");
    // Before: a delay of 584 years. After: refused, with the delay and the limit.
    dir.write("far.inet", "2 1\n0 0 0\n1 1e300 0\n0 1 1\n");
    refused(
        dir.path(),
        &["check", "far.inet", "--hosts-per-router", "1"],
        &[
            "far.inet",
            "link r0-r1",
            "gives a delay of 5.0e294 s",
            "above the limit of 60s",
        ],
    );
    dir.write("near.inet", "2 1\n0 0 0\n1 300 400\n0 1 1\n");
    for speed in ["nan", "-1", "0", "inf", "400000"] {
        refused(
            dir.path(),
            &[
                "check",
                "near.inet",
                "--hosts-per-router",
                "1",
                &format!("--km-per-s={speed}"),
            ],
            &["signal speed (km/s)", "valid: (0, 299792.458]"],
        );
    }
}

#[test]
fn flags_with_nan_or_out_of_range_numbers_are_refused_with_the_range() {
    let dir = TempDir::new("hostile-flags");
    let topo = dir.write("t.toml", &format!("{TWO_HOSTS}delay = \"1ms\"\n"));
    let topo = topo.to_str().unwrap();
    for value in ["-1", "NaN", "inf", "0.5", "1000"] {
        refused(
            dir.path(),
            &[
                "partition",
                topo,
                "--cores",
                "2",
                &format!("--imbalance={value}"),
            ],
            &["--imbalance", "valid: [1, 100]"],
        );
    }
    // Refused while the arguments are read, before anything runs (no root, no namespaces).
    for value in ["NaN", "-1", "1.5", "-inf"] {
        refused(
            dir.path(),
            &[
                "run",
                "missing.toml",
                &format!("--max-late-fraction={value}"),
            ],
            &["--max-late-fraction", "valid: [0, 1]"],
        );
    }
}

#[test]
fn gen_refuses_an_output_name_whose_extension_is_not_a_format() {
    let dir = TempDir::new("hostile-gen");
    for name in ["x.exe", "x", "x.graphml"] {
        refused(
            dir.path(),
            &["gen", "dumbbell", "-o", name],
            &[name, "must end in .toml or .json"],
        );
        assert!(!dir.path().join(name).exists(), "{name} was written");
    }
    let ran = run_in(dir.path(), &["gen", "dumbbell", "-o", "x.json"]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
}

// ---------------------------------------------------------------------------------------------
// Errors quote what the user wrote, not the contents of the files it names

#[test]
fn errors_about_trace_and_profile_files_never_quote_their_contents() {
    let dir = TempDir::new("hostile-secret");
    let secret = "root:$y$j9T$SECRETHASH:19000:0:99999:7:::";
    dir.write(
        "shadow",
        &format!("{secret}\ndaemon:*:19000:0:99999:7:::\n"),
    );
    dir.write("late", "1\n2\nSECRETHASH 0.5\n");
    for (key, file, line, expected) in [
        ("trace", "shadow", 1, "not a whole number of milliseconds"),
        ("trace", "late", 3, "not a whole number of milliseconds"),
        ("mac_profile", "shadow", 1, "not a line of a profile"),
        ("mac_profile", "late", 1, "not a line of a profile"),
    ] {
        let wireless = if key == "mac_profile" {
            "wireless = \"802.11b\"\n"
        } else {
            ""
        };
        let name = format!("{key}-{file}.toml");
        dir.write(
            &name,
            &format!("{TWO_HOSTS}delay = \"1ms\"\n{wireless}{key} = \"{file}\"\n"),
        );
        let ran = run_in(dir.path(), &["check", &name]);
        assert_eq!(ran.code, Some(2), "{}", ran.stderr);
        // What the user wrote (the key and the path) and where; nothing of the file.
        let at = format!("{key} \"{file}\": {file}: line {line}: {expected}");
        assert!(ran.stderr.contains(&at), "want {at}\n{}", ran.stderr);
        assert!(!ran.stderr.contains("SECRET"), "{}", ran.stderr);
    }
}

// ---------------------------------------------------------------------------------------------
// Schedules too fine to keep

#[test]
fn schedules_too_fine_to_keep_are_refused_with_the_minimum() {
    let dir = TempDir::new("hostile-fine");
    for (i, schedule) in [
        // Before, this loaded, and a live engine spun at real-time priority on it.
        "{ every = \"1ns\", events = [{ at = \"0s\", set = { delay = \"2ms\" } }] }",
        "{ events = [{ at = \"1ms\", set = { delay = \"2ms\" } }, { at = \"1500us\", set = { delay = \"3ms\" } }] }",
        "{ every = \"10s\", events = [{ from = \"1s\", to = \"1000100us\", set = { up = false } }] }",
    ]
    .into_iter()
    .enumerate()
    {
        let name = format!("fine{i}.toml");
        dir.write(&name, &format!("{TWO_HOSTS}delay = \"1ms\"\nschedule = {schedule}\n"));
        refused(
            dir.path(),
            &["check", &name],
            &[&name, "schedule:", "changes must be at least 1ms apart"],
        );
    } // A Markov graph whose state lasts a nanosecond changes as often.
    dir.write(
        "markov.toml",
        &format!(
            "{TWO_HOSTS}delay = \"1ms\"\n[link.markov]\nstart = \"a\"\n\
             states.a = {{ dwell = \"1ns\", next = {{ a = 1 }} }}\n"
        ),
    );
    refused(
        dir.path(),
        &["check", "markov.toml"],
        &[
            "markov.toml",
            "state \"a\": a dwell time below 1ms",
            "at least 1ms",
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// Generated hostile cases, per format and per flag

/// A small valid file of each format netloom reads, with its extension and whether it needs
/// hosts attached (`--hosts-per-router`).
const FORMATS: &[(&str, bool, &str)] = &[
    (
        "toml",
        false,
        "hosts = [\"h1\", \"h2\"]\n\n[[link]]\na = \"h1\"\nb = \"h2\"\nbw = \"10Mbit\"\ndelay = \"1ms\"\nloss = 0.01\n",
    ),
    (
        "json",
        false,
        "{\"hosts\": [\"h1\", \"h2\"],\n\"link\": [{\"a\": \"h1\", \"b\": \"h2\", \"bw\": \"10Mbit\",\n\"delay\": \"1ms\", \"loss\": 0.01}]}\n",
    ),
    (
        "graphml",
        true,
        "<?xml version=\"1.0\"?>\n<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\">\n\
         <key attr.name=\"Latitude\" for=\"node\" id=\"d1\"/>\n\
         <key attr.name=\"Longitude\" for=\"node\" id=\"d2\"/>\n\
         <key attr.name=\"LinkSpeedRaw\" for=\"edge\" id=\"d3\"/>\n\
         <graph edgedefault=\"undirected\">\n\
         <node id=\"0\"><data key=\"d1\">10.5</data><data key=\"d2\">-3</data></node>\n\
         <node id=\"1\"><data key=\"d1\">11</data><data key=\"d2\">4.25</data></node>\n\
         <edge source=\"0\" target=\"1\"><data key=\"d3\">1000000000</data></edge>\n\
         </graph>\n</graphml>\n",
    ),
    (
        "gml",
        true,
        "graph [\n  node [ id 0 Latitude 10.5 Longitude -3 ]\n  node [ id 1 Latitude 11 Longitude 4 ]\n  edge [ source 0 target 1 LinkSpeed \"2.5\" LinkSpeedUnits \"G\" ]\n]\n",
    ),
    (
        "graph",
        false,
        "<topology>\n<vertices>\n<vertex int_idx=\"0\" role=\"gateway\"/>\n\
         <vertex int_idx=\"1\" role=\"virtnode\" int_vn=\"0\"/>\n\
         <vertex int_idx=\"2\" role=\"virtnode\" int_vn=\"1\"/>\n</vertices>\n<edges>\n\
         <edge int_src=\"1\" int_dst=\"0\" int_idx=\"0\" specs=\"cs\"/>\n\
         <edge int_src=\"0\" int_dst=\"1\" int_idx=\"1\" specs=\"cs\" dbl_kbps=\"768\"/>\n\
         <edge int_src=\"2\" int_dst=\"0\" int_idx=\"2\" specs=\"cs\"/>\n</edges>\n\
         <specs><cs dbl_plr=\"0.01\" dbl_kbps=\"1000\" int_delayms=\"1\" int_qlen=\"10\"/></specs>\n\
         </topology>\n",
    ),
    ("inet", true, "3 2\n0 0 0\n1 300 400\n2 600 800\n0 1 1\n1 2 1\n"),
];

/// Every digit run of `text` replaced by `by`.
fn numbers_replaced(text: &str, by: &str) -> String {
    let mut out = String::new();
    let mut in_number = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push_str(by);
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

/// The hostile variants of a valid file of format `ext`, each with what it is.
fn hostile_variants(ext: &str, base: &str) -> Vec<(String, Vec<u8>)> {
    let mut cases: Vec<(String, Vec<u8>)> = vec![("empty".into(), Vec::new())];
    for k in 1..=6 {
        let cut = (0..=base.len() * k / 7)
            .rev()
            .find(|&i| base.is_char_boundary(i))
            .unwrap();
        cases.push((format!("truncated at {cut}"), base[..cut].into()));
    }
    for n in [
        "1e308",
        "99999999999999999999999999",
        "-1",
        "nan",
        "inf",
        "0",
        "1e-400",
    ] {
        cases.push((format!("numbers {n}"), numbers_replaced(base, n).into()));
    }
    // Wrong types: strings and numbers where the other belongs, a table for a value.
    for (from, to) in [
        ("\"", ""),
        ("10Mbit", "[1, {}]"),
        ("0.01", "\"x\""),
        ("1", "true"),
    ] {
        cases.push((
            format!("{from:?} as {to:?}"),
            base.replacen(from, to, 1).into(),
        ));
    }
    let depth = 10_000;
    let (open, close) = match ext {
        "toml" => ("[", "]"),
        "json" => ("[", "]"),
        "gml" => ("x [ ", " ]"),
        "inet" => ("0 ", ""),
        _ => ("<a>", "</a>"),
    };
    let deep = format!("{}{}", open.repeat(depth), close.repeat(depth));
    let nested = match ext {
        "toml" => format!("a = {deep}\n{base}"),
        "json" => base.replacen("\"hosts\"", &format!("\"deep\": {deep}, \"hosts\""), 1),
        "gml" => base.replacen("graph [", &format!("graph [ {deep}"), 1),
        "inet" => format!("{deep}\n{base}"),
        _ => base.replacen("</", &format!("{deep}</"), 1),
    };
    cases.push(("deep nesting".into(), nested.into()));
    let doubled: String = base.lines().flat_map(|l| [l, "\n", l, "\n"]).collect();
    cases.push(("every line twice (duplicate keys)".into(), doubled.into()));
    let unknown = match ext {
        "toml" => format!("zz = 1\n{base}"),
        "json" => base.replacen('{', "{\"zz\": 1, ", 1),
        "gml" => base.replacen("graph [", "graph [ zz 1 ", 1),
        "inet" => format!("{base}zz 1\n"),
        _ => base
            .replacen("<node ", "<zz/><node ", 1)
            .replacen("<vertex ", "<zz/><vertex ", 1),
    };
    cases.push(("unknown key".into(), unknown.into()));
    let mut bytes = base.as_bytes().to_vec();
    bytes.splice(base.len() / 2..base.len() / 2, [0xff, 0xfe, 0x00]);
    cases.push(("not UTF-8".into(), bytes));
    // About 1 MB: the last line (or the whole file) over and over.
    let line = base
        .lines()
        .filter(|l| !l.trim().is_empty())
        .nth(2)
        .unwrap_or(base);
    let big = format!(
        "{base}{}",
        format!("{line}\n").repeat(1_000_000 / (line.len() + 1))
    );
    cases.push(("1 MB of one line repeated".into(), big.into()));
    cases
}

#[test]
fn generated_hostile_files_in_every_format_get_a_clear_error_and_no_panic() {
    let dir = TempDir::new("hostile-generated");
    let mut count = 0;
    for &(ext, import, base) in FORMATS {
        let name = format!("base.{ext}");
        dir.write(&name, base);
        let mut args = vec!["check", name.as_str()];
        if import {
            args.extend(["--hosts-per-router", "1"]);
        }
        let ran = run_in(dir.path(), &args);
        assert_eq!(
            ran.code,
            Some(0),
            "the base {ext} file must load: {}",
            ran.stderr
        );
        for (i, (what, bytes)) in hostile_variants(ext, base).into_iter().enumerate() {
            let name = format!("case{i}.{ext}");
            std::fs::write(dir.path().join(&name), &bytes).unwrap();
            let mut args = args.clone();
            args[1] = &name;
            let ran = run_in(dir.path(), &args);
            count += 1;
            // Either it still is a valid file, or one clear error naming it; never a crash.
            ran.valid_or_one_clear_error(&[&format!("netloom: {name}")], &format!("{ext}, {what}"));
        }
    }
    assert!(count > 100, "{count} cases");
}

#[test]
fn generated_hostile_flag_values_get_a_clear_error_and_no_panic() {
    let dir = TempDir::new("hostile-flag-values");
    dir.write("t.toml", &format!("{TWO_HOSTS}delay = \"1ms\"\n"));
    dir.write("r.inet", "2 1\n0 0 0\n1 300 400\n0 1 1\n");
    dir.write("empty.json", "");
    dir.write("bad.json", "{\"pipes\": [1e999, nan]}");
    dir.write(
        "deep.json",
        &format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)),
    );
    let values = [
        "",
        "nan",
        "NaN",
        "inf",
        "-inf",
        "-1",
        "0",
        "1e308",
        "1e-400",
        "x",
        "99999999999999999999999999",
    ];
    let flags: &[(&[&str], &str)] = &[
        (
            &["check", "r.inet", "--hosts-per-router", "1"],
            "--km-per-s",
        ),
        (
            &["check", "r.inet", "--hosts-per-router", "1"],
            "--default-bw",
        ),
        (
            &["check", "r.inet", "--hosts-per-router", "1"],
            "--default-delay",
        ),
        (
            &["check", "r.inet", "--hosts-per-router", "1"],
            "--access-link",
        ),
        (
            &["check", "r.inet", "--hosts-per-router", "1"],
            "--inet-delay-per-unit",
        ),
        (&["check", "r.inet"], "--hosts-per-router"),
        (&["partition", "t.toml", "--cores", "2"], "--imbalance"),
        (&["partition", "t.toml"], "--cores"),
        (
            &["partition", "t.toml", "--cores", "2", "--model"],
            "--hop-cost",
        ),
        (
            &[
                "sim",
                "t.toml",
                "--traffic",
                "pattern=all-to-all source=cbr rate=1Mbit",
            ],
            "--duration",
        ),
        (&["run", "missing.toml"], "--max-late-fraction"),
        (&["gen", "dumbbell"], "-o"),
    ];
    for (args, flag) in flags {
        for value in values {
            let flagged = format!("{flag}={value}");
            let mut all = args.to_vec();
            all.push(&flagged);
            let ran = run_in(dir.path(), &all);
            let shown = all.join(" ");
            // Some values are valid for some flags (0 s of default delay); the rest must get
            // one clear error, from the flag parser or from netloom.
            ran.valid_or_one_clear_error(&["netloom: ", "error: "], &format!("netloom {shown}"));
        }
    }
    for file in [
        "empty.json",
        "bad.json",
        "deep.json",
        "/dev/zero",
        "missing.json",
        "/",
    ] {
        let weights = format!("observed:{file}");
        let ran = run_in(
            dir.path(),
            &["partition", "t.toml", "--cores", "2", "--weights", &weights],
        );
        assert_eq!(ran.code, Some(2), "--weights {weights}:\n{}", ran.stderr);
        assert!(
            ran.stderr.contains(file),
            "--weights {weights}:\n{}",
            ran.stderr
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Echoes and outputs

#[test]
fn a_huge_node_name_is_quoted_by_a_bounded_prefix_in_every_error() {
    let dir = TempDir::new("hostile-names");
    let d = dir.path();
    let name = "h".repeat(1 << 20);
    // Each case names the node in several errors: its link's end that is no node, the missing
    // bandwidth and delay of that link, a name used twice.
    let cases = [
        format!("hosts = [\"{name}\", \"h2\"]\n\n[[link]]\na = \"{name}\"\nb = \"hx\"\n"),
        format!("hosts = [\"{name}\", \"{name}\"]\n"),
        format!(
            "hosts = [\"{name}\", \"h2\"]\n\n[[link]]\na = \"{name}\"\nb = \"h2\"\n\n[[link]]\na = \"{name}\"\nb = \"h2\"\n"
        ),
    ];
    for (i, text) in cases.iter().enumerate() {
        let file = format!("long{i}.toml");
        dir.write(&file, text);
        let ran = run_in(d, &["check", &file]);
        assert_eq!(
            ran.code,
            Some(2),
            "{}",
            &ran.stderr[..ran.stderr.len().min(500)]
        );
        assert!(
            ran.stderr.len() < 4096,
            "case {i}: {} bytes of errors for a {} byte name",
            ran.stderr.len(),
            name.len()
        );
        assert!(
            ran.stderr
                .contains(&format!("{}… (1048576 bytes)", "h".repeat(64))),
            "case {i}: {}",
            ran.stderr
        );
    }
}

/// Runs `args` with standard output on `/dev/full`, as `netloom ARGS > /dev/full` does.
fn to_full_disk(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn commands_whose_output_cannot_be_written_say_so_and_exit_2() {
    let dir = TempDir::new("hostile-full");
    let d = dir.path();
    dir.write("two.toml", &format!("{TWO_HOSTS}delay = \"1ms\"\n"));
    let cases: [&[&str]; 5] = [
        &["gen", "chain"],
        &["check", "two.toml"],
        &["check", "two.toml", "--json"],
        &["partition", "two.toml", "--cores", "2"],
        &[
            "sim",
            "two.toml",
            "--traffic",
            "k=1 source=cbr rate=1Mbit",
            "--duration",
            "10ms",
        ],
    ];
    for args in cases {
        let (code, err) = to_full_disk(d, args);
        assert_eq!(code, Some(2), "netloom {}: {err}", args.join(" "));
        assert!(
            !err.contains("panicked"),
            "netloom {}: {err}",
            args.join(" ")
        );
        assert!(
            err.contains("writing to standard output") && err.contains("No space left"),
            "netloom {}: {err}",
            args.join(" ")
        );
    }
}

/// Every file a command writes where a user said (`-o`, `--observe`, `--capture`) is opened as
/// `capture -w` opens its file: a symbolic link planted there is refused (exit 2, the error says
/// why), and the file it points to is left as it was.
#[test]
fn outputs_named_by_a_user_refuse_a_planted_link() {
    let dir = TempDir::new("hostile-links");
    let d = dir.path();
    dir.write("two.toml", &format!("{TWO_HOSTS}delay = \"1ms\"\n"));
    dir.write("precious", "precious\n");
    let sim = |extra: &[&'static str]| {
        let mut args = vec!["sim", "two.toml", "--traffic", "k=1 source=cbr rate=1Mbit"];
        args.extend(["--duration", "10ms"]);
        args.extend(extra);
        args
    };
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("out.toml", vec!["gen", "chain", "-o", "out.toml"]),
        ("out.json", vec!["convert", "two.toml", "-o", "out.json"]),
        (
            "a.json",
            vec!["partition", "two.toml", "--cores", "2", "-o", "a.json"],
        ),
        ("obs.json", sim(&["--observe", "obs.json"])),
        ("c.pcapng", sim(&["--capture", "h1:h2=c.pcapng"])),
    ];
    for (name, args) in cases {
        let link = d.join(name);
        std::os::unix::fs::symlink(d.join("precious"), &link).unwrap();
        refused(d, &args, &[name, "does not write through it"]);
        assert_eq!(
            std::fs::read_to_string(d.join("precious")).unwrap(),
            "precious\n",
            "netloom {} wrote through the link",
            args.join(" ")
        );
        std::fs::remove_file(&link).unwrap();
        // The same command writes a plain file there.
        let ran = run_in(d, &args);
        assert_eq!(
            ran.code,
            Some(0),
            "netloom {}: {}",
            args.join(" "),
            ran.stderr
        );
        assert!(
            std::fs::metadata(&link).unwrap().len() > 0,
            "{name} is empty"
        );
    }
}
