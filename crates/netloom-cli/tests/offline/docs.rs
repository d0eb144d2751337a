//! The examples in docs/cli.md and docs/json.md are real: every `$ netloom ...` line of a
//! ```console block runs, and the JSON examples have exactly the keys of the real output; and
//! what docs/live.md says sets the MTU does.
//!
//! Commands run in a scratch directory holding a copy of `examples/`, so relative paths work as
//! from the repository root and files the examples write vanish with the directory. Within one
//! page the commands share that directory, in order (a `gen -o` feeds the `check` after it).
//! A command must exit 0, or with the code a following `$ echo $?` line shows. The first line
//! of output shown must be the first line printed (standard output, or standard error if
//! nothing went to standard output), and every `netloom: ` error line shown must be printed.

use crate::common::{key_paths, repo_file, run_in, TempDir};
use std::collections::BTreeSet;
use std::path::Path;

/// A fenced code block: its info string, the line of its opening fence (1-based), its lines.
struct Block {
    info: String,
    line: usize,
    lines: Vec<String>,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => {
                open = Some(Block {
                    info: info.trim().to_string(),
                    line: i + 1,
                    lines: Vec::new(),
                })
            }
            (Some(_), Some("")) => out.push(open.take().unwrap()),
            (Some(b), _) => b.lines.push(line.to_string()),
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "unclosed code block");
    out
}

/// Splits a command line like a POSIX shell does for plain words and '...' / "..." quoting.
/// Anything a shell would do more (redirection, pipes, variables) is refused.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    w.push(c);
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => w.extend(chars.next()),
                        c => w.push(c),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            '>' | '<' | '|' | '&' | ';' | '$' | '`' | '*' => {
                panic!("{line:?}: the docs test runs plain commands only, without {c:?}")
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

/// One documented command: where, its arguments (after `netloom`), the exit code and the
/// output lines shown.
struct Example {
    at: String,
    args: Vec<String>,
    code: i32,
    shown: Vec<String>,
}

/// The `$ netloom` commands of the ```console blocks of `page`.
fn console_examples(page: &str, text: &str) -> Vec<(usize, Example)> {
    let mut out: Vec<(usize, Example)> = Vec::new();
    for (index, b) in blocks(text).into_iter().enumerate() {
        if b.info != "console" {
            continue;
        }
        let mut lines = b.lines.iter().enumerate().peekable();
        while let Some((i, line)) = lines.next() {
            let at = format!("{page}:{}", b.line + 1 + i);
            let Some(cmd) = line.strip_prefix("$ ") else {
                panic!("{at}: a console block must start with a `$ ` command: {line:?}");
            };
            let mut shown = Vec::new();
            while let Some((_, l)) = lines.peek() {
                if l.starts_with("$ ") {
                    break;
                }
                shown.push(l.to_string());
                lines.next();
            }
            if cmd == "echo $?" {
                let (_, last) = out
                    .last_mut()
                    .filter(|(block, _)| *block == index)
                    .unwrap_or_else(|| panic!("{at}: `echo $?` without a command before it"));
                last.code = shown
                    .first()
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or_else(|| panic!("{at}: `echo $?` must be followed by a number"));
                continue;
            }
            let mut words = shell_words(cmd);
            assert_eq!(
                words.first().map(String::as_str),
                Some("netloom"),
                "{at}: console examples run netloom only: {cmd:?}"
            );
            words.remove(0);
            for w in &words {
                assert!(
                    !w.starts_with('/') && !w.split('/').any(|part| part == ".."),
                    "{at}: {w:?}: use paths relative to the repository root, inside it"
                );
            }
            out.push((
                index,
                Example {
                    at,
                    args: words,
                    code: 0,
                    shown,
                },
            ));
        }
    }
    out
}

/// A scratch directory with a copy of the repository's `examples/`.
fn scratch(label: &str) -> TempDir {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
    let dir = TempDir::new(label);
    copy(&repo_file("examples"), &dir.path().join("examples"));
    dir
}

/// Runs one example in `dir` and checks it as the module doc says; returns its standard output.
fn run_example(dir: &Path, ex: &Example) -> String {
    let out = run_in(Some(dir), &ex.args);
    let context = || {
        format!(
            "{}: `{}`\n--- stdout\n{}\n--- stderr\n{}",
            ex.at, out.cmd, out.stdout, out.stderr
        )
    };
    assert_eq!(
        out.code,
        Some(ex.code),
        "exit code (expected {}) of {}",
        ex.code,
        context()
    );
    if let Some(first) = ex.shown.first() {
        let printed = if out.stdout.is_empty() {
            &out.stderr
        } else {
            &out.stdout
        };
        assert_eq!(
            printed.lines().next().unwrap_or("").trim_end(),
            first.trim_end(),
            "first line of output of {}",
            context()
        );
    }
    for line in ex.shown.iter().filter(|l| l.starts_with("netloom: ")) {
        assert!(
            out.stderr.lines().any(|l| l == line),
            "error line {line:?} not printed by {}",
            context()
        );
    }
    out.stdout
}

fn read_doc(page: &str) -> String {
    std::fs::read_to_string(repo_file(page)).unwrap_or_else(|e| panic!("{page}: {e}"))
}

#[test]
fn every_console_example_in_the_cli_doc_runs_as_shown() {
    let page = "docs/cli.md";
    let examples = console_examples(page, &read_doc(page));
    assert!(
        examples.len() >= 10,
        "only {} examples found",
        examples.len()
    );
    assert!(examples.iter().any(|(_, e)| e.code == 2));
    let dir = scratch("cli-doc");
    for (_, ex) in &examples {
        run_example(dir.path(), ex);
    }
}

/// The backticked field paths in the first column of the tables of each `## ` section.
fn table_fields(text: &str) -> Vec<(String, BTreeSet<String>)> {
    let mut sections: Vec<(String, BTreeSet<String>)> = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if in_code {
        } else if let Some(h) = line.strip_prefix("## ") {
            sections.push((h.to_string(), BTreeSet::new()));
        } else if let Some(rest) = line.strip_prefix("| `") {
            let field = rest.split('`').next().unwrap().to_string();
            sections
                .last_mut()
                .expect("a table before the first section")
                .1
                .insert(field);
        }
    }
    sections
}

