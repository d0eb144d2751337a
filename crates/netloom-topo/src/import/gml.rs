//! GML: a small tokenizer and parser (keys, numbers, "strings", `[` lists `]`, `#` comments)
//! and the reader of `graph [ node [...] edge [...] ]` as the Topology Zoo and Shadow write it.
//! Attributes mean what `attr` says; nested lists inside nodes and edges (`graphics`) are
//! skipped. Never panics: nesting is bounded and every malformed input is an error with a line.

use super::attr::{self, Attrs};
use super::fail;
use super::graph::{Edges, Graph, Names};
use crate::error::{ErrorKind, TopoError};
use std::collections::HashMap;

/// Deeper nesting than this is refused (real files nest two or three levels).
const MAX_DEPTH: usize = 32;

/// One `key value` pair; numbers keep their text as written.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Item {
    pub key: String,
    pub value: Value,
    pub line: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Scalar(String),
    List(Vec<Item>),
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Word(String),
    Number(String),
    Text(String),
    Open,
    Close,
}

/// Splits GML into tokens with their lines; the error is `(line, message)`.
fn tokenize(text: &str) -> Result<Vec<(Token, usize)>, (usize, String)> {
    let mut tokens = Vec::new();
    let mut chars = text.char_indices().peekable();
    let mut line = 1;
    while let Some(&(start, c)) = chars.peek() {
        match c {
            '\n' => {
                line += 1;
                chars.next();
            }
            c if c.is_whitespace() => {
                chars.next();
            }
            '#' => while chars.next_if(|&(_, c)| c != '\n').is_some() {},
            '[' | ']' => {
                chars.next();
                tokens.push((if c == '[' { Token::Open } else { Token::Close }, line));
            }
            '"' => {
                chars.next();
                let first = line;
                let mut s = String::new();
                loop {
                    match chars.next() {
                        Some((_, '"')) => break,
                        Some((_, ch)) => {
                            line += usize::from(ch == '\n');
                            s.push(ch);
                        }
                        None => return Err((first, "a string is not closed with '\"'".into())),
                    }
                }
                tokens.push((Token::Text(s), first));
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let mut end = start;
                while let Some((i, ch)) =
                    chars.next_if(|&(_, ch)| ch.is_ascii_alphanumeric() || ch == '_')
                {
                    end = i + ch.len_utf8();
                }
                tokens.push((Token::Word(text[start..end].to_string()), line));
            }
            c if c.is_ascii_digit() || matches!(c, '-' | '+' | '.') => {
                let mut end = start;
                while let Some((i, ch)) = chars.next_if(|&(_, ch)| {
                    ch.is_ascii_digit() || matches!(ch, '-' | '+' | '.' | 'e' | 'E')
                }) {
                    end = i + ch.len_utf8();
                }
                let number = &text[start..end];
                if number.parse::<f64>().is_err() {
                    return Err((line, format!("\"{number}\" is not a number")));
                }
                tokens.push((Token::Number(number.to_string()), line));
            }
            other => return Err((line, format!("unexpected character {other:?}"))),
        }
    }
    Ok(tokens)
}

/// Parses GML text into its top-level items.
pub(crate) fn parse(text: &str) -> Result<Vec<Item>, (usize, String)> {
    let tokens = tokenize(text)?;
    let mut at = 0;
    let items = list(&tokens, &mut at, 0)?;
    match tokens.get(at) {
        None => Ok(items),
        Some((_, line)) => Err((*line, "']' without a matching '['".into())),
    }
}

