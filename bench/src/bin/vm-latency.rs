//! What this machine costs a live emulator before netloom does anything: how late a timed
//! wake-up ends, how long a thread blocked in epoll takes to run once another thread wakes it,
//! how often the host takes a spinning vCPU away, and what one TUN write costs once the path has
//! been idle. docs/performance.md ("Zero-delay round trip: where the time goes") quotes it.
//!
//! `vm-latency [--cpu N] [--seconds S]` (root: the last part brings up a one-host testbed);
//! prints a Markdown report. Each figure is measured on CPU `N` (default: the last), as the
//! benchmarks pin the emulator there, at real-time priority for the waits (as hybrid precision
//! runs) and normal priority for the spin (as busy precision runs).

use netloom_os::{
    pin_current_thread, set_normal_priority, set_realtime_priority, set_timer_slack_ns, Poller,
    Testbed, TestbedSpec, VNET_HDR_LEN,
};
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// Percentiles of a sample, µs: "p50 / p99 / max".
fn summary(mut v: Vec<Duration>) -> String {
    v.sort_unstable();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    format!(
        "{:.1} / {:.1} / {:.1}",
        us(at(0.5)),
        us(at(0.99)),
        us(v[v.len() - 1])
    )
}

/// Gaps between the passes of a sleep or a spin.
fn pass(gap: Duration, spin: bool) {
    if spin {
        let until = Instant::now() + gap;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    } else {
        std::thread::sleep(gap);
    }
}

/// How late `sleep(d)` returns, `n` times.
fn timer_lateness(d: Duration, n: usize) -> String {
    let late = (0..n)
        .map(|_| {
            let t = Instant::now();
            std::thread::sleep(d);
            t.elapsed().saturating_sub(d)
        })
        .collect();
    summary(late)
}

/// From a byte written by another thread to this one running after epoll_wait, `n` times,
/// `gap` apart (this thread blocks in between, as a sleeping driver does).
fn wake_up(cpu: usize, gap: Duration, n: usize) -> String {
    let (theirs, mine) = UnixStream::pair().expect("a socket pair");
    mine.set_nonblocking(true).expect("non-blocking");
    let mut poller = Poller::new().expect("epoll");
    poller.add(mine.as_fd(), 0).expect("watch the socket");
    let waker = std::thread::spawn(move || {
        // On another CPU than the waiting thread, as a host's program is.
        let _ = pin_current_thread(if cpu == 0 { 1 } else { 0 });
        let mut sent = Vec::with_capacity(n);
        for _ in 0..n {
            std::thread::sleep(gap);
            sent.push(Instant::now());
            (&theirs).write_all(&[1]).expect("wake");
        }
        sent
    });
    let mut woke = Vec::with_capacity(n);
    let mut ready = Vec::new();
    let mut drain = [0u8; 16];
    while woke.len() < n {
        poller.wait(None, &mut ready).expect("epoll_wait");
        if !ready.is_empty() {
            woke.push(Instant::now());
            let _ = std::io::Read::read(&mut &mine, &mut drain);
        }
    }
    let sent = waker.join().expect("the waker");
    summary(
        woke.iter()
            .zip(&sent)
            .map(|(w, s)| w.saturating_duration_since(*s))
            .collect(),
    )
}

/// Spins for `seconds` and reports the gaps in its own loop: time the vCPU was taken away.
fn spin_gaps(seconds: u64) -> String {
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut last = Instant::now();
    let (mut over50, mut over500, mut lost, mut max) = (0, 0, Duration::ZERO, Duration::ZERO);
    while last < end {
        let now = Instant::now();
        let gap = now - last;
        if gap > Duration::from_micros(50) {
            over50 += 1;
            lost += gap;
        }
        if gap > Duration::from_micros(500) {
            over500 += 1;
        }
        max = max.max(gap);
        last = now;
    }
    format!(
        "{over50} gaps over 50 µs in {seconds} s ({:.2} % of the time), {over500} over 0.5 ms, the longest {:.2} ms",
        lost.as_secs_f64() / seconds as f64 * 100.0,
        max.as_secs_f64() * 1e3
    )
}

