//! `load`: time to generate, write, load (parse + validate) and route a ~100,000-link inet.

use crate::report::{table, Spread};
use anyhow::{Context, Result};
use clap::Args;
use netloom_route::Routes;
use netloom_topo::gen::{self, GenKind, InetParams};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;

/// The goal for load + route of a 100,000-link topology, in seconds.
const GOAL_SECONDS: f64 = 5.0;

#[derive(Args, Clone, Copy, Debug)]
pub struct LoadArgs {
    /// Routers of the inet, transit and stub (about 2 links each).
    #[arg(long, default_value_t = 51_000)]
    pub routers: usize,
    /// Stub routers.
    #[arg(long, default_value_t = 2_000)]
    pub stubs: usize,
    /// Hosts (routing tables have one column per host).
    #[arg(long, default_value_t = 400)]
    pub hosts: usize,
}

#[derive(Debug, Serialize)]
pub struct LoadReport {
    pub routers: usize,
    pub stubs: usize,
    pub hosts: usize,
    pub nodes: usize,
    pub links: usize,
    pub file_bytes: usize,
    pub generate_seconds: f64,
    pub write_seconds: f64,
    pub load_seconds: Spread,
    pub route_seconds: Spread,
    pub load_and_route_seconds: Spread,
    /// Threads `Routes::compute` may use (it splits destinations over the available cores).
    pub route_threads: usize,
}

/// Deletes the file when dropped, whatever happened in between.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub fn run(args: LoadArgs, repeat: usize) -> Result<LoadReport> {
    let started = Instant::now();
    let file = gen::generate(&GenKind::Inet(InetParams {
        routers: args.routers,
        stubs: args.stubs,
        hosts: args.hosts,
        ..InetParams::default()
    }))?;
    let generate_seconds = started.elapsed().as_secs_f64();

    let path = TempFile(
        std::env::temp_dir().join(format!("netloom-bench-load-{}.toml", std::process::id())),
    );
    let started = Instant::now();
    let text = netloom_topo::write::to_toml(&file);
    std::fs::write(&path.0, &text).with_context(|| format!("writing {}", path.0.display()))?;
    let write_seconds = started.elapsed().as_secs_f64();
    drop(file);

    let (mut loads, mut routes, mut totals) = (Vec::new(), Vec::new(), Vec::new());
    let mut shape = (0, 0);
    for i in 0..repeat {
        let started = Instant::now();
        let topo = netloom_topo::load_path(&path.0)?;
        let load = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let table = Routes::compute(&topo);
        let route = started.elapsed().as_secs_f64();
        eprintln!(
            "load run {}/{}: load {load:.2} s, route {route:.2} s",
            i + 1,
            repeat
        );
        drop(table);
        shape = (topo.nodes.len(), topo.links.len());
        loads.push(load);
        routes.push(route);
        totals.push(load + route);
    }
    Ok(LoadReport {
        routers: args.routers,
        stubs: args.stubs,
        hosts: args.hosts,
        nodes: shape.0,
        links: shape.1,
        file_bytes: text.len(),
        generate_seconds,
        write_seconds,
        load_seconds: Spread::of(&loads),
        route_seconds: Spread::of(&routes),
        load_and_route_seconds: Spread::of(&totals),
        route_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
    })
}

pub fn markdown(r: &LoadReport, repeat: usize) -> String {
    let verdict = if r.load_and_route_seconds.median < GOAL_SECONDS {
        "meets"
    } else {
        "misses"
    };
    format!(
        "## load: a {}-link topology from file to routing tables\n\n\
         inet with {} routers ({} stubs) and {} hosts, generated and written to TOML once, then \
         loaded with `netloom_topo::load_path` (parse + validate) and routed with \
         `Routes::compute` ({} threads) {} times; median (min–max). Goal: load + route under {} s \
         ({verdict} it).\n\n{}",
        r.links,
        r.routers,
        r.stubs,
        r.hosts,
        r.route_threads,
        repeat,
        GOAL_SECONDS,
        table(
            &[
                "nodes / links",
                "TOML MiB",
                "generate s",
                "write s",
                "load s",
                "route s",
                "load + route s",
            ],
            &[vec![
                format!("{} / {}", r.nodes, r.links),
                format!("{:.1}", r.file_bytes as f64 / (1024.0 * 1024.0)),
                format!("{:.2}", r.generate_seconds),
                format!("{:.2}", r.write_seconds),
                r.load_seconds.show(1.0, 2),
                r.route_seconds.show(1.0, 2),
                r.load_and_route_seconds.show(1.0, 2),
            ]],
        )
    )
}
