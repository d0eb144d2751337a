//! Importers: topologies published in other formats (Topology Zoo GraphML, GML, ModelNet XML,
//! Inet 3.0) become a native `TopologyFile`, with every value that had to be assumed listed in
//! `Imported::notes`. Owns the format names and import options; validation stays in `load`.

pub mod assignment;
mod attr;
mod geo;
mod gml;
mod graph;
mod graphml;
mod inet;
mod label;
mod modelnet;
pub(crate) mod params;
mod xml;
pub use xml::ENTITY_EXPANSION_LIMIT;

pub use assignment::{pipe_ids, CoreMap};
pub use geo::{EARTH_RADIUS_KM, FIBRE_KM_PER_S};

use crate::doc::TopologyFile;
use crate::error::{Diagnostic, ErrorKind, TopoError};
use crate::load::{parse_str, Format};
use std::collections::BTreeMap;
use std::path::Path;

/// Every format `check`, `sim` and `convert` read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    /// The native format as TOML.
    Toml,
    /// The native format as JSON.
    Json,
    /// GraphML, as published by the Topology Zoo or written by `convert -o x.graphml`.
    GraphMl,
    /// GML: the Topology Zoo's files and Shadow's network graphs.
    Gml,
    /// ModelNet's XML `.graph`.
    ModelNet,
    /// The output of the Inet 3.0 generator.
    Inet,
}

impl InputFormat {
    /// The names `--format` accepts, in the order they are documented.
    pub const NAMES: [&'static str; 6] = ["toml", "json", "graphml", "gml", "modelnet", "inet"];

    /// The format called `name` (one of `NAMES`).
    pub fn from_name(name: &str) -> Option<InputFormat> {
        Some(match name {
            "toml" => InputFormat::Toml,
            "json" => InputFormat::Json,
            "graphml" => InputFormat::GraphMl,
            "gml" => InputFormat::Gml,
            "modelnet" => InputFormat::ModelNet,
            "inet" => InputFormat::Inet,
            _ => return None,
        })
    }

    /// The format a file name's extension announces: `.toml`, `.json`, `.graphml`, `.gml`,
    /// `.graph` (ModelNet) or `.inet`.
    pub fn from_path(path: &Path) -> Option<InputFormat> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "toml" => Some(InputFormat::Toml),
            "json" => Some(InputFormat::Json),
            "graphml" => Some(InputFormat::GraphMl),
            "gml" => Some(InputFormat::Gml),
            "graph" => Some(InputFormat::ModelNet),
            "inet" => Some(InputFormat::Inet),
            _ => None,
        }
    }

    /// The native spelling, for the two formats that are native.
    pub fn native(self) -> Option<Format> {
        match self {
            InputFormat::Toml => Some(Format::Toml),
            InputFormat::Json => Some(Format::Json),
            _ => None,
        }
    }
}

/// Why a `HostPlan`'s text does not read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HostPlanError {
    /// A count that is not a whole number.
    #[error("\"{0}\" is not a whole number of hosts")]
    NotACount(String),
    /// `=N` with no router name before it.
    #[error("\"{0}\" has no router name before '='")]
    NoRouter(String),
}

/// How many hosts to attach to each router of a router-level topology.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostPlan {
    /// Hosts on every router not named in `per_router`.
    pub every: usize,
    /// Hosts on the routers named here (overrides `every`).
    pub per_router: BTreeMap<String, usize>,
}

impl HostPlan {
    /// Reads `--hosts-per-router`: `N` (every router), or `NAME=N,NAME=N` (only those routers),
    /// or both: `1,core1=4` (one everywhere, four on core1).
    pub fn parse(text: &str) -> Result<HostPlan, HostPlanError> {
        let mut plan = HostPlan::default();
        for word in text.split(',').map(str::trim) {
            let count = |n: &str| {
                n.parse::<usize>()
                    .map_err(|_| HostPlanError::NotACount(n.to_string()))
            };
            match word.split_once('=') {
                Some((name, n)) if !name.is_empty() => {
                    plan.per_router.insert(name.to_string(), count(n)?);
                }
                Some(_) => return Err(HostPlanError::NoRouter(word.to_string())),
                None => plan.every = count(word)?,
            }
        }
        Ok(plan)
    }

    /// Whether the plan attaches any host at all.
    pub fn is_empty(&self) -> bool {
        self.every == 0 && self.per_router.values().all(|&n| n == 0)
    }

    fn count(&self, router: &str) -> usize {
        self.per_router.get(router).copied().unwrap_or(self.every)
    }
}

/// Rate of a link whose file gives none.
pub const DEFAULT_BW: &str = "1Gbit";
/// Delay of a link whose length is unknown.
pub const DEFAULT_DELAY: &str = "1ms";
/// Rate of the link of each attached host.
pub const ACCESS_BW: &str = "1Gbit";
/// Delay of the link of each attached host.
pub const ACCESS_DELAY: &str = "100us";
/// Delay per unit of Inet's plane: its 10 000 × 10 000 plane as 10 000 km at fibre speed.
pub const INET_DELAY_PER_UNIT: &str = "5us";

/// The values an importer uses where a file says nothing. Every use is counted in the notes.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportOptions {
    /// Hosts to attach (router-level formats have none of their own).
    pub hosts: HostPlan,
    /// Rate of the link from each attached host to its router.
    pub access_bw: String,
    /// Delay of the link from each attached host to its router.
    pub access_delay: String,
    /// Rate of a link whose file gives no speed.
    pub default_bw: String,
    /// Delay of a link whose length is unknown (an end without coordinates).
    pub default_delay: String,
    /// Speed of signals along a link, for delays from distances (light in fibre, about 2/3 c).
    pub km_per_s: f64,
    /// Delay per unit of distance on Inet's plane.
    pub inet_delay_per_unit: String,
}

