//! `netloom shape`'s costs without the kernel: ns per classification with 1 rule and with
//! 65,536 tenants × 16 rules (the paper's Table 2), one packet at a time and in batches, and
//! the time a parameter change takes and what reading a queued packet's header costs.
//! `cargo run --release -p netloom-bench --bin shape-classify`.

use netloom_shape::{Classifier, Direction, LinkSpec, Packet, Rule, Shaper};
use netloom_time::Instant;
use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};

/// User `u`'s rule `r`: a server on port 1000 + r for clients in 10.u/16, restricted to the
/// user's own sockets as the shaping process restricts every user's rules.
fn rule(u: u32, r: u32) -> Rule {
    let words = format!("server {}@10.{}.{}.0/24", 1000 + r, u >> 8 & 0xff, u & 0xff);
    let words: Vec<&str> = words.split_whitespace().collect();
    let (selector, _) = netloom_shape::spec::parse_selector(&words).expect("valid");
    let mut rule = Rule::from_selector(&selector, u * 16 + r, &[Direction::In]).remove(0);
    rule.uid = Some(u);
    rule
}

/// A packet of user `u`'s socket for the user's last rule (the worst case: every rule of the
/// user is tried).
fn packet(u: u32, rules: u32) -> Packet {
    Packet {
        direction: Direction::In,
        proto: 6,
        src: IpAddr::V4(Ipv4Addr::new(10, (u >> 8) as u8, u as u8, 7)),
        dst: IpAddr::V4(Ipv4Addr::new(192, 168, 0, 1)),
        sport: 40000,
        dport: (1000 + rules - 1) as u16,
        owner: Some((u, u)),
        cgroup: None,
        ecn: netloom_link::Ecn::NotEct,
    }
}

/// Packets cycled through: as many as the full table has users, so with every user each
/// packet's rules are another user's (an odd multiplier modulo 2^16 visits all of them).
const PACKETS: u32 = 65_536;

/// Packets classified together by `classify_owned_batch`: about what one wake-up of the
/// shaping process drains from the kernel's queue under load.
const BATCH: usize = 64;

/// Mean ns per classification over `n` packets of pseudo-random users among the first `users`
/// (few users: their rules stay in cache; all of them: each packet's rules come from memory),
/// one packet at a time or in batches of `BATCH`.
fn time(c: &Classifier, users: u32, rules: u32, n: u32, batched: bool) -> f64 {
    let packets: Vec<Packet> = (0..PACKETS)
        .map(|i| packet(1 + i.wrapping_mul(2_654_435_761) % users, rules))
        .collect();
    let mut links = Vec::with_capacity(BATCH);
    let start = on_cpu_ns();
    let mut found = 0u32;
    let mut done = 0;
    while done < n {
        for batch in packets.chunks(BATCH) {
            links.clear();
            if batched {
                c.classify_owned_batch(batch, &mut links);
            } else {
                links.extend(batch.iter().map(|p| c.classify_owned(p)));
            }
            found += black_box(&links)
                .iter()
                .flatten()
                .map(|link| link & 1)
                .sum::<u32>();
        }
        done += PACKETS;
    }
    let ns = (on_cpu_ns() - start) as f64 / f64::from(done);
    black_box(found);
    ns
}

/// The time this thread has run on a CPU (the first field of /proc/thread-self/schedstat), so
/// a benchmark on a machine shared with other work does not count the time it waited for one.
fn on_cpu_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat");
    let first = stat.split_whitespace().next().expect("a field");
    first.parse().expect("nanoseconds")
}

/// Mean ns to read a queued packet's header (`Packet::parse`, what the shaping process does
/// to each packet the queue gives it), over `n` parses of a TCP/IPv4 and a UDP/IPv6 header.
fn time_parse(n: u32) -> f64 {
    let mut v4 = vec![0u8; 40];
    v4[0] = 0x45;
    v4[9] = 6;
    v4[12..16].copy_from_slice(&[10, 1, 2, 7]);
    v4[16..20].copy_from_slice(&[192, 168, 0, 1]);
    v4[20..24].copy_from_slice(&[0x9c, 0x40, 0x03, 0xe8]);
    let mut v6 = vec![0u8; 48];
    v6[0] = 0x60;
    v6[6] = 17;
    v6[8] = 0xfd;
    v6[24] = 0xfd;
    v6[40..44].copy_from_slice(&[0x9c, 0x40, 0x03, 0xe8]);
    let headers = [v4, v6];
    let start = on_cpu_ns();
    let mut ports = 0u32;
    for i in 0..n {
        let header = black_box(&headers[(i & 1) as usize]);
        if let Some(p) = Packet::parse(Direction::In, header, Some((1, 1))) {
            ports += u32::from(p.dport);
        }
    }
    let ns = (on_cpu_ns() - start) as f64 / f64::from(n);
    black_box(ports);
    ns
}

fn main() {
    println!("parse a queued header: {:.2} ns\n", time_parse(50_000_000));
    let one = Classifier::new(vec![(1, vec![rule(1, 0)])]);
    let full = Classifier::new(
        (1..=65_536u32)
            .map(|u| (u, (0..16).map(|r| rule(u, r)).collect()))
            .collect(),
    );
    let n = 20_000_000;
    println!("| table | packets | one at a time (ns) | in batches of {BATCH} (ns) |");
    println!("|---|---|---|---|");
    let rows = [
        ("1 tenant × 1 rule", &one, 1, 1, "of the tenant"),
        ("65,536 tenants × 16 rules", &full, 64, 16, "of 64 tenants"),
        (
            "65,536 tenants × 16 rules",
            &full,
            65_536,
            16,
            "of every tenant",
        ),
    ];
    for (table, c, users, rules, packets) in rows {
        let single = time(c, users, rules, n, false);
        let batched = time(c, users, rules, n, true);
        println!("| {table} | {packets} | {single:.1} | {batched:.1} |");
    }
    // A change of a link's parameters: what the shaping process does on `shape set` of an
    // existing selector (no kernel rule changes).
    let mut shaper: Shaper<u32> = Shaper::new(1);
    let spec = |delay: u32| {
        let text = format!("client 443@10.0.0.0/8 IN delay={delay}ms OUT delay={delay}ms");
        let words: Vec<&str> = text.split_whitespace().collect();
        LinkSpec::parse(&words, &[]).expect("valid")
    };
    shaper.set(Instant(0), 0, spec(1), String::new());
    let changes = 100_000u32;
    let start = std::time::Instant::now();
    for i in 0..changes {
        let s = spec(1 + i % 50);
        shaper.set(Instant(u64::from(i)), 0, s, String::new());
    }
    let us = start.elapsed().as_secs_f64() * 1e6 / f64::from(changes);
    println!("\nparse + apply a parameter change: {us:.2} us");
}
