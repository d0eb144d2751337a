//! `netloom check FILE`: load, validate and route a topology, then print its summary.

use anyhow::Result;
use clap::Args;
use netloom_route::Routes;
use netloom_topo::NodeKind;
use serde::Serialize;
use std::path::PathBuf;

#[derive(Args)]
pub struct CheckArgs {
    /// Topology file (.toml or .json).
    file: PathBuf,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Summary {
    name: String,
    hosts: usize,
    routers: usize,
    links: usize,
    pipes: usize,
    shared_links: usize,
    diameter_hops: u32,
    diameter_hops_between: [String; 2],
    diameter_delay_ns: u64,
    diameter_delay_between: [String; 2],
    min_bdp_bytes: u64,
    max_bdp_bytes: u64,
    routing_table_bytes: usize,
}

pub fn run(args: CheckArgs) -> Result<()> {
    let topo = netloom_topo::load_path(&args.file)?;
    let routes = Routes::compute(&topo);
    let diameter = routes.diameter(&topo);
    let name = |id| topo.node(id).name.clone();
    let bdps = topo.pipes.iter().map(|p| {
        p.config
            .rate
            .bytes_in(netloom_time::Duration(p.config.delay.0 * 2))
    });
    let (diameter_hops, diameter_hops_between, diameter_delay_ns, diameter_delay_between) =
        match diameter {
            Some(d) => (
                d.by_hops.hops,
                [name(d.by_hops.src), name(d.by_hops.dst)],
                d.by_delay.delay.as_nanos(),
                [name(d.by_delay.src), name(d.by_delay.dst)],
            ),
            None => (0, Default::default(), 0, Default::default()),
        };
    let s = Summary {
        name: topo.name.clone(),
        hosts: topo.hosts.len(),
        routers: topo
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Router)
            .count(),
        links: topo.links.len(),
        pipes: topo.pipes.len(),
        shared_links: (0..topo.links.len() as u32)
            .filter(|&l| topo.is_shared(l))
            .count(),
        diameter_hops,
        diameter_hops_between,
        diameter_delay_ns,
        diameter_delay_between,
        min_bdp_bytes: bdps.clone().min().unwrap_or(0),
        max_bdp_bytes: bdps.max().unwrap_or(0),
        routing_table_bytes: routes.memory_bytes(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(());
    }
    let d = netloom_time::Duration;
    println!("{}: ok", args.file.display());
    println!("  name            {}", s.name);
    println!("  hosts           {}", s.hosts);
    println!("  routers         {}", s.routers);
    println!(
        "  links           {} ({} pipes, {} shared)",
        s.links, s.pipes, s.shared_links
    );
    println!(
        "  diameter        {} hops ({} -> {}), {} one-way delay ({} -> {})",
        s.diameter_hops,
        s.diameter_hops_between[0],
        s.diameter_hops_between[1],
        d(s.diameter_delay_ns),
        s.diameter_delay_between[0],
        s.diameter_delay_between[1]
    );
    println!(
        "  link BDP        {} .. {} bytes (rate x 2 x delay)",
        s.min_bdp_bytes, s.max_bdp_bytes
    );
    println!("  routing tables  {} bytes", s.routing_table_bytes);
    Ok(())
}
