//! The assignment (pipe → core) and its JSON file, as documented in docs/partition.md.

use crate::error::PartitionError;
use netloom_topo::{PipeId, Topology};
use serde::{Deserialize, Serialize};

/// Which core owns each pipe. Pipe ids are `Topology::pipes` indices: links in file order, a
/// duplex link giving its a→b pipe then its b→a pipe, a shared medium one pipe.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assignment {
    /// Number of cores; cores are numbered 0 to `cores` − 1 (a core may own no pipe).
    pub cores: u32,
    /// `pipes[p]`: the core that owns pipe p.
    pub pipes: Vec<u32>,
    /// The topology's name, checked when the file is applied if present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
    /// How the assignment was made (informative only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

impl Assignment {
    /// Reads the JSON form and checks it against `topo`.
    pub fn from_json(text: &str, topo: &Topology) -> Result<Assignment, PartitionError> {
        let a: Assignment = serde_json::from_str(text).map_err(|source| PartitionError::Json {
            what: "assignment",
            source,
        })?;
        a.check(topo)?;
        Ok(a)
    }

    /// The JSON form, on one line.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("an assignment always serializes")
    }

    /// Every pipe of `topo` is on exactly one existing core, and the names agree.
    pub fn check(&self, topo: &Topology) -> Result<(), PartitionError> {
        if self.cores == 0 {
            return Err(PartitionError::NoCores);
        }
        if let Some(name) = self.topology.as_ref().filter(|n| **n != topo.name) {
            return Err(PartitionError::Topology {
                what: "assignment",
                found: name.clone(),
                expected: topo.name.clone(),
            });
        }
        if self.pipes.len() != topo.pipes.len() {
            return Err(PartitionError::PipeCount {
                what: "assignment",
                found: self.pipes.len(),
                expected: topo.pipes.len(),
                topology: topo.name.clone(),
            });
        }
        match self.pipes.iter().position(|&c| c >= self.cores) {
            Some(p) => Err(PartitionError::CoreOutOfRange {
                pipe: p as PipeId,
                core: self.pipes[p],
                cores: self.cores,
            }),
            None => Ok(()),
        }
    }

    /// The core that owns `pipe`.
    pub fn core(&self, pipe: PipeId) -> u32 {
        self.pipes[pipe as usize]
    }
}
