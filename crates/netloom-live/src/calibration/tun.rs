//! TUN read and write rates: a TCP flow from one scratch host to another crosses a plain
//! TUN-to-TUN forwarder (`forward`, also the live benchmarks' floor, bench/src/bin/tun-forward.rs),
//! which times its own reads and writes; once with the devices' offloads off (every packet at
//! most the MTU) and once on (GSO super-packets of up to 64 KB, as `netloom run` has them).

use super::{CalibrationError, Rate, TunRates};
use netloom_os::{enter_namespace, Testbed, TestbedSpec, Tun, VNET_HDR_LEN};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Packets read from one side before the other side gets a turn (as the driver's READ_BATCH).
pub const BATCH: usize = 64;
/// The largest frame: virtio_net_hdr, IPv6 header and the most its payload length says.
pub const FRAME: usize = VNET_HDR_LEN + 40 + 65_535;
/// Forwarding before the measurement starts: the connection opens and its window grows.
const WARM_UP: Duration = Duration::from_millis(300);
/// Forwarding measured, per offload setting.
const MEASURED: Duration = Duration::from_secs(2);
/// How long a socket call of the flow may block before it looks at whether to stop.
const POLL: Duration = Duration::from_millis(50);
/// The longest the flow's connection may take to open.
const CONNECT: Duration = Duration::from_secs(2);
/// The bytes the sender writes at a time.
const CHUNK: usize = 1 << 16;

/// What `forward` moved, per direction (0: host 0 to host 1), and the time spent in the calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Forwarded {
    /// Packets read and written on.
    pub packets: [u64; 2],
    /// Their bytes, virtio_net_hdr excluded.
    pub bytes: [u64; 2],
    /// Writes that failed (the packet is lost, as a full queue loses it).
    pub failed: [u64; 2],
    /// Time inside reads that returned a packet, ns.
    pub read_ns: u64,
    /// Time inside writes, ns.
    pub write_ns: u64,
}

/// Busy-polls the two TUN devices `tuns` and writes every packet read from one into the other
/// at once (no engine, no schedule), while `go()` says so, and times each call. `vnet`: the devices
/// frame packets behind a virtio_net_hdr (offloads on).
pub fn forward(
    tuns: &[Tun],
    vnet: bool,
    go: &mut dyn FnMut() -> bool,
) -> std::io::Result<Forwarded> {
    let mut buf = vec![0u8; FRAME];
    let header = if vnet { VNET_HDR_LEN } else { 0 };
    let mut f = Forwarded::default();
    while go() {
        for from in 0..2 {
            for _ in 0..BATCH {
                let t = Instant::now();
                let n = match tuns[from].read(&mut buf) {
                    Ok(n) => n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => break,
                    Err(e) => return Err(e),
                };
                let read = Instant::now();
                let written = tuns[1 - from].write(&buf[..n]);
                f.read_ns += (read - t).as_nanos() as u64;
                f.write_ns += read.elapsed().as_nanos() as u64;
                match written {
                    Ok(_) => {
                        f.packets[from] += 1;
                        f.bytes[from] += n.saturating_sub(header) as u64;
                    }
                    Err(_) => f.failed[from] += 1,
                }
            }
        }
    }
    Ok(f)
}

/// Measures TUN rates without and with GSO in a scratch experiment `name` (two hosts), torn
/// down however this ends; `each` hears each setting's rates as they are known.
pub(super) fn rates(
    name: &str,
    stop: &AtomicBool,
    each: &mut dyn FnMut(&TunRates),
) -> Result<Vec<TunRates>, CalibrationError> {
    let testbed = Testbed::create(&TestbedSpec::planned(name, ["h1", "h2"]))?;
    let mut out = Vec::new();
    for gso in [false, true] {
        for tun in testbed.tuns().iter() {
            tun.set_offload(gso)?;
        }
        let rates = measure(&testbed, gso, stop)?;
        each(&rates);
        out.push(rates);
    }
    Ok(out)
}

