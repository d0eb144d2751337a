//! Every example in docs/topology.md loads: ```toml and ```json blocks must load, ```toml,error
//! blocks must fail, with exactly the message of the ```text block that follows them.

use netloom_topo::{load_str, Format};
use std::path::Path;

/// A fenced block: its info string (`toml`, `toml,error`, ...), its text, and its first line.
struct Block {
    info: String,
    text: String,
    line: usize,
}

fn blocks(markdown: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in markdown.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => {
                open = Some(Block {
                    info: info.trim().to_string(),
                    text: String::new(),
                    line: i + 1,
                })
            }
            (Some(_), Some("")) => out.extend(open.take()),
            (Some(b), _) => {
                b.text.push_str(line);
                b.text.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "unclosed code block");
    out
}

#[test]
fn every_example_in_the_topology_doc_behaves_as_documented() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/topology.md");
    let markdown = std::fs::read_to_string(&path).unwrap();
    let blocks = blocks(&markdown);
    let mut checked = [0usize; 3];
    for (i, b) in blocks.iter().enumerate() {
        let at = format!("docs/topology.md:{}", b.line);
        match b.info.as_str() {
            "toml" | "json" => {
                let format = if b.info == "toml" {
                    Format::Toml
                } else {
                    Format::Json
                };
                if let Err(e) = load_str(&b.text, format, "topo") {
                    panic!("{at}: example does not load:\n{e}");
                }
                checked[usize::from(b.info == "json")] += 1;
            }
            "toml,error" => {
                let e = match load_str(&b.text, Format::Toml, "topo.toml") {
                    Ok(_) => panic!("{at}: error example loads without error"),
                    Err(e) => e,
                };
                let expected = blocks
                    .get(i + 1)
                    .filter(|next| next.info == "text")
                    .unwrap_or_else(|| {
                        panic!("{at}: error example without a ```text block after it")
                    });
                assert_eq!(e.to_string(), expected.text.trim(), "{at}");
                checked[2] += 1;
            }
            _ => {}
        }
    }
    assert!(
        checked.iter().all(|&n| n >= 2),
        "too few examples found: {checked:?}"
    );
}
