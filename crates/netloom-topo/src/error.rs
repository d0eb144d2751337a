//! Errors of loading a topology: each names the file, the line where the format gives one, the
//! node or link, and what would be valid. Finding the line is `load`'s job, not this module's.

use std::fmt;

/// What kind of mistake a diagnostic reports (for callers and tests that branch on it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The file could not be read.
    Io,
    /// Not valid TOML or JSON.
    Syntax,
    /// A key the format does not know.
    UnknownKey,
    /// A value of the wrong type (a table where a string belongs, ...).
    WrongType,
    /// A value of the right type that is not valid (bad unit, out of range, ...).
    BadValue,
    /// A required key or section is absent.
    Missing,
    /// A name that refers to nothing: a link end, a class.
    UnknownName,
    /// A node name used twice.
    Duplicate,
    /// A link from a node to itself.
    SelfLoop,
    /// A host without links, or hosts that cannot reach each other.
    Unconnected,
}

/// One problem in a topology file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// What kind of mistake it is, for code that branches on it; `message` says the rest.
    pub kind: ErrorKind,
    /// The file as the caller labelled it (usually its path).
    pub file: String,
    /// 1-based line, where the format allows finding one.
    pub line: Option<usize>,
    /// The node, link or section concerned: `link r1-r2`, `host h1`, `[defaults]`.
    pub subject: Option<String>,
    /// What is wrong and what would be valid.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": ")?;
        if let Some(subject) = &self.subject {
            write!(f, "{subject}: ")?;
        }
        write!(f, "{}", self.message)
    }
}

/// Loading failed. Holds every problem found (at least one), in the order found; `Display`
/// prints them one per line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", render(.diagnostics))]
pub struct TopoError {
    diagnostics: Vec<Diagnostic>,
}

/// More errors than this are summarized as a count: after the first few, they are usually
/// consequences of the same mistake.
const MAX_SHOWN: usize = 20;

fn render(diagnostics: &[Diagnostic]) -> String {
    let mut out: Vec<String> = diagnostics
        .iter()
        .take(MAX_SHOWN)
        .map(|d| d.to_string())
        .collect();
    if diagnostics.len() > MAX_SHOWN {
        out.push(format!(
            "... and {} more errors",
            diagnostics.len() - MAX_SHOWN
        ));
    }
    out.join("\n")
}

impl TopoError {
    /// Panics if `diagnostics` is empty: an error with nothing to say is a bug in the loader.
    pub(crate) fn new(diagnostics: Vec<Diagnostic>) -> TopoError {
        assert!(!diagnostics.is_empty(), "TopoError without a diagnostic");
        TopoError { diagnostics }
    }

    /// The first problem found.
    pub fn first(&self) -> &Diagnostic {
        &self.diagnostics[0]
    }

    /// Every problem found, at least one, in the order found. `Display` prints only the first
    /// 20 and a count of the rest; this has them all.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// The kind of the first problem.
    pub fn kind(&self) -> ErrorKind {
        self.first().kind
    }
}

/// One step of the path to a value in the file: a key of a table or an index into an array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// What a problem is about, before link numbering is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Subject {
    None,
    /// The link at this index of `[[link]]`; named `link a-b` or `link #n (a-b)` when reported.
    Link(usize),
    Text(String),
}

/// A problem located by its path in the document; `load` turns it into a `Diagnostic` with a
/// file name and, where it can, a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Issue {
    pub kind: ErrorKind,
    pub path: Vec<Seg>,
    pub subject: Subject,
    pub message: String,
}
