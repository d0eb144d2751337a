//! Tables printed by more than one command.

use netloom_engine::report::PipeReport;

/// The pipes, busiest first (by utilization, then drops); `top` of them, or all with 0.
pub fn print_pipes(pipes: &[PipeReport], top: usize) {
    let mut pipes: Vec<_> = pipes.iter().collect();
    pipes.sort_by(|a, b| {
        b.utilization
            .total_cmp(&a.utilization)
            .then(b.drops.cmp(&a.drops))
    });
    let shown = if top == 0 {
        pipes.len()
    } else {
        top.min(pipes.len())
    };
    println!(
        "{:<24} {:>8} {:>12} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8}   ({} of {} pipes, busiest first)",
        "pipe",
        "util %",
        "packets out",
        "drops",
        "queue",
        "red",
        "loss",
        "down",
        "tx fail",
        shown,
        pipes.len()
    );
    for p in &pipes[..shown] {
        println!(
            "{:<24} {:>8.2} {:>12} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8}",
            format!("{}->{}", p.from, p.to),
            p.utilization * 100.0,
            p.packets_out,
            p.drops,
            p.drops_by_cause.queue,
            p.drops_by_cause.red,
            p.drops_by_cause.loss,
            p.drops_by_cause.link_down,
            p.drops_by_cause.tx_fail
        );
    }
}
