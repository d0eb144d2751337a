//! The data files a topology names (measured MAC delay profiles, Mahimahi delivery traces):
//! read relative to the topology file, each once, and shared by every pipe that uses it; or
//! taken from a `Bundle` sent from another machine, and kept for one when one is packed.

use crate::read::{read_text, Kind, ReadError, PROFILE, TRACE};
use netloom_link::{DelayProfile, ProfileError, Trace, TraceError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a data file could not be had; each message starts with the file's path.
#[derive(Clone, Debug, thiserror::Error)]
pub(crate) enum DataFileError {
    /// The file could not be read (missing, not a file, too large, not UTF-8).
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why (shared: a failed read is kept for every pipe that names the file).
        source: Arc<ReadError>,
    },
    /// The file is not among those sent from another machine with the topology.
    #[error("{}: not among the files sent with the topology", path.display())]
    NotSent {
        /// The file.
        path: PathBuf,
    },
    /// The file is not a MAC delay profile.
    #[error("{}: {source}", path.display())]
    Profile {
        /// The file.
        path: PathBuf,
        /// What is wrong in it.
        source: ProfileError,
    },
    /// The file is not a Mahimahi delivery trace.
    #[error("{}: {source}", path.display())]
    Trace {
        /// The file.
        path: PathBuf,
        /// What is wrong in it.
        source: TraceError,
    },
}

/// Files read so far, by resolved path, with the error of each that failed.
pub(crate) struct DataFiles {
    base: PathBuf,
    texts: Texts,
    profiles: BTreeMap<PathBuf, Result<Arc<DelayProfile>, DataFileError>>,
    traces: BTreeMap<PathBuf, Result<Arc<Trace>, DataFileError>>,
}

impl DataFiles {
    /// Files named relative to the directory of the topology file labelled `label` (its path).
    pub(crate) fn new(label: &str) -> DataFiles {
        DataFiles {
            base: Path::new(label)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            texts: Texts::Disk,
            profiles: BTreeMap::new(),
            traces: BTreeMap::new(),
        }
    }

    /// Files read from the disk as `new` reads them, each text kept by its name as the
    /// topology writes it (`texts` gives them), to pack a `Bundle`.
    pub(crate) fn keeping(label: &str) -> DataFiles {
        DataFiles {
            texts: Texts::Kept(BTreeMap::new()),
            ..DataFiles::new(label)
        }
    }

    /// Files taken from `sent` (texts by name as the topology writes them), never the disk.
    pub(crate) fn sent(label: &str, sent: BTreeMap<String, String>) -> DataFiles {
        DataFiles {
            texts: Texts::Sent(sent),
            ..DataFiles::new(label)
        }
    }

    /// The texts kept (`keeping`), by name.
    pub(crate) fn texts(self) -> BTreeMap<String, String> {
        match self.texts {
            Texts::Kept(kept) => kept,
            Texts::Disk | Texts::Sent(_) => BTreeMap::new(),
        }
    }

    pub(crate) fn profile(&mut self, name: &str) -> Result<Arc<DelayProfile>, DataFileError> {
        read(
            &mut self.profiles,
            &mut self.texts,
            &self.base,
            name,
            PROFILE,
            |text, path| {
                DelayProfile::parse(text).map_err(|source| DataFileError::Profile { path, source })
            },
        )
    }

    pub(crate) fn trace(&mut self, name: &str) -> Result<Arc<Trace>, DataFileError> {
        read(
            &mut self.traces,
            &mut self.texts,
            &self.base,
            name,
            TRACE,
            |text, path| Trace::parse(text).map_err(|source| DataFileError::Trace { path, source }),
        )
    }
}

/// Where the files' texts come from.
enum Texts {
    /// The disk.
    Disk,
    /// The disk, each text kept by name.
    Kept(BTreeMap<String, String>),
    /// A bundle's files, by name.
    Sent(BTreeMap<String, String>),
}

impl Texts {
    /// The text of the file `name`, at `path`.
    fn get(&mut self, name: &str, path: &Path, kind: Kind) -> Result<String, DataFileError> {
        let from_disk = || {
            read_text(path, kind).map_err(|e| DataFileError::Read {
                path: path.to_path_buf(),
                source: Arc::new(e),
            })
        };
        match self {
            Texts::Disk => from_disk(),
            Texts::Kept(kept) => {
                let text = from_disk()?;
                kept.insert(name.to_string(), text.clone());
                Ok(text)
            }
            Texts::Sent(sent) => sent
                .get(name)
                .cloned()
                .ok_or_else(|| DataFileError::NotSent {
                    path: path.to_path_buf(),
                }),
        }
    }
}

/// The file `name` (relative to `base`) parsed by `parse` (given the text and the path, for
/// its error), from `cache` if read before.
fn read<T>(
    cache: &mut BTreeMap<PathBuf, Result<Arc<T>, DataFileError>>,
    texts: &mut Texts,
    base: &Path,
    name: &str,
    kind: Kind,
    parse: impl Fn(&str, PathBuf) -> Result<T, DataFileError>,
) -> Result<Arc<T>, DataFileError> {
    let path = base.join(name);
    cache
        .entry(path.clone())
        .or_insert_with(|| {
            let text = texts.get(name, &path, kind)?;
            parse(&text, path.clone()).map(Arc::new)
        })
        .clone()
}
