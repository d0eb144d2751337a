//! XML plumbing shared by the GraphML and ModelNet readers: parsing with a located error, the
//! line of an element, and errors that name the element. Knows no format's vocabulary.

use super::fail;
use crate::error::{ErrorKind, TopoError};
use roxmltree::{Document, Node};

/// Parses `text`; a syntax error names the line. DTDs are allowed (some tools write one) but
/// entities cannot expand without bound (roxmltree limits them).
pub(crate) fn parse<'a>(text: &'a str, label: &str) -> Result<Document<'a>, TopoError> {
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
