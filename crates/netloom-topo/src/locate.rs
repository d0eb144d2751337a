//! Line numbers for paths in a TOML or JSON text (`link[3].bw` → line 14). Parsing into values
//! drops positions, so they are looked up again here, and only once an error needs them.
//! Each lookup costs about the length of its path: a file with 200,000 errors is located in
//! one pass over its text, not one pass per error.

use crate::error::Seg;
use crate::format::Format;
use std::cell::RefCell;
use std::collections::HashMap;

/// The text a document was read from.
pub(crate) struct Source<'t> {
    text: &'t str,
    format: Format,
}

impl<'t> Source<'t> {
    pub(crate) fn new(text: &'t str, format: Format) -> Source<'t> {
        Source { text, format }
    }
}

/// Finds lines in one text; the TOML is parsed once, keeping spans, for all lookups, and each
/// JSON object or array is scanned once, when a path first goes through it.
pub(crate) struct Lines<'t> {
    text: &'t str,
    toml: Option<toml_edit::ImDocument<&'t str>>,
    /// Byte offset where each line starts.
    starts: Vec<usize>,
    /// The entries of the JSON containers scanned so far, by the offset where each starts.
    json: RefCell<HashMap<usize, Option<Entries>>>,
}

/// Where the entries of one JSON object or array start.
enum Entries {
    /// Key → (where the key starts, where its value starts); the first of duplicate keys.
    Object(HashMap<String, (usize, usize)>),
    /// Where each element starts.
    Array(Vec<usize>),
}