impl Default for ImportOptions {
    fn default() -> ImportOptions {
        ImportOptions {
            hosts: HostPlan::default(),
            access_bw: ACCESS_BW.into(),
            access_delay: ACCESS_DELAY.into(),
            default_bw: DEFAULT_BW.into(),
            default_delay: DEFAULT_DELAY.into(),
            km_per_s: FIBRE_KM_PER_S,
            inet_delay_per_unit: INET_DELAY_PER_UNIT.into(),
        }
    }
}

/// The result of an import: the native document and what was assumed on the way.
#[derive(Clone, Debug, PartialEq)]
pub struct Imported {
    /// The topology as a native document: the input's nodes and links, the hosts the options
    /// attached, and every assumed value written in. Not yet resolved (`load::resolve` checks
    /// it); for TOML or JSON input, the file as parsed.
    pub file: TopologyFile,
    /// One line per kind of assumption, with counts ("12 of 40 links had no speed: ...").
    pub notes: Vec<String>,
    /// Which core owns which pipe, when the input said (ModelNet's `.model`).
    pub cores: Option<CoreMap>,
}

/// Imports `text` in `format`; `label` names the file in errors. Native files are only parsed
/// (not resolved) and carry no notes; `options` apply to the other formats.
pub fn import_str(
    text: &str,
    format: InputFormat,
    label: &str,
    options: &ImportOptions,
) -> Result<Imported, TopoError> {
    let graph = match format {
        InputFormat::Toml | InputFormat::Json => {
            let native = format.native().expect("a native format");
            return Ok(Imported {
                file: parse_str(text, native, label)?,
                notes: Vec::new(),
                cores: None,
            });
        }
        InputFormat::GraphMl => graphml::read(text, label)?,
        InputFormat::Gml => gml::read(text, label)?,
        InputFormat::ModelNet => modelnet::read_graph(text, label)?.finish(),
        InputFormat::Inet => inet::read(text, label)?,
    };
    graph.into_imported(label, options)
}

/// Imports a ModelNet `.graph` with its `.model`: the model's parameters go over the graph's,
/// as ModelNet emulates them, and its emulator per hop becomes the core of that hop's pipe.
pub fn import_modelnet(
    graph_text: &str,
    graph_label: &str,
    model_text: &str,
    model_label: &str,
    options: &ImportOptions,
) -> Result<Imported, TopoError> {
    let mut graph = modelnet::read_graph(graph_text, graph_label)?;
    let model = modelnet::read_model(model_text, model_label)?;
    let hops = model.apply(&mut graph, graph_label, model_label)?;
    let graph = graph.finish();
    let edges = graph.directed_edges.clone();
    let mut imported = graph.into_imported(graph_label, options)?;
    imported.cores = Some(modelnet::core_map(
        &imported.file,
        &edges,
        model.cores(),
        &hops,
    ));
    Ok(imported)
}

/// Reads and imports a file; the format comes from `format` or else from the extension.
pub fn import_path(
    path: &Path,
    format: Option<InputFormat>,
    options: &ImportOptions,
) -> Result<Imported, TopoError> {
    let label = path.display().to_string();
    let (format, text) = read_input(path, format)?;
    import_str(&text, format, &label, options)
}

/// The format of `path` and its text, or an error naming the file.
pub(crate) fn read_input(
    path: &Path,
    format: Option<InputFormat>,
) -> Result<(InputFormat, String), TopoError> {
    let label = path.display().to_string();
    let format = format
        .or_else(|| InputFormat::from_path(path))
        .ok_or_else(|| {
            fail(
                &label,
                None,
                None,
                ErrorKind::Io,
                "unknown file type; a topology file ends in .toml, .json, .graphml, .gml, .graph \
             (ModelNet) or .inet, or its format must be given"
                    .into(),
            )
        })?;
    let text = crate::read::read_text(path, crate::read::TOPOLOGY)
        .map_err(|e| fail(&label, e.line(), None, ErrorKind::Io, e.to_string()))?;
    Ok((format, text))
}

/// An import error with one diagnostic.
pub(crate) fn fail(
    file: &str,
    line: Option<usize>,
    subject: Option<String>,
    kind: ErrorKind,
    message: String,
) -> TopoError {
    TopoError::new(vec![Diagnostic {
        kind,
        file: file.to_string(),
        line,
        subject,
        message,
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_plans_read_counts_and_names() {
        assert_eq!(HostPlan::parse("2").unwrap().every, 2);
        let plan = HostPlan::parse("1, core=4").unwrap();
        assert_eq!((plan.count("core"), plan.count("edge")), (4, 1));
        assert!(HostPlan::parse("0").unwrap().is_empty());
        assert!(HostPlan::parse("x")
            .unwrap_err()
            .to_string()
            .contains("\"x\""));
        assert!(HostPlan::parse("=3").is_err());
    }

    #[test]
    fn formats_come_from_names_and_extensions() {
        for name in InputFormat::NAMES {
            assert!(InputFormat::from_name(name).is_some(), "{name}");
        }
        assert_eq!(
            InputFormat::from_path(Path::new("a/Abilene.GraphML")),
            Some(InputFormat::GraphMl)
        );
        assert_eq!(
            InputFormat::from_path(Path::new("x.graph")),
            Some(InputFormat::ModelNet)
        );
        assert_eq!(InputFormat::from_path(Path::new("x.txt")), None);
    }
}
