//! Which core owns which pipe, as a small JSON file: written by `convert` from a ModelNet
//! `.model`, read by `convert` to colour an export. A stopgap until partitioning exists; the
//! partitioning work should adopt or replace it. Knows nothing of how cores were chosen.

use super::fail;
use crate::doc::TopologyFile;
use crate::error::{ErrorKind, TopoError};
use serde::{Deserialize, Serialize};

/// `{"cores": ["emu1", "emu2"], "pipes": [{"link": 0, "from": "r1", "to": "r2", "core": 1}]}`
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Assignment {
    /// Core names; a pipe's `core` indexes this list.
    pub cores: Vec<String>,
    pub pipes: Vec<PipeCore>,
}

/// One pipe and its core. A pipe is a direction of a link: the link's 0-based position among
/// the file's `[[link]]` entries and the node it leaves (`from`); `to` is the other end, there
/// to make the file readable and to catch a file that belongs to another topology.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipeCore {
    pub link: usize,
    pub from: String,
    pub to: String,
    pub core: usize,
}

impl Assignment {
    pub fn to_json(&self) -> String {
        let mut text =
            serde_json::to_string_pretty(self).expect("an assignment always has a JSON form");
        text.push('\n');
        text
    }

    /// Reads an assignment and checks it against the topology it is meant for.
    pub fn from_json(
        text: &str,
        label: &str,
        file: &TopologyFile,
    ) -> Result<Assignment, TopoError> {
        let a: Assignment = serde_json::from_str(text).map_err(|e| {
            let message = e.to_string();
            let message = match message.rfind(" at line ") {
                Some(i) => message[..i].to_string(),
                None => message,
            };
            fail(
                label,
                Some(e.line()),
                None,
                ErrorKind::Syntax,
                format!("not an assignment file: {message}"),
            )
        })?;
        for (i, p) in a.pipes.iter().enumerate() {
            let subject = Some(format!(
                "pipe #{} (link {} from \"{}\")",
                i + 1,
                p.link,
                p.from
            ));
            let bad =
                |message: String| fail(label, None, subject.clone(), ErrorKind::BadValue, message);
            let Some(link) = file.links.get(p.link) else {
                return Err(bad(format!(
                    "link {} does not exist; the topology has {} links (numbered from 0)",
                    p.link,
                    file.links.len()
                )));
            };
            let ends = [(&link.a, &link.b), (&link.b, &link.a)];
            if !ends.iter().any(|(f, t)| **f == p.from && **t == p.to) {
                return Err(bad(format!(
                    "link {} joins \"{}\" and \"{}\", not \"{}\" and \"{}\"; is this the \
                     assignment of another topology?",
                    p.link, link.a, link.b, p.from, p.to
                )));
            }
            if p.core >= a.cores.len() {
                return Err(bad(format!(
                    "core {} does not exist; \"cores\" names {} (numbered from 0)",
                    p.core,
                    a.cores.len()
                )));
            }
        }
        Ok(a)
    }

    /// The core of the pipe of link `link` leaving `from`, if assigned.
    pub fn core_of(&self, link: usize, from: &str) -> Option<usize> {
        self.pipes
            .iter()
            .find(|p| p.link == link && p.from == from)
            .map(|p| p.core)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::LinkEntry;

    #[test]
    fn an_assignment_reads_back_and_is_checked_against_its_topology() {
        let file = TopologyFile {
            links: vec![LinkEntry {
                a: "r1".into(),
                b: "r2".into(),
                ..LinkEntry::default()
            }],
            ..TopologyFile::default()
        };
        let a = Assignment {
            cores: vec!["emu1".into()],
            pipes: vec![PipeCore {
                link: 0,
                from: "r2".into(),
                to: "r1".into(),
                core: 0,
            }],
        };
        let back = Assignment::from_json(&a.to_json(), "a.json", &file).unwrap();
        assert_eq!(back.core_of(0, "r2"), Some(0));
        assert_eq!(back.core_of(0, "r1"), None);
        let wrong = a.to_json().replace("\"r1\"", "\"r9\"");
        let err = Assignment::from_json(&wrong, "a.json", &file).unwrap_err();
        assert!(err.to_string().contains("another topology"), "{err}");
        let err = Assignment::from_json("{\"cores\": 1}", "a.json", &file).unwrap_err();
        assert_eq!(err.first().line, Some(1));
    }
}