impl<'t> Lines<'t> {
    pub(crate) fn new(source: Source<'t>) -> Lines<'t> {
        let toml = match source.format {
            Format::Toml => toml_edit::ImDocument::parse(source.text).ok(),
            Format::Json => None,
        };
        let starts = std::iter::once(0)
            .chain(source.text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Lines {
            text: source.text,
            toml,
            starts,
            json: RefCell::new(HashMap::new()),
        }
    }

    /// The 1-based line of the deepest part of `path` that the text contains.
    pub(crate) fn line_of(&self, path: &[Seg]) -> Option<usize> {
        let at = match &self.toml {
            Some(doc) => toml_offset_of(doc, path),
            None => self.json_offset_of(path),
        }?;
        Some(self.starts.partition_point(|&start| start <= at))
    }

    /// Byte offset of the deepest part of `path` found in the JSON text: a key, or an array
    /// element.
    fn json_offset_of(&self, path: &[Seg]) -> Option<usize> {
        let mut scanner = JsonScanner {
            bytes: self.text.as_bytes(),
            text: self.text,
            pos: 0,
        };
        scanner.skip_ws();
        let mut json = self.json.borrow_mut();
        let mut best = None;
        for seg in path {
            let container = scanner.pos;
            let entries = json
                .entry(container)
                .or_insert_with(|| scanner.entries(container));
            let found = match (entries, seg) {
                (Some(Entries::Object(keys)), Seg::Key(key)) => keys.get(key).copied(),
                (Some(Entries::Array(items)), Seg::Index(i)) => items.get(*i).map(|&at| (at, at)),
                _ => None,
            };
            let Some((at, value)) = found else { break };
            best = Some(at);
            scanner.pos = value;
        }
        best
    }
}

/// 1-based line of a byte offset.
pub(crate) fn line_at(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// A position while walking a TOML document along a path.
enum Place<'d> {
    Table(&'d toml_edit::Table),
    Inline(&'d toml_edit::InlineTable),
    Tables(&'d toml_edit::ArrayOfTables),
    Array(&'d toml_edit::Array),
    Leaf,
}

impl<'d> Place<'d> {
    fn of_item(item: &'d toml_edit::Item) -> Place<'d> {
        match item {
            toml_edit::Item::Table(t) => Place::Table(t),
            toml_edit::Item::ArrayOfTables(a) => Place::Tables(a),
            toml_edit::Item::Value(v) => Place::of_value(v),
            toml_edit::Item::None => Place::Leaf,
        }
    }

    fn of_value(value: &'d toml_edit::Value) -> Place<'d> {
        match value {
            toml_edit::Value::InlineTable(t) => Place::Inline(t),
            toml_edit::Value::Array(a) => Place::Array(a),
            _ => Place::Leaf,
        }
    }
}

/// The byte offset of the deepest part of `path` found in the document: the key, or the
/// `[[link]]` header of a link.
fn toml_offset_of(doc: &toml_edit::ImDocument<&str>, path: &[Seg]) -> Option<usize> {
    let mut place = Place::Table(doc.as_table());
    let mut span = None;
    for seg in path {
        let (next, here) = match (place, seg) {
            (Place::Table(t), Seg::Key(k)) => (
                t.get(k).map(Place::of_item),
                t.key(k).and_then(|k| k.span()),
            ),
            (Place::Inline(t), Seg::Key(k)) => (
                t.get(k).map(Place::of_value),
                t.key(k).and_then(|k| k.span()),
            ),
            (Place::Tables(a), Seg::Index(i)) => (
                a.get(*i).map(Place::Table),
                a.get(*i).and_then(|t| t.span()),
            ),
            (Place::Array(a), Seg::Index(i)) => (
                a.get(*i).map(Place::of_value),
                a.get(*i).and_then(|v| v.span()),
            ),
            _ => (None, None),
        };
        span = here.or(span);
        match next {
            Some(p) => place = p,
            None => break,
        }
    }
    span.map(|s| s.start)
}

/// Walks a JSON text that is known to be valid, following a path without building values.
struct JsonScanner<'t> {
    bytes: &'t [u8],
    text: &'t str,
    pos: usize,
}

impl JsonScanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.pos += 1;
        }
    }

    /// Skips a string starting at its opening quote; returns its text, quotes included.
    fn string(&mut self) -> Option<&str> {
        let start = self.pos;
        self.pos += 1;
        loop {
            match self.peek()? {
                b'\\' => self.pos += 2,
                b'"' => {
                    self.pos += 1;
                    return self.text.get(start..self.pos);
                }
                _ => self.pos += 1,
            }
        }
    }

    fn skip_value(&mut self) -> Option<()> {
        self.skip_ws();
        match self.peek()? {
            b'"' => {
                self.string()?;
            }
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.pos += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.pos += 1;
                }
            }
            _ => {
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n')
                ) {
                    self.pos += 1;
                }
            }
        }
        Some(())
    }

    /// The entries of the object or array starting at `at` (None if it is neither).
    fn entries(&mut self, at: usize) -> Option<Entries> {
        self.pos = at;
        match self.peek()? {
            b'{' => self.object().map(Entries::Object),
            b'[' => self.array().map(Entries::Array),
            _ => None,
        }
    }

    fn object(&mut self) -> Option<HashMap<String, (usize, usize)>> {
        let mut keys = HashMap::new();
        self.pos += 1;
        loop {
            self.skip_ws();
            match self.peek()? {
                b'"' => {}
                b'}' => return Some(keys),
                _ => return None,
            }
            let start = self.pos;
            let raw = self.string()?;
            let name: String = serde_json::from_str(raw).ok()?;
            self.skip_ws();
            if self.peek()? != b':' {
                return None;
            }
            self.pos += 1;
            self.skip_ws();
            keys.entry(name).or_insert((start, self.pos));
            self.skip_value()?;
            self.skip_ws();
            match self.peek()? {
                b',' => self.pos += 1,
                b'}' => return Some(keys),
                _ => return None,
            }
        }
    }

    fn array(&mut self) -> Option<Vec<usize>> {
        let mut items = Vec::new();
        self.pos += 1;
        loop {
            self.skip_ws();
            if self.peek()? == b']' {
                return Some(items);
            }
            items.push(self.pos);
            self.skip_value()?;
            self.skip_ws();
            match self.peek()? {
                b',' => self.pos += 1,
                b']' => return Some(items),
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_line(text: &str, path: &[Seg]) -> Option<usize> {
        Lines::new(Source::new(text, Format::Json)).line_of(path)
    }

    #[test]
    fn json_paths_find_their_lines() {
        let text = "{\n  \"hosts\": [\"h1\", {\"name\": \"x]}\\\"\"}],\n  \"link\": [\n    {\"a\": 1},\n    {\"a\": \"h1\",\n     \"bw\": \"10mbps\"}\n  ]\n}";
        let key = |k: &str| Seg::Key(k.to_string());
        assert_eq!(
            json_line(text, &[key("link"), Seg::Index(1), key("bw")]),
            Some(6)
        );
        assert_eq!(json_line(text, &[key("link"), Seg::Index(1)]), Some(5));
        assert_eq!(json_line(text, &[key("link"), Seg::Index(7)]), Some(3));
        assert_eq!(json_line(text, &[key("hosts"), Seg::Index(1)]), Some(2));
        assert_eq!(json_line(text, &[key("nothing")]), None);
        assert_eq!(json_line(text, &[]), None);
    }
}