/// The one's-complement checksum of `bytes`.
fn checksum(bytes: &[u8]) -> [u8; 2] {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    (!(sum as u16)).to_be_bytes()
}

/// An ICMP echo request from 198.18.0.2 to `to`, 84 bytes, behind a zeroed virtio_net_hdr.
fn echo_request(to: [u8; 4], seq: u16) -> Vec<u8> {
    let mut p = vec![0u8; 84];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&84u16.to_be_bytes());
    p[8] = 64;
    p[9] = 1;
    p[12..16].copy_from_slice(&[198, 18, 0, 2]);
    p[16..20].copy_from_slice(&to);
    let ip = checksum(&p[..20]);
    p[10..12].copy_from_slice(&ip);
    p[20] = 8;
    p[26..28].copy_from_slice(&seq.to_be_bytes());
    let icmp = checksum(&p[20..]);
    p[22..24].copy_from_slice(&icmp);
    [vec![0u8; VNET_HDR_LEN], p].concat()
}

/// The cost of one write of an echo request into a host's TUN device (the host's stack takes it
/// in and answers within the write), `n` times, `gap` apart, the gap slept or spun.
fn tun_writes(testbed: &Testbed, gap: Duration, spin: bool, n: usize) -> String {
    let tun = &testbed.tuns()[0];
    let to = testbed.spec().hosts[0].ipv4.octets();
    let mut buf = vec![0u8; 65_536];
    let costs = (0..n)
        .map(|k| {
            pass(gap, spin);
            let packet = echo_request(to, k as u16);
            let t = Instant::now();
            tun.write(&packet).expect("write into the TUN device");
            let cost = t.elapsed();
            while tun.read(&mut buf).is_ok() {}
            cost
        })
        .collect();
    summary(costs)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map(|v| v.parse::<u64>())
            .transpose()
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu = flag("--cpu")?.map_or(cpus - 1, |c| c as usize);
    let seconds = flag("--seconds")?.unwrap_or(5);
    pin_current_thread(cpu)?;
    set_timer_slack_ns(1);
    println!("## This machine's latencies (vm-latency, CPU {cpu})\n");
    println!("All in µs, p50 / p99 / max, unless said otherwise.\n");
    set_realtime_priority(40)?;
    println!("| measure | 100 µs apart | 2 ms apart | 20 ms apart |");
    println!("|---|---|---|---|");
    println!(
        "| a timed sleep of that long returns late by | {} | {} | {} |",
        timer_lateness(Duration::from_micros(100), 500),
        timer_lateness(Duration::from_millis(2), 300),
        timer_lateness(Duration::from_millis(20), 100)
    );
    println!(
        "| a thread blocked in epoll runs after another thread's write by | {} | {} | {} |",
        wake_up(cpu, Duration::from_micros(100), 500),
        wake_up(cpu, Duration::from_millis(2), 300),
        wake_up(cpu, Duration::from_millis(20), 100)
    );
    let name = format!("vmlat{}", std::process::id() % 100_000);
    let mut testbed = Testbed::create(&TestbedSpec::planned(&name, ["h1"]))?;
    for spin in [false, true] {
        let how = if spin { "spun" } else { "slept" };
        println!(
            "| a TUN write (the host answers an echo within it), the gap {how} | {} | {} | {} |",
            tun_writes(&testbed, Duration::from_micros(100), spin, 500),
            tun_writes(&testbed, Duration::from_millis(2), spin, 300),
            tun_writes(&testbed, Duration::from_millis(20), spin, 100)
        );
    }
    testbed.teardown()?;
    set_normal_priority()?;
    println!(
        "\nA vCPU spinning at normal priority: {}.",
        spin_gaps(seconds)
    );
    Ok(())
}
