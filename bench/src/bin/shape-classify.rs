//! `netloom shape`'s costs without the kernel: ns per classification with 1 rule and with
//! 65,536 tenants × 16 rules (the paper's Table 2), and the time a parameter change takes.
//! `cargo run --release -p netloom-bench --bin shape-classify`.

use netloom_shape::{Classifier, Direction, LinkSpec, Packet, Rule, Shaper};
use netloom_time::Instant;
use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};

/// Tenant `t`'s rule `r`: a server on port 1000 + r for clients in 10.t/16.
fn rule(t: u32, r: u32) -> Rule {
    let words = format!("server {}@10.{}.{}.0/24", 1000 + r, t >> 8, t & 0xff);
    let words: Vec<&str> = words.split_whitespace().collect();
    let (selector, _) = netloom_shape::spec::parse_selector(&words).expect("valid");
    Rule::from_selector(&selector, t * 16 + r, &[Direction::In]).remove(0)
}

/// A packet for tenant `t`'s last rule (the worst case: every rule of the tenant is tried).
fn packet(t: u32, rules: u32) -> Packet {
    Packet {
        direction: Direction::In,
        proto: 6,
        src: IpAddr::V4(Ipv4Addr::new(10, (t >> 8) as u8, (t & 0xff) as u8, 7)),
        dst: IpAddr::V4(Ipv4Addr::new(192, 168, 0, 1)),
        sport: 40000,
        dport: (1000 + rules - 1) as u16,
        owner: None,
        cgroup: None,
    }
}

/// Mean ns per classification over `n` packets of pseudo-random tenants below `tenants` (few
/// tenants: the rules stay in cache; all of them: each packet's rules come from memory).
fn time(c: &Classifier, tenants: u32, rules: u32, n: u32) -> f64 {
    let packets: Vec<(u32, Packet)> = (0..4096u32)
        .map(|i| {
            let t = i.wrapping_mul(2_654_435_761) % tenants;
            (t, packet(t, rules))
        })
        .collect();
    let start = std::time::Instant::now();
    let mut found = 0u32;
    for i in 0..n {
        let (t, p) = &packets[(i % 4096) as usize];
        found += black_box(c.classify(*t, p)).map_or(0, |link| link & 1);
    }
    let ns = start.elapsed().as_nanos() as f64 / f64::from(n);
    black_box(found);
    ns
}

fn main() {
    let one = Classifier::new(vec![(0, vec![rule(0, 0)])]);
    let full = Classifier::new(
        (0..65_536u32)
            .map(|t| (t, (0..16).map(|r| rule(t, r)).collect()))
            .collect(),
    );
    let n = 20_000_000;
    println!("| table | ns per classification |");
    println!("|---|---|");
    println!("| 1 tenant × 1 rule | {:.1} |", time(&one, 1, 1, n));
    println!(
        "| 65,536 tenants × 16 rules, packets of 64 tenants (last rule matches) | {:.1} |",
        time(&full, 64, 16, n)
    );
    println!(
        "| 65,536 tenants × 16 rules, packets of every tenant (last rule matches) | {:.1} |",
        time(&full, 65_536, 16, n)
    );
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