#[test]
fn the_json_doc_lists_exactly_the_keys_of_the_real_output() {
    let page = "docs/json.md";
    let text = read_doc(page);
    let dir = scratch("json-doc");
    let examples = console_examples(page, &text);
    let all_blocks = blocks(&text);
    let sections = table_fields(&text);
    let mut compared = 0;
    for (index, ex) in &examples {
        let stdout = run_example(dir.path(), ex);
        // The documented output is the next ```json block.
        let Some(doc) = all_blocks[index + 1..].iter().find(|b| b.info == "json") else {
            continue;
        };
        let documented: serde_json::Value = serde_json::from_str(&doc.lines.join("\n"))
            .unwrap_or_else(|e| panic!("{page}:{}: invalid JSON: {e}", doc.line));
        let actual: serde_json::Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("{}: output is not JSON ({e}):\n{stdout}", ex.at));
        let (doc_keys, real_keys) = (key_paths(&documented), key_paths(&actual));
        assert_eq!(
            doc_keys,
            real_keys,
            "{page}:{}: example keys differ from `{}`; only in the doc: {:?}; only in the output: {:?}",
            doc.line,
            ex.args.join(" "),
            doc_keys.difference(&real_keys).collect::<Vec<_>>(),
            real_keys.difference(&doc_keys).collect::<Vec<_>>()
        );
        // The field table of the example's section lists every key, and nothing else.
        let heading = text
            .lines()
            .take(doc.line)
            .filter(|l| l.starts_with("## "))
            .last();
        let heading = heading
            .expect("example under a section")
            .trim_start_matches("## ");
        let (_, fields) = sections.iter().find(|(h, _)| h == heading).unwrap();
        assert_eq!(
            fields,
            &real_keys,
            "{page}: section {heading:?}: the table's fields differ from the output's keys; \
             only in the table: {:?}; only in the output: {:?}",
            fields.difference(&real_keys).collect::<Vec<_>>(),
            real_keys.difference(fields).collect::<Vec<_>>()
        );
        compared += 1;
    }
    assert_eq!(compared, 2, "expected the sim and the check example");
}