/// Items up to a `]` (left for the caller) or the end.
fn list(
    tokens: &[(Token, usize)],
    at: &mut usize,
    depth: usize,
) -> Result<Vec<Item>, (usize, String)> {
    let mut items = Vec::new();
    while let Some((token, line)) = tokens.get(*at) {
        let key = match token {
            Token::Close => return Ok(items),
            Token::Word(w) => w.clone(),
            _ => return Err((*line, "expected a key (a word like node, edge, id)".into())),
        };
        *at += 1;
        let value = match tokens.get(*at) {
            Some((Token::Number(n), _)) | Some((Token::Text(n), _)) => Value::Scalar(n.clone()),
            Some((Token::Open, open)) => {
                if depth >= MAX_DEPTH {
                    return Err((*open, format!("lists nest deeper than {MAX_DEPTH} levels")));
                }
                *at += 1;
                let inner = list(tokens, at, depth + 1)?;
                if !matches!(tokens.get(*at), Some((Token::Close, _))) {
                    return Err((
                        *open,
                        format!("the list of \"{key}\" is not closed with ']'"),
                    ));
                }
                Value::List(inner)
            }
            Some((Token::Word(w), l)) => {
                return Err((
                    *l,
                    format!("\"{key}\" has no value (found the key \"{w}\")"),
                ))
            }
            _ => return Err((*line, format!("\"{key}\" has no value"))),
        };
        *at += 1;
        items.push(Item {
            key,
            value,
            line: *line,
        });
    }
    Ok(items)
}

fn scalar<'a>(items: &'a [Item], key: &str) -> Option<&'a str> {
    items.iter().find_map(|i| match &i.value {
        Value::Scalar(s) if i.key == key => Some(s.as_str()),
        _ => None,
    })
}

fn attrs(items: &[Item]) -> Attrs {
    items
        .iter()
        .filter_map(|i| match &i.value {
            Value::Scalar(s) => Some((i.key.clone(), s.clone())),
            Value::List(_) => None,
        })
        .collect()
}

