//! What authenticating a run's datagrams costs (docs/cluster.md, "Who can take part"): the time
//! to seal and open one datagram of 100 B (a descriptor batch's smallest), 1,500 B (a shipped
//! packet) and 64 KB (a shipped super-packet), and over this machine's loopback, hand-off
//! datagrams of 1,500 B per second from one thread to another and the round trip of one, each
//! without and with the tag. `cargo run --release -p netloom-bench --bin seal`.

use netloom_wire::Key;
use std::hint::black_box;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

/// Datagrams each throughput run sends.
const DATAGRAMS: usize = 200_000;
/// Round trips each latency run takes.
const TRIPS: usize = 20_000;

fn main() {
    let key = Key::random();
    println!("| datagram | seal + open, ns | GB/s |");
    println!("|---|---|---|");
    for size in [100usize, 1_500, 65_000] {
        let d = vec![0x5au8; size];
        let rounds = (200_000_000 / size.max(1)).clamp(1_000, 2_000_000);
        let started = Instant::now();
        for _ in 0..rounds {
            let mut s = d.clone();
            key.seal(&mut s);
            black_box(key.open(black_box(&s)).expect("sealed here"));
        }
        let ns = started.elapsed().as_nanos() as f64 / rounds as f64;
        println!("| {size} B | {ns:.0} | {:.2} |", size as f64 / ns);
    }
    println!();
    println!("| over loopback, 1,500 B | without tag | with tag |");
    println!("|---|---|---|");
    let rate = |sealed| throughput(&key, sealed);
    let (plain, tagged) = (rate(false), rate(true));
    println!(
        "| datagrams/s received | {:.0} k | {:.0} k |",
        plain / 1e3,
        tagged / 1e3
    );
    let trip = |sealed| round_trip(&key, sealed);
    let (plain, tagged) = (trip(false), trip(true));
    println!(
        "| round trip, median | {:.1} us | {:.1} us |",
        plain.as_nanos() as f64 / 1e3,
        tagged.as_nanos() as f64 / 1e3
    );
}

/// Two sockets on the loopback, the receiver's with a large buffer.
fn pair() -> (UdpSocket, UdpSocket) {
    let a = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
    let b = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
    a.connect(b.local_addr().unwrap()).unwrap();
    b.connect(a.local_addr().unwrap()).unwrap();
    b.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let _ = netloom_os::set_receive_buffer(&b, 16 << 20);
    (a, b)
}

/// Datagrams per second that one thread sends (sealing each if `sealed`) and another receives
/// (opening each), as a machine's hand-offs cross.
fn throughput(key: &Key, sealed: bool) -> f64 {
    let (a, b) = pair();
    let key = *key;
    let receiver = std::thread::spawn(move || {
        let mut buf = vec![0u8; 2048];
        let (mut got, mut last) = (0usize, Instant::now());
        let started = Instant::now();
        while let Ok(n) = b.recv(&mut buf) {
            if !sealed || key.open(&buf[..n]).is_ok() {
                got += 1;
                last = Instant::now();
            }
        }
        got as f64 / (last - started).as_secs_f64()
    });
    let payload = vec![0x45u8; 1_500];
    for _ in 0..DATAGRAMS {
        let mut d = payload.clone();
        if sealed {
            key.seal(&mut d);
        }
        // A full receive buffer drops: the receiver counts what it got.
        let _ = a.send(&d);
    }
    receiver.join().expect("the receiver")
}

/// The median round trip of a 1,500-byte datagram echoed by another thread, sealed and opened
/// at each end if `sealed`.
fn round_trip(key: &Key, sealed: bool) -> Duration {
    let (a, b) = pair();
    a.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let key = *key;
    let echo = std::thread::spawn(move || {
        let mut buf = vec![0u8; 2048];
        while let Ok(n) = b.recv(&mut buf) {
            let mut reply = match sealed {
                true => key.open(&buf[..n]).expect("sealed by the sender").to_vec(),
                false => buf[..n].to_vec(),
            };
            if sealed {
                key.seal(&mut reply);
            }
            let _ = b.send(&reply);
        }
    });
    let payload = vec![0x45u8; 1_500];
    let mut buf = vec![0u8; 2048];
    let mut trips = Vec::with_capacity(TRIPS);
    for _ in 0..TRIPS {
        let started = Instant::now();
        let mut d = payload.clone();
        if sealed {
            key.seal(&mut d);
        }
        a.send(&d).unwrap();
        let n = a.recv(&mut buf).expect("the echo");
        if sealed {
            key.open(&buf[..n]).expect("sealed by the echo");
        }
        trips.push(started.elapsed());
    }
    drop(a);
    let _ = echo.join();
    trips.sort();
    trips[trips.len() / 2]
}
