//! The floor of this machine for live emulation: a plain TUN-to-TUN forwarder with no emulation.
//! It brings up the same two-host experiment `netloom run` would (`netloom_os::Testbed`, so
//! `netloom exec --name NAME h1 -- ...` works against it), then busy-polls both TUN devices and
//! writes every packet read from one host into the other at once: no engine, no descriptors,
//! no timing (the loop is `netloom calibrate`'s, `netloom_live::calibration::forward`, which
//! times its calls: two clock reads per packet). `bench/live/run.sh` measures it side by side with `netloom run`, so the difference
//! is netloom's own cost.
//!
//! `tun-forward NAME [--cpu N] [--staged] [--gso]`; runs until SIGINT or SIGTERM, then tears down
//! and prints the frames forwarded each way.
//!
//! `--staged` copies the shape of netloom's loop without its engine: each turn reads up to a batch
//! from every host first, then writes all of them, instead of writing each packet as soon as it
//! is read. Comparing the two separates the cost of that turn structure from the engine's.
//!
//! `--gso` turns on the devices' offloads as `netloom run` does, so TCP crosses as super-packets
//! of up to 64 KB, each forwarded whole with its virtio_net_hdr: the floor with GSO.

use netloom_live::calibration::{forward, BATCH, FRAME};
use netloom_os::{install_stop_handler, pin_current_thread, Testbed, TestbedSpec};
use std::io::ErrorKind;
use std::sync::atomic::Ordering;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        return Err("usage: tun-forward NAME [--cpu N] [--staged] [--gso]".into());
    };
    let (mut cpu, mut staged, mut gso) = (None, false, false);
    let mut rest = args[1..].iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--cpu" => {
                cpu = Some(
                    rest.next()
                        .ok_or("--cpu needs a number")?
                        .parse::<usize>()?,
                )
            }
            "--staged" => staged = true,
            "--gso" => gso = true,
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    let stop = install_stop_handler()?;
    let spec = TestbedSpec::planned(name, ["h1", "h2"]);
    let mut testbed = Testbed::create(&spec)?;
    if let Some(cpu) = cpu {
        pin_current_thread(cpu)?;
    }
    for tun in testbed.tuns().iter() {
        tun.set_offload(gso)?;
    }
    eprintln!("tun-forward: experiment {name} is up (h1, h2); busy-polling");
    let mut forwarded = [0u64; 2];
    let mut failed = [0u64; 2];
    // --staged: per direction, the packets read this turn (buffers reused across turns).
    let mut stage: [Vec<Vec<u8>>; 2] =
        [vec![vec![0u8; FRAME]; BATCH], vec![vec![0u8; FRAME]; BATCH]];
    let mut staged_len = [[0usize; BATCH]; 2];
    {
        let tuns = testbed.tuns();
        while staged && !stop.load(Ordering::Relaxed) {
            let mut count = [0usize; 2];
            for from in 0..2 {
                while count[from] < BATCH {
                    match tuns[from].read(&mut stage[from][count[from]]) {
                        Ok(n) => {
                            staged_len[from][count[from]] = n;
                            count[from] += 1;
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == ErrorKind::Interrupted => break,
                        Err(e) => return Err(e.into()),
                    }
                }
            }
            for from in 0..2 {
                for i in 0..count[from] {
                    match tuns[1 - from].write(&stage[from][i][..staged_len[from][i]]) {
                        Ok(_) => forwarded[from] += 1,
                        Err(_) => failed[from] += 1,
                    }
                }
            }
        }
        if !staged {
            // netloom calibrate's forwarder, which also times its calls (unused here).
            let f = forward(tuns, gso, &mut || !stop.load(Ordering::Relaxed))?;
            forwarded = f.packets;
            failed = f.failed;
        }
    }
    testbed.teardown()?;
    println!(
        "{{\"forwarded_h1_to_h2\": {}, \"forwarded_h2_to_h1\": {}, \"write_failures\": {}}}",
        forwarded[0],
        forwarded[1],
        failed[0] + failed[1]
    );
    Ok(())
}
