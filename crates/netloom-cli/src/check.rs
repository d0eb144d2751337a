//! `netloom check FILE`: load, validate and route a topology, then print its summary with the
//! routed diameter; with `--capacity`, whether its load fits this machine (docs/calibrate.md).

use anyhow::{Context, Result};
use clap::Args;
use netloom_route::{Diameter, RouteLength, Routes};
use netloom_topo::{summarize, Summary, Topology};
use serde::Serialize;
use std::path::PathBuf;

#[derive(Args)]
pub struct CheckArgs {
    /// Topology file (.toml or .json, or a format docs/import.md lists).
    file: PathBuf,
    #[command(flatten)]
    input: crate::input::InputArgs,
    /// Print the summary as JSON (schema in docs/json.md).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    capacity: crate::calibrate::CapacityArgs,
}

/// One route at the diameter, by host names.
#[derive(Serialize)]
struct Route {
    src: String,
    dst: String,
    hops: u32,
    delay_ns: u64,
}

#[derive(Serialize)]
struct CheckReport {
    /// Schema version; bumped only on incompatible changes (docs/json.md).
    schema: u32,
    #[serde(flatten)]
    summary: Summary,
    /// The route with the most hops and the one with the largest propagation delay
    /// (`null` for a topology with a single host).
    diameter_hops: Option<Route>,
    diameter_delay: Option<Route>,
    routing_table_bytes: usize,
}

fn route(topo: &Topology, r: &RouteLength) -> Route {
    Route {
        src: topo.node(r.src).name.clone(),
        dst: topo.node(r.dst).name.clone(),
        hops: r.hops,
        delay_ns: r.delay.as_nanos(),
    }
}

pub fn run(args: CheckArgs) -> Result<()> {
    let topo = args.input.load(&args.file)?;
    let routes = Routes::try_compute(&topo).with_context(|| args.file.display().to_string())?;
    if args.capacity.capacity {
        return capacity(&topo, &args);
    }
    // The loader refuses files whose hosts are not all connected, so the diameter is missing
    // only when there is a single host.
    let diameter: Option<Diameter> = routes.diameter(&topo);
    let report = CheckReport {
        schema: 1,
        summary: summarize(&topo),
        diameter_hops: diameter.map(|d| route(&topo, &d.by_hops)),
        diameter_delay: diameter.map(|d| route(&topo, &d.by_delay)),
        routing_table_bytes: routes.memory_bytes(),
    };
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
        return Ok(());
    }
    outln!("{}: ok", args.file.display())?;
    outln!("{}", report.summary)?;
    if let (Some(h), Some(d)) = (&report.diameter_hops, &report.diameter_delay) {
        let show = |r: &Route| {
            format!(
                "{} hops, {} ({} -> {})",
                r.hops,
                netloom_time::Duration(r.delay_ns),
                r.src,
                r.dst
            )
        };
        outln!("diameter  {} by hops; {} by delay", show(h), show(d))?;
    }
    outln!(
        "routing   {} bytes of next-hop tables",
        report.routing_table_bytes
    )?;
    Ok(())
}

/// `--capacity`: the prediction from the calibration file.
fn capacity(topo: &Topology, args: &CheckArgs) -> Result<()> {
    let path = args
        .capacity
        .calibration
        .clone()
        .unwrap_or_else(|| PathBuf::from(netloom_live::calibration::DEFAULT_PATH));
    let c = crate::calibrate::read_calibration(&path, args.capacity.force)?;
    let report = crate::calibrate::predict(topo, &args.capacity, &c, &path)
        .with_context(|| args.file.display().to_string())?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        crate::calibrate::print(&report)?;
    }
    Ok(())
}
