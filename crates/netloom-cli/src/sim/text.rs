//! `netloom sim`'s report as text: the flows and the busiest pipes, then what a split run adds
//! (the partition measured, the workers, the epochs).

use netloom_engine::Report;
use netloom_sim::SimReport;
use netloom_time::Duration;

/// The report as tables: flows and pipes, then the partition, workers and epochs if any.
pub fn print(report: &SimReport, top: usize) -> anyhow::Result<()> {
    print_tables(&report.report, top)?;
    if let Some(m) = &report.partition {
        outln!()?;
        crate::partition::print_measurement(m)?;
    }
    if let Some(w) = &report.workers {
        print_workers(w)?;
    }
    if let Some(r) = &report.repartition {
        print_repartition(r)?;
    }
    Ok(())
}

fn print_repartition(r: &netloom_sim::RepartitionReport) -> anyhow::Result<()> {
    outln!()?;
    outln!(
        "repartitioned every {} by {} (imbalance {}) on the last epoch's traffic:",
        Duration(r.epoch_ns),
        r.method,
        r.imbalance
    )?;
    outln!(
        "{:>10} {:>10} {:>10} {:>10} {:>12} {:>12} {:>12}",
        "from s",
        "to s",
        "static",
        "dynamic",
        "static imb.",
        "dynamic imb.",
        "moved pipes"
    )?;
    let e = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.4}"));
    for row in &r.epochs {
        outln!(
            "{:>10.1} {:>10.1} {:>10} {:>10} {:>12.3} {:>12.3} {:>12}",
            row.start_ns as f64 / 1e9,
            row.end_ns as f64 / 1e9,
            e(row.epoch.static_efficiency),
            e(row.epoch.dynamic_efficiency),
            row.epoch.static_imbalance,
            row.epoch.dynamic_imbalance,
            row.epoch.moved_pipes
        )?;
    }
    Ok(())
}

fn print_workers(w: &netloom_sim::WorkersReport) -> anyhow::Result<()> {
    let p = &w.parallel;
    outln!(
        "{} workers, lookahead {}, {} windows; payload {}: {} cross-core hops, {} bytes",
        p.workers,
        p.lookahead_ns
            .map_or("none (nothing crosses)".to_string(), |ns| Duration(ns)
                .to_string()),
        p.windows,
        w.payload,
        w.cross_core_hops,
        w.cross_core_bytes
    )?;
    for (k, worker) in p.per_worker.iter().enumerate() {
        out!("  worker {k}: {} packet-hops", worker.packet_hops)?;
        if let Some(s) = worker.wait_seconds {
            out!(", {s:.3} s waiting for the others")?;
        }
        if let Some(cpus) = &w.cpus {
            out!(", CPU {}", cpus[k])?;
        }
        outln!()?;
    }
    if w.moved_pipes > 0 {
        outln!(
            "  {} pipes moved to the worker of the host that sends into them",
            w.moved_pipes
        )?;
    }
    Ok(())
}

fn mbit(bps: u64) -> String {
    format!("{:.3}", bps as f64 / 1e6)
}

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

fn print_tables(r: &Report, top: usize) -> anyhow::Result<()> {
    outln!(
        "{}: {} of virtual time, seed {}",
        r.topology,
        Duration(r.duration_ns),
        r.seed
    )?;
    outln!()?;
    outln!(
        "{:<10} {:<10} {:<7} {:>12} {:>10} {:>10} {:>10} {:>10} {:>8}",
        "flow src",
        "dst",
        "kind",
        "Mbit/s",
        "p50 ms",
        "p99 ms",
        "sent",
        "lost",
        "loss %"
    )?;
    for f in &r.flows {
        let loss = if f.sent > 0 {
            f.lost as f64 * 100.0 / f.sent as f64
        } else {
            0.0
        };
        outln!(
            "{:<10} {:<10} {:<7} {:>12} {:>10} {:>10} {:>10} {:>10} {:>8.3}",
            f.src,
            f.dst,
            f.kind,
            mbit(f.throughput_bps),
            ms(f.latency_ns.p50),
            ms(f.latency_ns.p99),
            f.sent,
            f.lost,
            loss
        )?;
    }
    outln!()?;
    out!("{}", crate::table::format_pipes(&r.pipes, None, top))?;
    outln!()?;
    let t = &r.totals;
    out!("{} packet-hops, {} events", t.packet_hops, t.events)?;
    if let (Some(w), Some(rate)) = (t.wall_seconds, t.packet_hops_per_second) {
        out!(", {w:.3} s wall, {:.2} M packet-hops/s", rate / 1e6)?;
    }
    outln!()?;
    if t.unroutable > 0 {
        outln!("{} packets had no route", t.unroutable)?;
    }
    Ok(())
}
