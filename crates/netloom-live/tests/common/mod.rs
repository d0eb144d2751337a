//! In-memory hosts and the small topology the driver tests run on.

use netloom_link::PipeConfig;
use netloom_live::{Framing, PacketIo};
use netloom_topo::{NodeKind, RoutingMetric, Topology};
use std::collections::VecDeque;
use std::io;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Hosts as queues: what they send waits in `inbox`, what they receive lands in `delivered`.
pub struct MemIo {
    pub inbox: Vec<VecDeque<Vec<u8>>>,
    pub delivered: Vec<(u32, Instant, Vec<u8>)>,
    framing: Framing,
}

impl MemIo {
    /// Two hosts with nothing sent yet.
    pub fn new(framing: Framing) -> MemIo {
        MemIo {
            inbox: vec![VecDeque::new(), VecDeque::new()],
            delivered: Vec::new(),
            framing,
        }
    }
}

impl PacketIo for MemIo {
    fn wait(&mut self, timeout: Option<Duration>, ready: &mut Vec<u32>) -> io::Result<()> {
        ready.extend((0..self.inbox.len() as u32).filter(|&h| !self.inbox[h as usize].is_empty()));
        if ready.is_empty() {
            // Sleep as a poller would, a little, so the sleeping modes are exercised too.
            std::thread::sleep(
                timeout
                    .unwrap_or(Duration::ZERO)
                    .min(Duration::from_micros(200)),
            );
        }
        Ok(())
    }

    fn recv(&mut self, host: u32, buf: &mut [u8]) -> io::Result<usize> {
        let p = self.inbox[host as usize]
            .pop_front()
            .ok_or_else(|| io::Error::from(io::ErrorKind::WouldBlock))?;
        buf[..p.len()].copy_from_slice(&p);
        Ok(p.len())
    }

    fn send(&mut self, host: u32, packet: &[u8]) -> io::Result<()> {
        self.delivered.push((host, Instant::now(), packet.to_vec()));
        Ok(())
    }

    fn framing(&self) -> Framing {
        self.framing
    }
}

/// An IPv4 packet to `dst`, `len` bytes long, whose first payload byte is `id`.
pub fn ipv4(dst: [u8; 4], len: usize, id: u8) -> Vec<u8> {
    let mut p = vec![0u8; len];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    p[16..20].copy_from_slice(&dst);
    p[20] = id;
    p
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
