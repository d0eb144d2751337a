//! In-memory hosts, the clocks they run on, the small topology the driver tests run on, and what
//! a live test needs first (root, TUN, a registry of its own).

use netloom_link::PipeConfig;
use netloom_live::{Clock, Driver, Framing, PacketIo, SystemClock, TestClock};
use netloom_time::{Duration, Instant};
use netloom_topo::{NodeKind, RoutingMetric, Topology};
use std::collections::VecDeque;
use std::io;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

/// A clock a test can let time pass on: a `TestClock` moves at once, the system's is slept on.
pub trait TestTime: Clock {
    /// Lets up to `d` pass.
    fn pass(&self, d: Duration);
}

impl TestTime for TestClock {
    fn pass(&self, d: Duration) {
        self.advance(d);
    }
}

impl TestTime for SystemClock {
    fn pass(&self, d: Duration) {
        // A little at a time, as a poller would, so the sleeping modes are exercised too.
        let d = d.as_nanos().min(200_000);
        std::thread::sleep(std::time::Duration::from_nanos(d));
    }
}

/// Hosts as queues: what each sends waits in `sends` until its time and is read from there
/// (`read` says when), what they receive lands in `delivered` with the time it was written.
pub struct MemIo<C: TestTime> {
    pub clock: C,
    pub sends: Vec<VecDeque<(Instant, Vec<u8>)>>,
    /// (host, time read) of every frame read.
    pub read: Vec<(u32, Instant)>,
    pub delivered: Vec<(u32, Instant, Vec<u8>)>,
    framing: Framing,
    /// How long a turn that does not sleep takes (0: the test moves the clock itself).
    pub turn: Duration,
}

impl<C: TestTime> MemIo<C> {
    /// Two hosts with nothing sent yet.
    pub fn new(clock: C, framing: Framing) -> MemIo<C> {
        MemIo {
            clock,
            sends: vec![VecDeque::new(), VecDeque::new()],
            read: Vec::new(),
            delivered: Vec::new(),
            framing,
            turn: Duration::ZERO,
        }
    }

    /// Host `host` sends `packet` now.
    pub fn send(&mut self, host: usize, packet: Vec<u8>) {
        let now = self.clock.now();
        self.send_at(host, now, packet);
    }

    /// Host `host` sends `packet` at `at` (after anything it sends before).
    pub fn send_at(&mut self, host: usize, at: Instant, packet: Vec<u8>) {
        self.sends[host].push_back((at, packet));
    }

    /// When a host next sends, if any will.
    pub fn next_send(&self) -> Option<Instant> {
        self.sends
            .iter()
            .filter_map(|q| q.front().map(|(t, _)| *t))
            .min()
    }

    /// Whether some host still has something to send.
    pub fn unsent(&self) -> bool {
        self.sends.iter().any(|q| !q.is_empty())
    }

    fn due(&self) -> Vec<u32> {
        let now = self.clock.now();
        (0..self.sends.len() as u32)
            .filter(|&h| {
                self.sends[h as usize]
                    .front()
                    .is_some_and(|(t, _)| *t <= now)
            })
            .collect()
    }
}

impl<C: TestTime> PacketIo for MemIo<C> {
    fn wait(
        &mut self,
        timeout: Option<std::time::Duration>,
        ready: &mut Vec<u32>,
    ) -> io::Result<bool> {
        ready.extend(self.due());
        if !ready.is_empty() {
            return Ok(false);
        }
        let timeout = Duration::from_nanos(timeout.map_or(u64::MAX, |t| t.as_nanos() as u64));
        if timeout.is_zero() {
            self.clock.pass(self.turn);
            return Ok(false);
        }
        let now = self.clock.now();
        let until = self.next_send().map(|t| t.saturating_since(now));
        let passes = until.map_or(timeout, |u| u.min(timeout));
        self.clock.pass(passes);
        ready.extend(self.due());
        Ok(ready.is_empty() && self.clock.now().saturating_since(now) >= timeout)
    }

    fn recv(&mut self, host: u32, buf: &mut [u8]) -> io::Result<usize> {
        let now = self.clock.now();
        let q = &mut self.sends[host as usize];
        if q.front().is_none_or(|(t, _)| *t > now) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let (_, p) = q.pop_front().expect("checked");
        self.read.push((host, now));
        buf[..p.len()].copy_from_slice(&p);
        Ok(p.len())
    }

    fn send(&mut self, host: u32, packet: &[u8]) -> io::Result<()> {
        self.delivered
            .push((host, self.clock.now(), packet.to_vec()));
        Ok(())
    }

    fn framing(&self) -> Framing {
        self.framing
    }
}

/// Steps every driver, moving the test clock to the next thing due, until nothing is left to
/// read, release or hand over. Panics if they never go quiet (a payload that never comes back).
pub fn run_until_quiet(drivers: &mut [Driver<MemIo<TestClock>, TestClock>], clock: &TestClock) {
    for _ in 0..1_000_000 {
        for d in drivers.iter_mut() {
            d.step().unwrap();
        }
        let next = drivers
            .iter()
            .flat_map(|d| [d.engine().poll_at(), d.io().next_send()])
            .flatten()
            .min();
        let held = drivers.iter().any(|d| d.in_flight() > 0);
        match next {
            Some(at) if at > clock.now() => clock.set(at),
            Some(_) => {}
            // Nothing scheduled but payloads held: a hand-off or a release is in a mailbox,
            // read on the next turn.
            None if held => {}
            None => return,
        }
    }
    panic!("the drivers never went quiet");
}

