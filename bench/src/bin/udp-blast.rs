//! A UDP sender faster than iperf3 on one vCPU, and its counting receiver, for the maximum-rate
//! search of bench/live/maxrate.sh: `udp-blast send ADDR:PORT PPS SECONDS SIZE` sends SIZE-byte
//! datagrams at PPS for SECONDS, evenly (every 50 us it sends what is due), and prints
//! `{"sent": N, "seconds": S}`; `udp-blast recv PORT SECONDS` counts datagrams until SECONDS
//! after the first (or 1 s without any) and prints `{"received": N}`.

use anyhow::{bail, Context, Result};
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

/// How often the sender catches up with its schedule: fine enough that the datagrams of one
/// catch-up (5 at 100 kpps) look evenly spaced to a driver that wakes in tens of microseconds.
const TICK: Duration = Duration::from_micros(50);

fn send(to: SocketAddr, pps: f64, seconds: f64, size: usize) -> Result<()> {
    let socket = UdpSocket::bind("0.0.0.0:0").context("bind")?;
    socket
        .connect(to)
        .with_context(|| format!("connect {to}"))?;
    let payload = vec![0u8; size];
    let start = Instant::now();
    let mut sent: u64 = 0;
    loop {
        let elapsed = start.elapsed().as_secs_f64();
        if elapsed >= seconds {
            break;
        }
        let due = (elapsed * pps) as u64;
        while sent < due {
            // A full socket buffer (ENOBUFS) drops the datagram here, as a NIC would: the count
            // is of datagrams handed to the kernel.
            if socket.send(&payload).is_ok() {
                sent += 1;
            } else {
                break;
            }
        }
        std::thread::sleep(TICK);
    }
    println!(
        "{{\"sent\": {sent}, \"seconds\": {:.3}}}",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn recv(port: u16, seconds: f64) -> Result<()> {
    let socket = UdpSocket::bind(("0.0.0.0", port)).with_context(|| format!("bind {port}"))?;
    socket.set_read_timeout(Some(Duration::from_secs(1)))?;
    let mut buf = vec![0u8; 65_536];
    let mut received: u64 = 0;
    let mut first = None;
    // Waits up to a minute for the first datagram, then counts until the window ends or the
    // sender has been silent for a second.
    let give_up = Instant::now() + Duration::from_secs(60);
    loop {
        match socket.recv(&mut buf) {
            Ok(_) => {
                received += 1;
                let start = *first.get_or_insert_with(Instant::now);
                if start.elapsed().as_secs_f64() >= seconds {
                    break;
                }
            }
            Err(_) if first.is_some() || Instant::now() > give_up => break,
            Err(_) => {}
        }
    }
    println!("{{\"received\": {received}}}");
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, what: &str| -> Result<f64> {
        args.get(i)
            .with_context(|| format!("missing {what}"))?
            .parse()
            .with_context(|| format!("{what}: not a number"))
    };
    match args.first().map(String::as_str) {
        Some("send") => {
            let to: SocketAddr = args
                .get(1)
                .context("missing ADDR:PORT")?
                .parse()
                .context("ADDR:PORT")?;
            send(
                to,
                number(2, "PPS")?,
                number(3, "SECONDS")?,
                number(4, "SIZE")? as usize,
            )
        }
        Some("recv") => recv(number(1, "PORT")? as u16, number(2, "SECONDS")?),
        _ => {
            bail!("usage: udp-blast send ADDR:PORT PPS SECONDS SIZE | udp-blast recv PORT SECONDS")
        }
    }
}
