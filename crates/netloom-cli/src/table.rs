//! Tables printed by more than one command.

use netloom_engine::report::PipeReport;
use std::fmt::Write;

/// The table of the pipes, busiest first (by utilization, then drops); `top` of them, or all
/// with 0. With `queued` (packets queued now, per pipe, in the same order), a column shows it.
pub fn format_pipes(pipes: &[PipeReport], queued: Option<&[u64]>, top: usize) -> String {
    let mut out = String::new();
    let mut order: Vec<usize> = (0..pipes.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&pipes[a], &pipes[b]);
        b.utilization
            .total_cmp(&a.utilization)
            .then(b.drops.cmp(&a.drops))
    });
    let shown = if top == 0 {
        pipes.len()
    } else {
        top.min(pipes.len())
    };
    let queue_head = if queued.is_some() { "queued" } else { "" };
    let _ = writeln!(
        out,
        "{:<24} {:>8} {:>12} {:>7} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}   ({} of {} pipes, busiest first)",
        "pipe",
        "util %",
        "packets out",
        queue_head,
        "drops",
        "queue",
        "red",
        "codel",
        "loss",
        "down",
        "tx fail",
        "marks",
        shown,
        pipes.len()
    );
    for &i in &order[..shown] {
        let p = &pipes[i];
        let queue = queued.map_or(String::new(), |q| q[i].to_string());
        let _ = writeln!(
            out,
            "{:<24} {:>8.2} {:>12} {:>7} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            format!("{}->{}", p.from, p.to),
            p.utilization * 100.0,
            p.packets_out,
            queue,
            p.drops,
            p.drops_by_cause.queue,
            p.drops_by_cause.red,
            p.drops_by_cause.codel,
            p.drops_by_cause.loss,
            p.drops_by_cause.link_down,
            p.drops_by_cause.tx_fail,
            p.marks
        );
    }
    out
}