/// An IPv4 packet to `dst`, `len` bytes long, whose first payload byte is `id`, from the other
/// host of `pair` (h1 when `dst` is h0, else h0), with a TTL of 64 (its header checksum is
/// left at zero: nothing on the way checks it).
pub fn ipv4(dst: [u8; 4], len: usize, id: u8) -> Vec<u8> {
    let src = if dst == [198, 18, 0, 1] {
        [198, 18, 0, 2]
    } else {
        [198, 18, 0, 1]
    };
    let mut p = vec![0u8; len];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    p[8] = 64;
    p[12..16].copy_from_slice(&src);
    p[16..20].copy_from_slice(&dst);
    p[20] = id;
    p
}

/// TCP headers of `tcp_super_frame`: IPv4 without options, TCP with 12 bytes of options.
pub const TCP_HEADERS: usize = 20 + 32;

/// A TCP super-packet from h0 to h1 as a kernel hands it over with GSO: virtio_net_hdr
/// (NEEDS_CSUM, TCPV4, segment size `mss`), IPv4 and TCP headers, and `payload` bytes from
/// sequence number `seq`.
pub fn tcp_super_frame(seq: u32, mss: u16, payload: usize) -> Vec<u8> {
    let vnet = netloom_packet::segment::VNET_HDR_LEN;
    let mut f = vec![0u8; vnet + TCP_HEADERS + payload];
    f[0] = 1;
    f[1] = 1;
    for (at, v) in [(2, TCP_HEADERS as u16), (4, mss), (6, 20), (8, 16)] {
        f[at..at + 2].copy_from_slice(&v.to_ne_bytes());
    }
    let total = (f.len() - vnet) as u16;
    let p = &mut f[vnet..];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&total.to_be_bytes());
    p[6] = 0x40;
    p[8] = 64;
    p[9] = 6;
    p[12..16].copy_from_slice(&[198, 18, 0, 1]);
    p[16..20].copy_from_slice(&[198, 18, 0, 2]);
    p[24..28].copy_from_slice(&seq.to_be_bytes());
    p[32] = 8 << 4;
    p[33] = 0x18;
    for (i, b) in p[TCP_HEADERS..].iter_mut().enumerate() {
        *b = (i % 253) as u8;
    }
    f
}

/// h0 - r - h1 with pipes `c` (`tweak` adjusts the r-h1 pipes), and the hosts' addresses
/// 198.18.0.1 and .2.
pub fn pair(c: PipeConfig, tweak: impl Fn(&mut PipeConfig)) -> (Topology, Vec<Vec<IpAddr>>) {
    let mut t = Topology::new("pair", RoutingMetric::Delay);
    let h0 = t.add_node("h0", NodeKind::Host, None);
    let r = t.add_node("r", NodeKind::Router, None);
    let h1 = t.add_node("h1", NodeKind::Host, None);
    let mut last = c;
    tweak(&mut last);
    t.add_link(h0, r, None, c, Some(c));
    t.add_link(r, h1, None, last, Some(last));
    let addrs = vec![
        vec!["198.18.0.1".parse().unwrap()],
        vec!["198.18.0.2".parse().unwrap()],
    ];
    (t, addrs)
}

/// Microseconds as engine time.
pub fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

/// An instant, microseconds into the run.
pub fn at_us(n: u64) -> Instant {
    Instant(n * 1_000)
}

/// Why a live test (root, namespaces, TUN) cannot run here, if it cannot.
pub fn unavailable() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .is_some_and(|l| l.split_whitespace().nth(1) == Some("0"));
    if !root {
        return Some("not root".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun".into());
    }
    None
}

/// Held by each live test for its whole run: an experiment registers in `NETLOOM_RUN_DIR`, which a
/// process has only one of at a time, and the tests of every module share the process.
static LIVE: Mutex<()> = Mutex::new(());

/// A live test's own registry directory, `NETLOOM_RUN_DIR` pointed at it until the guard is
/// dropped; the directory is removed then, whatever the test did.
pub struct LiveRegistry {
    pub dir: PathBuf,
    _held: MutexGuard<'static, ()>,
}

/// Waits for every other live test of the process to end, then points `NETLOOM_RUN_DIR` at a
/// directory named after `tag` and this process.
pub fn live_registry(tag: &str) -> LiveRegistry {
    // A test that failed while holding the lock leaves nothing behind for the next (its guard
    // removed its directory), so a poisoned lock is as good as a free one.
    let held = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("netloom-{tag}-{}", std::process::id()));
    std::env::set_var("NETLOOM_RUN_DIR", &dir);
    LiveRegistry { dir, _held: held }
}

impl Drop for LiveRegistry {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
