//! `netloom convert IN -o OUT`: any topology format to the native one (`.toml`, `.json`) for
//! editing, or to Graphviz `.dot` / `.graphml` for viewing, coloured per core when given an
//! assignment. A ModelNet `.model` becomes an assignment file next to OUT.

use crate::input::{print_notes, InputArgs};
use anyhow::{bail, Context, Result};
use clap::Args;
use netloom_partition::Assignment;
use netloom_topo::export::{to_dot, to_graphml};
use netloom_topo::read::{read_text, Kind, SIDE_JSON, TOPOLOGY};
use netloom_topo::{import, write, Imported, InputFormat, Topology};
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct ConvertArgs {
    /// Input topology, in any format `check` reads.
    file: PathBuf,
    /// Output: .toml or .json (native), .dot (Graphviz) or .graphml.
    #[arg(short, long)]
    output: PathBuf,
    #[command(flatten)]
    input: InputArgs,
    /// ModelNet .model of a .graph input: its hop parameters go over the .graph's, as ModelNet
    /// emulates them, and its emulator per hop becomes the core of each pipe, written as OUT's
    /// name with .assignment.json (and the colours of a .dot or .graphml).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Colour a .dot or .graphml output by this assignment file (pipe → core).
    #[arg(long, conflicts_with = "model")]
    assignment: Option<PathBuf>,
}

/// What the output file name asks for.
enum Output {
    Toml,
    Json,
    Dot,
    GraphMl,
}

fn output_kind(path: &Path) -> Result<Output> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    Ok(match ext.to_ascii_lowercase().as_str() {
        "toml" => Output::Toml,
        "json" => Output::Json,
        "dot" | "gv" => Output::Dot,
        "graphml" => Output::GraphMl,
        _ => bail!(
            "-o {}: the output name must end in .toml, .json (native), .dot or .graphml",
            path.display()
        ),
    })
}

fn read(path: &Path, kind: Kind) -> Result<String> {
    read_text(path, kind).with_context(|| path.display().to_string())
}

fn import(args: &ConvertArgs) -> Result<Imported> {
    let options = args.input.options(&args.file)?;
    let Some(model) = &args.model else {
        return Ok(netloom_topo::import_path(
            &args.file,
            args.input.format(),
            &options,
        )?);
    };
    let format = args
        .input
        .format()
        .or_else(|| InputFormat::from_path(&args.file));
    if format != Some(InputFormat::ModelNet) {
        bail!("--model goes with a ModelNet .graph input (or --format modelnet)");
    }
    Ok(import::import_modelnet(
        &read(&args.file, TOPOLOGY)?,
        &args.file.display().to_string(),
        &read(model, TOPOLOGY)?,
        &model.display().to_string(),
        &options,
    )?)
}

pub fn run(args: ConvertArgs) -> Result<()> {
    let kind = output_kind(&args.output)?;
    let imported = import(&args)?;
    print_notes(&args.file, &imported.notes);
    let file = &imported.file;
    let label = args.file.display().to_string();
    // A file with hosts must load as written; a router-level one is written as it is, to be
    // completed by hand or with --hosts-per-router.
    let topo: Option<Topology> = if file.hosts.is_empty() {
        eprintln!(
            "netloom: {label}: no hosts: written as routers only; `check` and `sim` need hosts \
             (--hosts-per-router N)"
        );
        None
    } else {
        Some(netloom_topo::resolve(file, &label)?)
    };
    let mut cores: Option<Vec<u32>> = None;
    if let Some(path) = &args.assignment {
        let Some(topo) = &topo else {
            bail!("--assignment needs a topology with hosts (--hosts-per-router N)");
        };
        let a = Assignment::from_json(&read(path, SIDE_JSON)?, topo)
            .with_context(|| format!("--assignment {}", path.display()))?;
        cores = Some(a.pipes);
    }
    if let (Some(map), Some(topo)) = (&imported.cores, &topo) {
        let unassigned = map.pipes.iter().filter(|c| c.is_none()).count();
        let a = Assignment {
            cores: map.cores.len().max(1) as u32,
            pipes: map.pipes.iter().map(|c| c.unwrap_or(0)).collect(),
            topology: Some(topo.name.clone()),
            method: Some("modelnet .model".into()),
        };
        let path = args.output.with_extension("assignment.json");
        netloom_os::write_output(&path, (a.to_json() + "\n").as_bytes())?;
        let names: Vec<String> = map
            .cores
            .iter()
            .enumerate()
            .map(|(i, n)| format!("{i} = {n}"))
            .collect();
        eprintln!(
            "netloom: wrote {} ({} pipes on {} cores: {}{})",
            path.display(),
            a.pipes.len(),
            a.cores,
            names.join(", "),
            if unassigned > 0 {
                format!("; {unassigned} pipes the model does not name are on core 0")
            } else {
                String::new()
            }
        );
        cores = Some(a.pipes);
    }
    let name = file
        .topology
        .as_ref()
        .and_then(|m| m.name.clone())
        .unwrap_or_else(|| label.clone());
    let text = match kind {
        Output::Toml => write::to_toml(file),
        Output::Json => write::to_json(file),
        Output::Dot => to_dot(file, &name, cores.as_deref()),
        Output::GraphMl => to_graphml(file, &name, cores.as_deref()),
    };
    netloom_os::write_output(&args.output, text.as_bytes())?;
    eprintln!(
        "netloom: wrote {} ({} hosts, {} routers, {} links)",
        args.output.display(),
        file.hosts.len(),
        file.routers.len(),
        file.links.len()
    );
    Ok(())
}
