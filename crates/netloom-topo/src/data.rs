//! The data files a topology names (measured MAC delay profiles, Mahimahi delivery traces):
//! read relative to the topology file, each once, and shared by every pipe that uses it.

use crate::read::{read_text, Kind, PROFILE, TRACE};
use netloom_link::{DelayProfile, Trace};
use std::collections::BTreeMap;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Files read so far, by resolved path, with the error of each that failed (as a message).
pub(crate) struct DataFiles {
    base: PathBuf,
    profiles: BTreeMap<PathBuf, Result<Arc<DelayProfile>, String>>,
    traces: BTreeMap<PathBuf, Result<Arc<Trace>, String>>,
}

impl DataFiles {
    /// Files named relative to the directory of the topology file labelled `label` (its path).
    pub(crate) fn new(label: &str) -> DataFiles {
        DataFiles {
            base: Path::new(label)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            profiles: BTreeMap::new(),
            traces: BTreeMap::new(),
        }
    }

    pub(crate) fn profile(&mut self, name: &str) -> Result<Arc<DelayProfile>, String> {
        read(
            &mut self.profiles,
            &self.base,
            name,
            PROFILE,
            DelayProfile::parse,
        )
    }

    pub(crate) fn trace(&mut self, name: &str) -> Result<Arc<Trace>, String> {
        read(&mut self.traces, &self.base, name, TRACE, Trace::parse)
    }
}

/// The file `name` (relative to `base`) parsed by `parse`, from `cache` if read before.
fn read<T, E: Display>(
    cache: &mut BTreeMap<PathBuf, Result<Arc<T>, String>>,
    base: &Path,
    name: &str,
    kind: Kind,
    parse: impl Fn(&str) -> Result<T, E>,
) -> Result<Arc<T>, String> {
    let path = base.join(name);
    cache
        .entry(path.clone())
        .or_insert_with(|| {
            let text = read_text(&path, kind).map_err(|e| format!("{}: {e}", path.display()))?;
            parse(&text)
                .map(Arc::new)
                .map_err(|e| format!("{}: {e}", path.display()))
        })
        .clone()
}
