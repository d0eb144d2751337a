//! A topology packed to travel to another machine: its native document and the texts of the
//! data files it names (traces, profiles), so that the machine loads the same topology without
//! the files at the same paths there.

use crate::data::DataFiles;
use crate::import::{self, ImportOptions, InputFormat};
use crate::load::{parse_str, report, resolve_with, Format, Namer};
use crate::locate::Source;
use crate::model::Topology;
use crate::TopoError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// A topology as one machine sends it to another.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bundle {
    /// The file's name where it was read, for errors and the topology's default name.
    pub label: String,
    /// The document in the native schema, as JSON (an imported format already converted).
    pub document: String,
    /// The text of each data file the topology names, by the name it writes.
    pub files: BTreeMap<String, String>,
}

impl Bundle {
    /// Reads, checks and resolves a topology file as `load_path_as` does, and packs it.
    pub fn read(
        path: &Path,
        format: Option<InputFormat>,
        options: &ImportOptions,
    ) -> Result<(Topology, Vec<String>, Bundle), TopoError> {
        let label = path.display().to_string();
        let (format, text) = import::read_input(path, format)?;
        let (file, notes, source) = match format.native() {
            Some(native) => (
                parse_str(&text, native, &label)?,
                Vec::new(),
                Some(Source::new(&text, native)),
            ),
            None => {
                let imported = import::import_str(&text, format, &label, options)?;
                (imported.file, imported.notes, None)
            }
        };
        let mut files = DataFiles::keeping(&label);
        let topology = resolve_with(&file, &label, &mut files)
            .map_err(|issues| report(issues, &label, &Namer::from_file(&file), source))?;
        let bundle = Bundle {
            document: crate::write::to_json(&file),
            files: files.texts(),
            label,
        };
        Ok((topology, notes, bundle))
    }

    /// The topology, loaded from the document and the files sent with it (never the disk).
    pub fn load(&self) -> Result<Topology, TopoError> {
        let file = parse_str(&self.document, Format::Json, &self.label)?;
        let mut files = DataFiles::sent(&self.label, self.files.clone());
        resolve_with(&file, &self.label, &mut files).map_err(|issues| {
            let source = Source::new(&self.document, Format::Json);
            report(issues, &self.label, &Namer::from_file(&file), Some(source))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A topology naming a trace in a directory of its own, the trace beside it.
    fn written(dir: &Path) -> std::path::PathBuf {
        std::fs::create_dir_all(dir.join("traces")).unwrap();
        std::fs::write(dir.join("traces/up.trace"), "0\n5\n5\n9\n").unwrap();
        let path = dir.join("topo.toml");
        std::fs::write(
            &path,
            "hosts = [\"a\", \"b\"]\n[[link]]\na = \"a\"\nb = \"b\"\nbw = \"10Mbit\"\n\
             delay = \"3ms\"\n[link.a_to_b]\ntrace = \"traces/up.trace\"\n",
        )
        .unwrap();
        path
    }

    #[test]
    fn a_bundle_loads_the_same_topology_with_its_files_gone() {
        let dir = std::env::temp_dir().join(format!("netloom-bundle-{}", std::process::id()));
        let path = written(&dir);
        let (here, notes, bundle) = Bundle::read(&path, None, &ImportOptions::default()).unwrap();
        assert!(notes.is_empty());
        assert_eq!(
            bundle.files.keys().collect::<Vec<_>>(),
            ["traces/up.trace"],
            "the trace is packed under the name the topology gives it"
        );
        // Sent as JSON and loaded where the files are not.
        let sent: Bundle = serde_json::from_str(&serde_json::to_string(&bundle).unwrap()).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let there = sent.load().unwrap();
        assert_eq!(format!("{:?}", there.pipes), format!("{:?}", here.pipes));
        assert_eq!(there.name, here.name);
        // Without its files, the same document is refused naming the missing one.
        let bare = Bundle {
            files: BTreeMap::new(),
            ..sent
        };
        let e = bare.load().unwrap_err().to_string();
        assert!(
            e.contains("up.trace: not among the files sent with the topology"),
            "{e}"
        );
    }

    #[test]
    fn a_bundle_carries_the_addresses_and_cpu_limits() {
        // A cluster's workers number their hosts from what the coordinator sends.
        let dir = std::env::temp_dir().join(format!("netloom-bundle-addr-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("topo.toml");
        std::fs::write(
            &path,
            "hosts = [\"a\", { name = \"b\", ipv4 = \"10.0.0.100\", cpu = 0.5 }]\n\
             [topology]\naddresses = \"10.0.0.0/8\"\n\
             [[link]]\na = \"a\"\nb = \"b\"\nbw = \"10Mbit\"\ndelay = \"3ms\"\n",
        )
        .unwrap();
        let (here, _, bundle) = Bundle::read(&path, None, &ImportOptions::default()).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let sent: Bundle = serde_json::from_str(&serde_json::to_string(&bundle).unwrap()).unwrap();
        let there = sent.load().unwrap();
        assert_eq!(there.addresses.to_string(), "10.0.0.0/8");
        let addresses = |t: &Topology| {
            (0..2)
                .map(|i| t.host_address(i).0.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(addresses(&there), ["10.0.0.1", "10.0.0.100"]);
        assert_eq!(addresses(&there), addresses(&here));
        assert_eq!(there.node(1).cpu, Some(0.5));
    }
}
