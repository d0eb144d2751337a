//! Times bringing up and tearing down an experiment of N hosts (root): `cargo run --release -p
//! netloom-os --example setup -- 2 50 400`. The figures in docs/live.md come from it.

use netloom_os::{Testbed, TestbedSpec};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    for n in if sizes.is_empty() {
        vec![2, 50, 400]
    } else {
        sizes
    } {
        let name = format!("setup{n}-{}", std::process::id());
        let spec = TestbedSpec::planned(&name, (0..n).map(|i| format!("h{}", i + 1)));
        let start = Instant::now();
        let mut testbed = Testbed::create(&spec)?;
        let up = start.elapsed();
        let start = Instant::now();
        testbed.teardown()?;
        let down = start.elapsed();
        println!(
            "{n:>4} hosts: create {:>8.1} ms ({:.2} ms/host), teardown {:>8.1} ms",
            up.as_secs_f64() * 1e3,
            up.as_secs_f64() * 1e3 / n as f64,
            down.as_secs_f64() * 1e3
        );
    }
    Ok(())
}
