//! The topology input flags that `check`, `sim` and `convert` share: `--format` and the import
//! options (hosts to attach, defaults for what a file leaves out; docs/import.md). Prints what
//! an importer assumed to standard error, so nothing is guessed silently.

use anyhow::{anyhow, Result};
use clap::Args;
use netloom_topo::import::{
    ACCESS_BW, ACCESS_DELAY, DEFAULT_BW, DEFAULT_DELAY, FIBRE_KM_PER_S, INET_DELAY_PER_UNIT,
};
use netloom_topo::units::{self, Range};
use netloom_topo::{Bundle, ErrorKind, HostPlan, ImportOptions, InputFormat, TopoError, Topology};
use std::path::Path;

#[derive(Args, Clone, Debug)]
pub struct InputArgs {
    /// Input format if the extension does not say: toml, json, graphml, gml, modelnet or inet.
    #[arg(long, value_parser = format_name)]
    format: Option<InputFormat>,
    /// Hosts to attach to each router of an imported file: N, or NAME=N,... for some routers,
    /// or both (1,core=4).
    #[arg(long, value_name = "N|NAME=N,...", value_parser = HostPlan::parse)]
    hosts_per_router: Option<HostPlan>,
    /// Rate and delay of the link of each attached host.
    #[arg(long, value_name = "BW/DELAY", default_value_t = format!("{ACCESS_BW}/{ACCESS_DELAY}"))]
    access_link: String,
    /// Rate of an imported link whose file gives none.
    #[arg(long, default_value = DEFAULT_BW)]
    default_bw: String,
    /// Delay of an imported link whose length is unknown (an end without coordinates).
    #[arg(long, default_value = DEFAULT_DELAY)]
    default_delay: String,
    /// Signal speed for delays from coordinates, in km/s (200000 is light in fibre, about 2/3 c).
    #[arg(long, default_value_t = FIBRE_KM_PER_S)]
    km_per_s: f64,
    /// Delay per unit of distance on an Inet file's plane.
    #[arg(long, default_value = INET_DELAY_PER_UNIT)]
    inet_delay_per_unit: String,
}

/// A clap parser for a plain number flag: finite and within `range`, or an error that gives the
/// range (netloom_topo::units::parse_number, shared with the file formats).
pub fn number_in(range: Range) -> impl Fn(&str) -> Result<f64, String> + Clone {
    move |text| units::parse_number(text, range).map_err(|e| e.to_string())
}

fn format_name(name: &str) -> Result<InputFormat, String> {
    InputFormat::from_name(name).ok_or_else(|| format!("one of {}", InputFormat::NAMES.join(", ")))
}

impl InputArgs {
    pub fn format(&self) -> Option<InputFormat> {
        self.format
    }

    /// Whether `path` is read as a native file.
    fn native(&self, path: &Path) -> bool {
        self.format
            .or_else(|| InputFormat::from_path(path))
            .is_some_and(|f| f.native().is_some())
    }

    /// The import options for reading `path`.
    pub fn options(&self, path: &Path) -> Result<ImportOptions> {
        if self.native(path) && self.hosts_per_router.is_some() {
            return Err(anyhow!(
                "--hosts-per-router is for imported formats; {} lists its own hosts",
                path.display()
            ));
        }
        let Some((bw, delay)) = self.access_link.split_once('/') else {
            return Err(anyhow!(
                "--access-link {}: write BW/DELAY, e.g. 1Gbit/100us",
                self.access_link
            ));
        };
        Ok(ImportOptions {
            hosts: self.hosts_per_router.clone().unwrap_or_default(),
            access_bw: bw.to_string(),
            access_delay: delay.to_string(),
            default_bw: self.default_bw.clone(),
            default_delay: self.default_delay.clone(),
            km_per_s: self.km_per_s,
            inet_delay_per_unit: self.inet_delay_per_unit.clone(),
        })
    }

    /// Loads and resolves `path` in any format, printing the importer's notes. A router-level
    /// file without hosts gets told how to attach some.
    pub fn load(&self, path: &Path) -> Result<Topology> {
        let options = self.options(path)?;
        let loaded = netloom_topo::load_path_as(path, self.format, &options);
        let (topo, notes) = self.explained(path, loaded)?;
        print_notes(path, &notes);
        Ok(topo)
    }

    /// `load`, the topology packed for other machines too.
    pub fn load_bundled(&self, path: &Path) -> Result<(Topology, Bundle)> {
        let options = self.options(path)?;
        let loaded = Bundle::read(path, self.format, &options)
            .map(|(topo, notes, bundle)| ((topo, bundle), notes));
        let (loaded, notes) = self.explained(path, loaded)?;
        print_notes(path, &notes);
        Ok(loaded)
    }

    /// A load's outcome, a router-level file without hosts told how to attach some.
    fn explained<T>(&self, path: &Path, loaded: Result<T, TopoError>) -> Result<T> {
        loaded.map_err(|e| {
            if !self.native(path)
                && e.kind() == ErrorKind::Missing
                && e.first().message.starts_with("no hosts")
            {
                anyhow!(
                    "{}: no hosts: the file describes routers only; attach hosts with \
                     --hosts-per-router N (docs/import.md)",
                    path.display()
                )
            } else {
                e.into()
            }
        })
    }
}

/// What an importer assumed, one line each on standard error.
pub fn print_notes(path: &Path, notes: &[String]) {
    for note in notes {
        eprintln!("netloom: {}: {note}", path.display());
    }
}