#[test]
fn shell_words_split_like_a_shell() {
    assert_eq!(
        shell_words(r#"netloom sim a.toml --traffic 'k=2 source=cbr' --x "a b" c\ d"#),
        [
            "netloom",
            "sim",
            "a.toml",
            "--traffic",
            "k=2 source=cbr",
            "--x",
            "a b",
            "c d"
        ]
    );
    assert_eq!(shell_words("a  ''  b"), ["a", "", "b"]);
}

#[test]
fn the_key_tree_describes_arrays_by_their_first_element() {
    let v: serde_json::Value =
        serde_json::from_str(r#"{"a": [{"b": 1, "c": {"d": null}}, {"e": 2}], "f": [], "g": [1]}"#)
            .unwrap();
    let keys: Vec<_> = key_paths(&v).into_iter().collect();
    assert_eq!(keys, ["a", "a[].b", "a[].c", "a[].c.d", "f", "g"]);
}

/// The long flags (`--name`) a help text mentions, without `--help` and `--version`.
fn long_flags(help: &str) -> BTreeSet<String> {
    help.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| w.starts_with("--") && w.len() > 2 && !w.starts_with("---"))
        .filter(|w| *w != "--help" && *w != "--version")
        .map(str::to_string)
        .collect()
}

/// Every subcommand has its section in docs/cli.md, and every flag of every subcommand is
/// documented (in docs/cli.md, or on the page about that feature in docs/).
#[test]
fn every_subcommand_and_flag_is_documented() {
    let cli_doc = read_doc("docs/cli.md");
    let mut all_docs = String::new();
    for entry in std::fs::read_dir(repo_file("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            all_docs.push_str(&std::fs::read_to_string(&path).unwrap());
        }
    }
    let help = run_in(None, &["--help"]).ok().stdout;
    let commands: Vec<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect();
    assert!(commands.len() >= 3, "no commands in:\n{help}");
    for command in &commands {
        assert!(
            cli_doc.contains(&format!("## `netloom {command}")),
            "docs/cli.md has no \"## `netloom {command} ...`\" section"
        );
        let help = run_in(None, &[command.as_str(), "--help"]).ok().stdout;
        for flag in long_flags(&help) {
            assert!(
                all_docs.contains(&format!("`{flag}")),
                "`netloom {command} {flag}` is not documented in docs/ (write it as `{flag} ...`)"
            );
        }
    }
}

/// docs/live.md says where the MTU comes from: the topology file's `mtu` (which `check` takes
/// and shows) under `run`'s flag (which exists).
#[test]
fn the_live_doc_says_the_mtu_comes_from_the_links_under_run_s_flag() {
    let live = read_doc("docs/live.md");
    let said = live
        .split("\n\n")
        .find(|p| p.starts_with("The MTU of `nl0`"))
        .expect("docs/live.md says what the MTU of nl0 is");
    assert!(said.contains("follows the host's access link"), "{said}");
    assert!(live.contains("`netloom run --mtu N` overrides"), "{live}");
    let help = run_in(None, &["run", "--help"]).ok().stdout;
    assert!(long_flags(&help).contains("--mtu"), "{help}");
    let dir = TempDir::new("mtu");
    dir.write(
        "t.toml",
        "hosts = [\"a\", \"b\"]\n[[link]]\na = \"a\"\nb = \"b\"\nbw = \"1Gbit\"\ndelay = \"1ms\"\nmtu = 9000\n",
    );
    let out = run_in(Some(dir.path()), &["check", "t.toml"]).ok();
    assert!(
        out.stdout.contains("MTU       9000 to 9000 bytes per pipe"),
        "{}",
        out.stdout
    );
}
