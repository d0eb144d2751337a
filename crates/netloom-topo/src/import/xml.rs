//! XML plumbing shared by the GraphML and ModelNet readers: parsing with a located error, the
//! line of an element, and errors that name the element. Knows no format's vocabulary.

use super::fail;
use crate::error::{ErrorKind, TopoError};
use roxmltree::{Document, Node};
use std::collections::HashMap;

/// The most bytes that references to internal entities may add to a document. roxmltree refuses
/// deep expansion (billion laughs) but not wide: a 350 KB file referring 50,000 times to a
/// 100 KB entity would expand to 5 GB.
pub const ENTITY_EXPANSION_LIMIT: u64 = 16 << 20;

/// Parses `text`; a syntax error names the line. DTDs are allowed (some tools write one) but
/// entities cannot expand without bound: roxmltree limits their depth, and
/// [`ENTITY_EXPANSION_LIMIT`] what they add in all.
pub(crate) fn parse<'a>(text: &'a str, label: &str) -> Result<Document<'a>, TopoError> {
    let expanded = entity_expansion(text);
    if expanded > ENTITY_EXPANSION_LIMIT {
        let expanded = match expanded {
            u64::MAX => "without bound".to_string(),
            n => format!("to {n} bytes"),
        };
        return Err(fail(
            label,
            None,
            None,
            ErrorKind::BadValue,
            format!(
                "its entity references would expand {expanded}, above the limit of {} MiB",
                ENTITY_EXPANSION_LIMIT >> 20
            ),
        ));
    }
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    Document::parse_with_options(text, options).map_err(|e| {
        let message = e.to_string();
        // roxmltree appends " at ROW:COL"; the line goes in front instead.
        let message = match message.rfind(" at ") {
            Some(i) => &message[..i],
            None => &message,
        };
        fail(
            label,
            Some(e.pos().row as usize),
            None,
            ErrorKind::Syntax,
            format!("invalid XML: {message}"),
        )
    })
}

/// About how many bytes the references to internal entities in `text` expand to (at least
/// that many; saturating), found without expanding them: each declared entity's expanded
/// length once, then every reference in the text counted at its entity's length. Declarations
/// are read loosely; a malformed one is left to the XML parser to refuse.
fn entity_expansion(text: &str) -> u64 {
    if !text.contains("<!ENTITY") {
        return 0;
    }
    let mut values: HashMap<&str, &str> = HashMap::new();
    for decl in text.split("<!ENTITY").skip(1) {
        let decl = decl.trim_start();
        if decl.starts_with('%') {
            continue;
        }
        let Some((name, rest)) = decl.split_once(|c: char| c.is_ascii_whitespace()) else {
            continue;
        };
        let rest = rest.trim_start();
        let Some(quote) = rest.chars().next().filter(|c| matches!(c, '"' | '\'')) else {
            continue;
        };
        if let Some((value, _)) = rest[1..].split_once(quote) {
            values.entry(name).or_insert(value);
        }
    }
    // References are counted in the document after the DTD, not in the declarations.
    let last = text.rfind("<!ENTITY").unwrap_or(0);
    let body = text[last..]
        .find("]>")
        .map_or(text, |end| &text[last + end..]);
    let mut lengths = HashMap::new();
    references(body, &values, &mut lengths, 0)
}

/// The bytes the references in `text` expand to, with each entity's expanded length memoised in
/// `lengths`. Deeper than roxmltree's own limit of 10 counts as unbounded.
fn references<'t>(
    text: &'t str,
    values: &HashMap<&'t str, &'t str>,
    lengths: &mut HashMap<&'t str, u64>,
    depth: u32,
) -> u64 {
    let mut total = 0u64;
    for piece in text.split('&').skip(1) {
        let Some((name, _)) = piece.split_once(';') else {
            continue;
        };
        let Some((&name, &value)) = values.get_key_value(name) else {
            continue;
        };
        let length = match lengths.get(name) {
            Some(&n) => n,
            None if depth >= 10 => u64::MAX,
            None => {
                // An entity met again while its own length is being found refers to itself.
                lengths.insert(name, u64::MAX);
                let n = (value.len() as u64).saturating_add(references(
                    value,
                    values,
                    lengths,
                    depth + 1,
                ));
                lengths.insert(name, n);
                n
            }
        };
        total = total.saturating_add(length);
    }
    total
}

/// The 1-based line where `node` starts.
pub(crate) fn line(node: Node) -> usize {
    node.document().text_pos_at(node.range().start).row as usize
}

/// An error about `node`, with its line.
pub(crate) fn error(
    label: &str,
    node: Node,
    subject: &str,
    kind: ErrorKind,
    message: String,
) -> TopoError {
    fail(
        label,
        Some(line(node)),
        Some(subject.to_string()),
        kind,
        message,
    )
}

/// The child elements of `node` called `name`, in document order.
pub(crate) fn children<'a, 'input: 'a>(
    node: Node<'a, 'input>,
    name: &'a str,
) -> impl Iterator<Item = Node<'a, 'input>> + 'a {
    node.children()
        .filter(move |n| n.is_element() && n.tag_name().name() == name)
}
