//! A topology at a glance for `netloom check`: counts, rates and bandwidth-delay products.
//! Needs no routing; the diameter comes from the routing crate and the CLI prints both.

use crate::model::{NodeKind, Topology};
use crate::units::{format_rate, Bytes};
use netloom_time::{Duration, Rate};
use serde::Serialize;
use std::fmt;

/// Counts and extremes of one topology. Rates are per pipe (one direction of a link, or a
/// shared medium); the BDP of a pipe is its rate × twice its delay (the link's round trip), the
/// same product the default queue is sized from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// The topology's name: `[topology] name`, or the file name without its extension.
    pub name: String,
    /// Count of hosts, the nodes traffic starts and ends at.
    pub hosts: usize,
    /// Count of routers, the nodes that only forward.
    pub routers: usize,
    /// The kernel routers' names (a namespace each in a live run), in node order.
    pub kernel_routers: Vec<String>,
    /// Count of links, one per `[[link]]` entry, shared or not.
    pub links: usize,
    /// Number of pipes: two per duplex link, one per shared link.
    pub pipes: usize,
    /// Links that are one pipe for both directions (`shared = true`).
    pub shared_links: usize,
    /// Links with at least one direction down at start.
    pub links_down: usize,
    /// Sum of all pipe rates.
    pub total_rate_bps: u64,
    /// Rate of the slowest pipe, in bit/s (for a trace link without `bw`, the trace's mean rate).
    pub min_rate_bps: u64,
    /// Rate of the fastest pipe, in bit/s.
    pub max_rate_bps: u64,
    /// Smallest bandwidth-delay product of a pipe, in bytes: the queue that pipe gets by default,
    /// before the 15 000-byte floor.
    pub min_bdp_bytes: u64,
    /// Largest bandwidth-delay product of a pipe, in bytes.
    pub max_bdp_bytes: u64,
    /// Smallest MTU of a pipe, in bytes: the largest packet that crosses every link.
    pub min_mtu: u32,
    /// Largest MTU of a pipe, in bytes.
    pub max_mtu: u32,
}

/// Counts a topology; rates, BDPs and MTUs are 0 when it has no links.
pub fn summarize(topo: &Topology) -> Summary {
    let rates = || topo.pipes.iter().map(|p| p.config.rate.as_bps());
    let bdps = || {
        topo.pipes.iter().map(|p| {
            let rtt = Duration(p.config.delay.as_nanos().saturating_mul(2));
            p.config.rate.bytes_in(rtt)
        })
    };
    let mtus = || topo.pipes.iter().map(|p| p.config.mtu);
    let link_ids = 0..topo.links.len() as u32;
    Summary {
        name: topo.name.clone(),
        hosts: topo.hosts.len(),
        routers: topo
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Router)
            .count(),
        kernel_routers: topo
            .nodes
            .iter()
            .filter(|n| n.kernel)
            .map(|n| n.name.clone())
            .collect(),
        links: topo.links.len(),
        pipes: topo.pipes.len(),
        shared_links: link_ids.clone().filter(|&l| topo.is_shared(l)).count(),
        links_down: topo
            .links
            .iter()
            .filter(|l| {
                !(topo.pipes[l.ab as usize].config.up && topo.pipes[l.ba as usize].config.up)
            })
            .count(),
        total_rate_bps: rates().fold(0u64, u64::saturating_add),
        min_rate_bps: rates().min().unwrap_or(0),
        max_rate_bps: rates().max().unwrap_or(0),
        min_bdp_bytes: bdps().min().unwrap_or(0),
        max_bdp_bytes: bdps().max().unwrap_or(0),
        min_mtu: mtus().min().unwrap_or(0),
        max_mtu: mtus().max().unwrap_or(0),
    }
}

impl fmt::Display for Summary {
    /// Aligned `key value` lines, as `netloom check` prints them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rate = |bps| format_rate(Rate::bps(bps));
        writeln!(f, "name      {}", self.name)?;
        writeln!(f, "hosts     {}", self.hosts)?;
        write!(f, "routers   {}", self.routers)?;
        if !self.kernel_routers.is_empty() {
            write!(
                f,
                " ({} kernel: {})",
                self.kernel_routers.len(),
                self.kernel_routers.join(", ")
            )?;
        }
        writeln!(f)?;
        write!(
            f,
            "links     {} ({} pipes, {} shared",
            self.links, self.pipes, self.shared_links
        )?;
        if self.links_down > 0 {
            write!(f, ", {} down at start", self.links_down)?;
        }
        writeln!(f, ")")?;
        writeln!(
            f,
            "rate      {} to {} per pipe, {} in total",
            rate(self.min_rate_bps),
            rate(self.max_rate_bps),
            rate(self.total_rate_bps)
        )?;
        writeln!(
            f,
            "BDP       {} to {} per pipe (rate x 2 x delay)",
            Bytes(self.min_bdp_bytes),
            Bytes(self.max_bdp_bytes)
        )?;
        write!(
            f,
            "MTU       {} to {} bytes per pipe",
            self.min_mtu, self.max_mtu
        )
    }
}
