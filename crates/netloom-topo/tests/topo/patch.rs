//! A change to a running link is checked as the topology file is: the same bad value gives the
//! same message through `LinkPatch` as in a file.

use netloom_topo::{load_str, Format, LinkPatch};
use serde_json::{Map, Value};

/// A link h1-h2 at 1 Gbit/s and 1 ms (from `[defaults]`, so the link may set them) with `keys`.
fn file(keys: &str) -> String {
    format!(
        "hosts = [\"h1\", \"h2\"]\n\n[defaults]\nbw = \"1Gbit\"\ndelay = \"1ms\"\n\n\
         [[link]]\na = \"h1\"\nb = \"h2\"\n{keys}\n"
    )
}

/// The one message loading a link with `keys` gives.
fn through_file(keys: &str) -> String {
    match load_str(&file(keys), Format::Toml, "topo.toml") {
        Ok(_) => panic!("{keys} loaded"),
        Err(e) => {
            assert_eq!(e.diagnostics().len(), 1, "{e}");
            e.first().message.clone()
        }
    }
}

/// The message of changing the loaded link (without `keys`) by the table `keys`.
fn through_patch(keys: &str) -> String {
    let base = load_str(&file(""), Format::Toml, "topo.toml")
        .unwrap()
        .pipes[0]
        .config;
    let table: Map<String, Value> = toml::from_str(keys).unwrap();
    match LinkPatch::from_table(&table).and_then(|p| p.apply(&base)) {
        Ok(c) => panic!("{keys} gave {c:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_bad_value_reads_the_same_as_in_a_file() {
    for keys in [
        "delay = \"5 parsecs\"",
        "bw = \"10mbps\"",
        "loss = 50",
        "queue = 0",
        "aqm = \"rde\"",
        "reorder = \"maybe\"",
        "wireless = \"802.11n\"",
        "retry_limit = 300",
        "mtu = 1000",
        "mtu = 70000",
        "red = { max_p = 2 }",
        "red = { min_th = -1 }",
        "red = { min = 5 }",
        "loss = { model = \"gilbert\", p = \"1%\", r = \"30%\" }",
        "loss = { model = \"gilbert-elliott\", p = \"1%\" }",
        // Values that are fine alone but not on this link.
        "wireless = \"802.11g\"",
        "snr = \"20dB\"",
        "aqm = \"red\"\nqueue = 100\nred = { min_th = 20, max_th = 10 }",
    ] {
        assert_eq!(through_patch(keys), through_file(keys), "{keys}");
    }
}

#[test]
fn words_read_the_same_as_the_file_too() {
    for (words, keys) in [
        (&["delay=5 parsecs"][..], "delay = \"5 parsecs\""),
        (&["loss=50"], "loss = 50"),
        (&["retry_limit=x"], "retry_limit = \"x\""),
        (&["mtu=9k"], "mtu = \"9k\""),
        (&["red.max_p=2"], "red = { max_p = 2 }"),
    ] {
        let message = LinkPatch::from_words(words).unwrap_err().to_string();
        assert_eq!(message, through_file(keys), "{words:?}");
    }
}