pub(crate) fn read(text: &str, label: &str) -> Result<Graph, TopoError> {
    let err = |line: usize, subject: Option<String>, kind, message: String| {
        fail(label, Some(line), subject, kind, message)
    };
    let top = parse(text)
        .map_err(|(line, m)| err(line, None, ErrorKind::Syntax, format!("invalid GML: {m}")))?;
    let Some(body) = top.iter().find_map(|i| match &i.value {
        Value::List(body) if i.key == "graph" => Some(body),
        _ => None,
    }) else {
        return Err(fail(
            label,
            None,
            None,
            ErrorKind::Missing,
            "no graph [ ... ] list; a GML topology is graph [ node [ id 0 ] edge [ source 0 target 1 ] ]".into(),
        ));
    };
    let mut graph = Graph {
        name: scalar(body, "name")
            .or_else(|| scalar(body, "Network"))
            .or_else(|| scalar(body, "label"))
            .map(str::to_string),
        ..Graph::default()
    };
    let lists = |key: &'static str| {
        body.iter().filter_map(move |i| match &i.value {
            Value::List(l) if i.key == key => Some((l, i.line)),
            _ => None,
        })
    };
    let mut ids: HashMap<&str, usize> = HashMap::new();
    let mut names = Names::default();
    for (i, (node, line)) in lists("node").enumerate() {
        let Some(id) = scalar(node, "id") else {
            return Err(err(
                line,
                Some(format!("node #{}", i + 1)),
                ErrorKind::Missing,
                "has no id".into(),
            ));
        };
        let subject = Some(format!("node #{} (id {id})", i + 1));
        if ids.insert(id, graph.nodes.len()).is_some() {
            return Err(err(
                line,
                subject,
                ErrorKind::Duplicate,
                format!("id {id} is used by an earlier node; node ids must be unique"),
            ));
        }
        let info = attr::node(&attrs(node))
            .map_err(|e| err(line, subject.clone(), ErrorKind::BadValue, e.to_string()))?;
        graph.add_node(names.claim(scalar(node, "label").unwrap_or(id)), info);
    }
    let directed = scalar(body, "directed") == Some("1");
    let mut edges = Edges::new(directed);
    for (i, (edge, line)) in lists("edge").enumerate() {
        let end = |k: &str| scalar(edge, k).unwrap_or("");
        let subject = Some(format!(
            "edge #{} (source {} target {})",
            i + 1,
            end("source"),
            end("target")
        ));
        let node = |k: &str| {
            ids.get(end(k)).copied().ok_or_else(|| {
                let message = match scalar(edge, k) {
                    None => format!("has no {k}"),
                    Some(id) => format!("{k} {id} is not a node"),
                };
                err(line, subject.clone(), ErrorKind::UnknownName, message)
            })
        };
        let (a, b) = (node("source")?, node("target")?);
        let info = attr::edge(&attrs(edge))
            .map_err(|e| err(line, subject.clone(), ErrorKind::BadValue, e.to_string()))?;
        edges.add(&mut graph, a, b, info, (i + 1).to_string());
    }
    edges.finish(&mut graph);
    Ok(graph)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHADOW: &str = r#"graph [
  directed 0
  # a comment
  node [
    id 0
    host_bandwidth_up "100 Mbit"
    host_bandwidth_down "1 Gbit"
  ]
  node [ id 1 label "b" graphics [ x 1.5 y -2e3 ] ]
  edge [ source 0 target 1 latency "10 ms" bandwidth "100 Mbit" packet_loss 0.001 ]
  edge [ source 0 target 0 latency "1 ms" ]
]
"#;

    #[test]
    fn tokens_and_nesting() {
        let items = parse("a 1 b \"x y\" c [ d -2.5e3 ]").unwrap();
        assert_eq!(items.len(), 3);
        assert_eq!(items[1].value, Value::Scalar("x y".into()));
        let Value::List(inner) = &items[2].value else {
            panic!("c is a list")
        };
        assert_eq!(inner[0].value, Value::Scalar("-2.5e3".into()));
    }

    #[test]
    fn reads_shadow_style_graphs() {
        let g = read(SHADOW, "s.gml").unwrap();
        assert_eq!(g.nodes[0].name, "0");
        assert_eq!(g.nodes[0].access_down.as_deref(), Some("1 Gbit"));
        assert_eq!(g.nodes[1].name, "b");
        assert_eq!(g.links.len(), 1);
        assert_eq!(g.links[0].params.delay.as_deref(), Some("10 ms"));
        assert!(g.notes[0].starts_with("1 edge(s) from a node to itself"));
    }

    #[test]
    fn malformed_gml_names_the_line_and_element() {
        let cases = [
            (
                "graph [ node [ id 0 ]",
                "x.gml:1: invalid GML: the list of \"graph\" is not closed",
            ),
            (
                "graph [ ] ]",
                "x.gml:1: invalid GML: ']' without a matching '['",
            ),
            (
                "graph [ label \"open ]",
                "x.gml:1: invalid GML: a string is not closed",
            ),
            ("graph [ id ]", "invalid GML: \"id\" has no value"),
            ("graph [ 1 2 ]", "expected a key"),
            ("graph [ x 1.2.3 ]", "\"1.2.3\" is not a number"),
            ("graph [ x @ ]", "unexpected character '@'"),
            ("node [ id 0 ]", "no graph [ ... ] list"),
            (
                "graph [\n node [ id 0 ]\n edge [ source 0 target 9 ]\n]",
                "x.gml:3: edge #1 (source 0 target 9): target 9 is not a node",
            ),
            (
                "graph [ node [ id 0 ] node [ id 0 ] ]",
                "node #2 (id 0): id 0 is used",
            ),
            (
                "graph [ node [ id 0 ] node [ id 1 ] edge [ source 0 target 1 latency \"fast\" ] ]",
                "edge #1 (source 0 target 1): latency = \"fast\"",
            ),
        ];
        for (text, want) in cases {
            let got = read(text, "x.gml").unwrap_err().to_string();
            assert!(got.contains(want), "{text:?}: {got}");
        }
        let deep = "a [ ".repeat(100);
        assert!(parse(&deep).unwrap_err().1.contains("deeper than"));
    }
}