/// One offload setting: a fresh TCP connection from h1 to h2 through the forwarder.
fn measure(testbed: &Testbed, gso: bool, stop: &AtomicBool) -> Result<TunRates, CalibrationError> {
    let done = Arc::new(AtomicBool::new(false));
    let to = SocketAddr::from((testbed.spec().hosts[1].ipv4, 0));
    let (listening, port) = std::sync::mpsc::channel();
    let receiver = {
        let (ns, done) = (testbed.namespace(1), done.clone());
        std::thread::Builder::new()
            .name("netloom-calibrate-rx".into())
            .spawn(move || -> std::io::Result<()> {
                enter_namespace(&ns).map_err(std::io::Error::other)?;
                let listener = TcpListener::bind(to)?;
                listener.set_nonblocking(true)?;
                let _ = listening.send(listener.local_addr()?);
                let mut stream = loop {
                    match listener.accept() {
                        Ok((s, _)) => break s,
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {
                            if done.load(Ordering::Relaxed) {
                                return Ok(());
                            }
                            std::thread::sleep(POLL / 10);
                        }
                        Err(e) => return Err(e),
                    }
                };
                stream.set_nonblocking(false)?;
                stream.set_read_timeout(Some(POLL))?;
                let mut sink = vec![0u8; CHUNK];
                while !done.load(Ordering::Relaxed) {
                    match stream.read(&mut sink) {
                        Ok(0) => break,
                        Ok(_) => {}
                        Err(e)
                            if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(())
            })
            .map_err(CalibrationError::io("start the TCP receiver"))?
    };
    let to = port.recv().map_err(|_| CalibrationError::Io {
        what: "listen in h2".into(),
        error: std::io::Error::other("the receiver ended before it listened"),
    });
    let sender = to.as_ref().ok().map(|&to| {
        let (ns, done) = (testbed.namespace(0), done.clone());
        std::thread::Builder::new()
            .name("netloom-calibrate-tx".into())
            .spawn(move || -> std::io::Result<()> {
                enter_namespace(&ns).map_err(std::io::Error::other)?;
                let mut stream = TcpStream::connect_timeout(&to, CONNECT)?;
                stream.set_write_timeout(Some(POLL))?;
                let chunk = vec![0x5au8; CHUNK];
                while !done.load(Ordering::Relaxed) {
                    match stream.write(&chunk) {
                        Ok(_) => {}
                        Err(e)
                            if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(())
            })
    });
    // Forward whatever happened above, so that the flow's threads can end.
    let tuns = testbed.tuns();
    let start = Instant::now();
    let warm = forward(tuns, gso, &mut || {
        start.elapsed() < WARM_UP && !stop.load(Ordering::Relaxed)
    });
    let measured_from = Instant::now();
    let measured = forward(tuns, gso, &mut || {
        measured_from.elapsed() < MEASURED && !stop.load(Ordering::Relaxed)
    });
    let wall = measured_from.elapsed();
    done.store(true, Ordering::Relaxed);
    // Keep forwarding until both ends have stopped (each looks at `done` every `POLL`), so
    // neither waits on a packet left in a device; a thread that never started is done.
    let ending = Instant::now();
    let _ = forward(tuns, gso, &mut || {
        let sent = match &sender {
            Some(Ok(thread)) => thread.is_finished(),
            _ => true,
        };
        !(receiver.is_finished() && sent) && ending.elapsed() < CONNECT + POLL * 4
    });
    let joined = |what: &str, r: std::thread::Result<std::io::Result<()>>| {
        r.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            .map_err(CalibrationError::io(what))
    };
    joined("the TCP flow's receiver in h2", receiver.join())?;
    let sender = sender
        .expect("a sender is started once the receiver listens")
        .map_err(CalibrationError::io("start the TCP sender"))?;
    joined("the TCP flow's sender in h1", sender.join())?;
    to?;
    if stop.load(Ordering::Relaxed) {
        return Err(CalibrationError::Interrupted);
    }
    warm.map_err(CalibrationError::io("forward between the TUN devices"))?;
    let f = measured.map_err(CalibrationError::io("forward between the TUN devices"))?;
    let packets: u64 = f.packets.iter().sum();
    let bytes: u64 = f.bytes.iter().sum();
    if packets == 0 {
        return Err(CalibrationError::Io {
            what: "forward a TCP flow between two TUN devices".into(),
            error: std::io::Error::other("no packet crossed"),
        });
    }
    let rate = |ns: u64| {
        let seconds = (ns.max(1) as f64) / 1e9;
        Rate {
            packets_per_second: packets as f64 / seconds,
            gbit_per_second: bytes as f64 * 8.0 / seconds / 1e9,
            ns_per_packet: ns as f64 / packets as f64,
        }
    };
    Ok(TunRates {
        gso,
        packets,
        mean_packet_bytes: bytes as f64 / packets as f64,
        read: rate(f.read_ns),
        write: rate(f.write_ns),
        forwarded_gbit_per_second: bytes as f64 * 8.0 / wall.as_secs_f64() / 1e9,
    })
}
