//! The cost of validating hostile topology files, which must grow linearly with their size: a
//! file with N unknown keys (every one an error located to its line, TOML and JSON) and a link
//! whose schedule has N events (each a state of its own). docs/performance.md quotes it.
//!
//! `validate [--keys N] [--events N]` (defaults 200,000 and 100,000); prints a Markdown table of
//! the time to load each input, at N/4, N/2 and N, so the growth shows.

use netloom_topo::{load_str, Format};
use std::fmt::Write;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut keys = 200_000;
    let mut events = 100_000;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().ok_or(format!("{arg} needs a number"))?;
        match arg.as_str() {
            "--keys" => keys = value.parse()?,
            "--events" => events = value.parse()?,
            _ => return Err("usage: validate [--keys N] [--events N]".into()),
        }
    }
    println!("| input | size | load (s) | result |");
    println!("|---|---:|---:|---|");
    for n in [keys / 4, keys / 2, keys] {
        time(
            &format!("{n} unknown keys, TOML"),
            &unknown_toml(n),
            Format::Toml,
        );
        time(
            &format!("{n} unknown keys, JSON"),
            &unknown_json(n),
            Format::Json,
        );
    }
    for n in [events / 4, events / 2, events] {
        time(
            &format!("schedule of {n} events"),
            &schedule(n),
            Format::Toml,
        );
    }
    Ok(())
}

/// Loads `text` once and prints a row: the time, and how many errors it had (or "loads").
fn time(what: &str, text: &str, format: Format) {
    let started = Instant::now();
    let result = load_str(text, format, "bench");
    let seconds = started.elapsed().as_secs_f64();
    let result = match result {
        Ok(_) => "loads".to_string(),
        Err(e) => format!("{} errors", e.diagnostics().len()),
    };
    println!(
        "| {what} | {} KB | {seconds:.3} | {result} |",
        text.len() / 1000
    );
}

const LINK: &str = "[[link]]\na = \"h1\"\nb = \"h2\"\nbw = \"10Mbit\"\ndelay = \"10ms\"\n";

fn unknown_toml(n: usize) -> String {
    let mut text = String::from("hosts = [\"h1\", \"h2\"]\n\n[topology]\n");
    for i in 0..n {
        let _ = writeln!(text, "unknown{i} = 1");
    }
    text + "\n" + LINK
}

fn unknown_json(n: usize) -> String {
    let mut text = String::from("{\"hosts\": [\"h1\", \"h2\"],\n\"topology\": {\n");
    for i in 0..n {
        let _ = writeln!(text, "\"unknown{i}\": 1,");
    }
    text + "\"name\": \"x\"},\n\"link\": [{\"a\": \"h1\", \"b\": \"h2\"}]}\n"
}

/// A link whose delay changes every millisecond, `n` times, as `at` events.
fn schedule(n: usize) -> String {
    let mut text =
        String::from("hosts = [\"h1\", \"h2\"]\n\n") + LINK + "schedule = { events = [\n";
    for i in 0..n {
        let _ = writeln!(
            text,
            "  {{ at = \"{}ms\", set = {{ delay = \"{}ms\" }} }},",
            i + 1,
            i % 50 + 1
        );
    }
    text + "] }\n"
}
