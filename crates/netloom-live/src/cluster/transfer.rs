//! A transfer between machines as bytes (docs/cluster.md, "Transfers between machines"): a
//! 48-byte header with the sender's stamps and sequence number, sealed with the run's secret
//! on its own (so its length is trusted before a byte of the body is read), the hosts' buckets
//! and the shipped packets in a fixed layout, the engine's migration (pipes' state, pending
//! exits) in bincode, and the tag of all of it.

use crate::moved::Stamps;
use crate::moved::Transfer;
use crate::ration::Bucket;
use netloom_engine::Migration;
use netloom_time::Instant;
use netloom_wire::{Key, TAG_LEN};

/// The first bytes of every transfer, and of every connection that carries them.
pub(crate) const MAGIC: [u8; 4] = *b"NLTR";
/// The layout's version: a netloom of another layout is refused at the start anyway (the
/// coordinator checks every machine's version), so this only guards against strangers.
const VERSION: u8 = 2;
/// The fixed part: magic, version, the run's VNI, from and to, the length of the body, the
/// sender's three stamps, and the frame's sequence number on its connection.
pub(crate) const HEADER_LEN: usize = 48;
/// The header and its own tag: what is read, and checked, before the body.
pub(crate) const SEALED_HEADER_LEN: usize = HEADER_LEN + TAG_LEN;
/// One host's entry: its index, its bucket's credit and when the bucket was last filled.
const HOST_LEN: usize = 20;

/// Why bytes are not a transfer of this run for this worker.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Malformed {
    #[error(
        "a transfer frame whose tag is not the run's secret's (forged, or changed on the way)"
    )]
    Unauthentic,
    #[error(
        "a transfer frame numbered {got} where {awaited} was due (replayed, or one went missing)"
    )]
    OutOfOrder { got: u64, awaited: u64 },
    #[error("not a netloom transfer (magic {0:02x?}, version {1})")]
    Stranger([u8; 4], u8),
    #[error("a transfer of another run (VNI {0:#08x}) or between other workers ({1} to {2})")]
    Elsewhere(u32, u16, u16),
    #[error("a transfer cut short ({0} bytes where more were due)")]
    Short(usize),
    #[error("a transfer's migration: {0}")]
    Migration(#[from] bincode::Error),
}

/// Where a transfer goes: the run (its GENEVE VNI), and the sending and receiving workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Route {
    pub vni: u32,
    pub from: u16,
    pub to: u16,
}

/// `transfer` on `route` as one frame, the `seq`th on its connection, sealed with `key`.
pub(crate) fn encode(
    transfer: &Transfer,
    route: Route,
    seq: u64,
    key: &Key,
) -> bincode::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(SEALED_HEADER_LEN + 256);
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.extend_from_slice(&route.vni.to_be_bytes()[1..]);
    out.extend_from_slice(&route.from.to_be_bytes());
    out.extend_from_slice(&route.to.to_be_bytes());
    // The body's length, once known.
    out.extend_from_slice(&[0; 4]);
    let s = &transfer.stamps;
    for ns in [s.paused, s.extracted, s.sent.unwrap_or(0)] {
        out.extend_from_slice(&ns.to_be_bytes());
    }
    out.extend_from_slice(&seq.to_be_bytes());
    // The header's tag, once the length is in.
    out.extend_from_slice(&[0; TAG_LEN]);
    out.extend_from_slice(&(transfer.hosts.len() as u32).to_be_bytes());
    for (host, bucket) in &transfer.hosts {
        let (credit, filled) = bucket.parts();
        out.extend_from_slice(&host.to_be_bytes());
        out.extend_from_slice(&credit.to_be_bytes());
        out.extend_from_slice(&filled.as_nanos().to_be_bytes());
    }
    out.extend_from_slice(&(transfer.payloads.len() as u32).to_be_bytes());
    for payload in &transfer.payloads {
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        out.extend_from_slice(payload);
    }
    bincode::serialize_into(&mut out, &transfer.migration)?;
    let body = (out.len() - SEALED_HEADER_LEN) as u32;
    out[12..16].copy_from_slice(&body.to_be_bytes());
    let mut header = out[..HEADER_LEN].to_vec();
    key.seal(&mut header);
    out[HEADER_LEN..SEALED_HEADER_LEN].copy_from_slice(&header[HEADER_LEN..]);
    // The frame's tag covers all before it, the header's tag included.
    key.seal(&mut out);
    Ok(out)
}

/// What a sealed header says about the rest of its frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    /// The frame's sequence number on its connection.
    pub seq: u64,
    /// The bytes after the sealed header: the body and the frame's tag.
    pub rest: usize,
}

/// What follows `sealed` (a header and its tag), if its tag is `key`'s and it is a transfer on
/// `route` (its run, from `route.from` to `route.to`). Its length is the sender's, so it may be
/// read; nothing in a header without the tag is looked at.
pub(crate) fn open_header(
    sealed: &[u8; SEALED_HEADER_LEN],
    route: Route,
    key: &Key,
) -> Result<Head, Malformed> {
    let header = key.open(sealed).map_err(|_| Malformed::Unauthentic)?;
    let magic: [u8; 4] = header[..4].try_into().expect("4 bytes");
    if magic != MAGIC || header[4] != VERSION {
        return Err(Malformed::Stranger(magic, header[4]));
    }
    let vni = u32::from_be_bytes([0, header[5], header[6], header[7]]);
    let from = u16::from_be_bytes([header[8], header[9]]);
    let to = u16::from_be_bytes([header[10], header[11]]);
    if (vni, from, to) != (route.vni, route.from, route.to) {
        return Err(Malformed::Elsewhere(vni, from, to));
    }
    let body = u32::from_be_bytes(header[12..16].try_into().expect("4 bytes")) as usize;
    Ok(Head {
        seq: u64::from_be_bytes(header[40..48].try_into().expect("8 bytes")),
        rest: body + TAG_LEN,
    })
}

/// The transfer `frame` makes (its header checked by `open_header`, the rest checked here
/// against the frame's tag), its stamps those of its sender (`read` and `parsed` are the
/// receiver's to set).
pub(crate) fn decode(frame: &[u8], key: &Key) -> Result<Transfer, Malformed> {
    let frame = key.open(frame).map_err(|_| Malformed::Unauthentic)?;
    let (header, body) = frame
        .split_at_checked(SEALED_HEADER_LEN)
        .ok_or(Malformed::Short(frame.len()))?;
    let stamp = |at: usize| u64::from_be_bytes(header[at..at + 8].try_into().expect("8 bytes"));
    let stamps = Stamps {
        paused: stamp(16),
        extracted: stamp(24),
        sent: Some(stamp(32)),
        ..Stamps::default()
    };
    let mut rest = Bytes(body);
    let hosts = (0..rest.u32()?)
        .map(|_| {
            let entry = rest.take(HOST_LEN)?;
            let host = u32::from_be_bytes(entry[..4].try_into().expect("4 bytes"));
            let credit = i64::from_be_bytes(entry[4..12].try_into().expect("8 bytes"));
            let filled = u64::from_be_bytes(entry[12..].try_into().expect("8 bytes"));
            Ok((
                host,
                Bucket::from_parts(credit, Instant::from_nanos(filled)),
            ))
        })
        .collect::<Result<_, Malformed>>()?;
    let payloads = (0..rest.u32()?)
        .map(|_| {
            let len = rest.u32()? as usize;
            Ok(rest.take(len)?.into())
        })
        .collect::<Result<_, Malformed>>()?;
    let migration: Migration = bincode::deserialize(rest.0)?;
    Ok(Transfer {
        migration,
        hosts,
        payloads,
        stamps,
    })
}

/// What is left of a body to read.
struct Bytes<'b>(&'b [u8]);

impl<'b> Bytes<'b> {
    fn take(&mut self, n: usize) -> Result<&'b [u8], Malformed> {
        if self.0.len() < n {
            return Err(Malformed::Short(self.0.len()));
        }
        let (taken, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(taken)
    }

    fn u32(&mut self) -> Result<u32, Malformed> {
        let bytes = self.take(4)?;
        Ok(u32::from_be_bytes(bytes.try_into().expect("4 bytes")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ration::Ration;
    use netloom_engine::{Engine, Injected, Ownership, Payload};
    use netloom_link::{PacketMeta, PipeConfig};
    use netloom_time::{Duration, Rate};
    use netloom_topo::{NodeKind, RoutingMetric, Topology};
    use std::sync::Arc;

    const ROUTE: Route = Route {
        vni: 0x00ab_cdef,
        from: 0,
        to: 1,
    };

    /// The run's secret.
    fn key() -> Key {
        Key::from_hex(&"3c".repeat(32)).unwrap()
    }

    /// What worker 0 of two hands worker 1 when h0's pipe, holding three packets in its queue,
    /// and h0 move there: a migration with a pipe's state.
    fn migration() -> Migration {
        let mut t = Topology::new("t", RoutingMetric::Delay);
        let h0 = t.add_node("h0", NodeKind::Host, None);
        let h1 = t.add_node("h1", NodeKind::Host, None);
        let c = PipeConfig::new(Rate::bps(1_000_000), Duration::from_millis(1));
        t.add_link(h0, h1, None, c, Some(c));
        let before = Arc::new(Ownership::live(&t, &[0, 1], 2, Payload::Ship).unwrap());
        let after = Arc::new(Ownership::live(&t, &[1, 1], 2, Payload::Ship).unwrap());
        let mut engine = Engine::partitioned(t, 1, before, 0);
        for token in 0..3 {
            let packet = Injected {
                bytes: 1000,
                token,
                meta: PacketMeta::default(),
                ttl: netloom_engine::DEFAULT_TTL,
            };
            assert!(engine.inject(Instant::from_nanos(0), h0, h1, packet));
        }
        engine.migrate_out(after).swap_remove(1)
    }

    /// A transfer through its binary form: the same migration (as its serialized form says),
    /// hosts, packets' bytes and stamps, whole, and refused on another run or worker.
    #[test]
    fn a_hand_over_through_bytes_is_the_same_hand_over() {
        let m = migration();
        assert_eq!(m.counts().0, 1, "h0's pipe");
        let json = serde_json::to_string(&m).unwrap();
        let mut ration = Ration::new(3);
        ration.took(2, 700);
        let transfer = Transfer {
            migration: m,
            hosts: vec![(0, ration.bucket(0)), (2, ration.bucket(2))],
            payloads: vec![vec![1; 60].into(), Vec::new().into(), vec![3; 1500].into()],
            stamps: Stamps {
                paused: 5,
                extracted: 6,
                sent: Some(7),
                ..Stamps::default()
            },
        };
        let frame = encode(&transfer, ROUTE, 5, &key()).unwrap();
        let sealed: &[u8; SEALED_HEADER_LEN] = frame[..SEALED_HEADER_LEN].try_into().unwrap();
        let head = open_header(sealed, ROUTE, &key()).unwrap();
        assert_eq!(head.seq, 5);
        assert_eq!(head.rest, frame.len() - SEALED_HEADER_LEN);
        let got = decode(&frame, &key()).unwrap();
        assert_eq!(serde_json::to_string(&got.migration).unwrap(), json);
        assert_eq!(got.hosts, transfer.hosts);
        assert_eq!(got.payloads, transfer.payloads);
        let s = got.stamps;
        assert_eq!((s.paused, s.extracted, s.sent), (5, 6, Some(7)));
        assert_eq!((s.read, s.parsed), (None, None), "the receiver's to set");
        assert!(
            decode(&frame[..frame.len() - 1], &key()).is_err(),
            "cut short"
        );
        for other in [
            Route { vni: 7, ..ROUTE },
            Route { to: 0, ..ROUTE },
            Route { from: 2, ..ROUTE },
        ] {
            assert!(matches!(
                open_header(sealed, other, &key()),
                Err(Malformed::Elsewhere(..))
            ));
        }
        // Sealed with another run's secret, or any byte changed: refused, the header before
        // its length is believed, the body before anything in it is decoded.
        let stranger = Key::random();
        assert!(matches!(
            open_header(sealed, ROUTE, &stranger),
            Err(Malformed::Unauthentic)
        ));
        for at in [
            0,
            13,
            40,
            HEADER_LEN,
            SEALED_HEADER_LEN + 3,
            frame.len() - 1,
        ] {
            let mut changed = frame.clone();
            changed[at] ^= 1;
            let header: &[u8; SEALED_HEADER_LEN] = changed[..SEALED_HEADER_LEN].try_into().unwrap();
            let refused = match open_header(header, ROUTE, &key()) {
                Err(e) => e,
                Ok(_) => decode(&changed, &key()).unwrap_err(),
            };
            assert!(matches!(refused, Malformed::Unauthentic), "byte {at}");
        }
        // One sealed with the secret but of another layout is no transfer of this netloom.
        let mut other = frame[..HEADER_LEN].to_vec();
        other[4] = 1;
        key().seal(&mut other);
        assert!(matches!(
            open_header(other.as_slice().try_into().unwrap(), ROUTE, &key()),
            Err(Malformed::Stranger(MAGIC, 1))
        ));
    }

    /// A host's bucket travels with its debt and its last fill: the worker that reads the host
    /// from then on lets it through exactly when the old one would have.
    #[test]
    fn a_hand_over_through_bytes_keeps_each_hosts_bucket() {
        let mut old = Ration::new(3);
        let t = |us: u64| Instant::from_nanos(us * 1_000);
        while old.may_take(2, t(5)) {
            old.took(2, 100);
        }
        let transfer = Transfer {
            migration: Migration::default(),
            hosts: vec![(2, old.bucket(2))],
            payloads: Vec::new(),
            stamps: Stamps::default(),
        };
        let frame = encode(&transfer, ROUTE, 0, &key()).unwrap();
        let arrived = decode(&frame, &key()).unwrap();
        let mut new = Ration::new(3);
        for (host, bucket) in arrived.hosts {
            new.set_bucket(host, bucket);
        }
        let admits = |r: &mut Ration| (5..40).map(|us| r.may_take(2, t(us))).collect::<Vec<_>>();
        let expected = admits(&mut old);
        assert!(
            expected.contains(&false) && expected.contains(&true),
            "{expected:?}"
        );
        assert_eq!(admits(&mut new), expected);
    }
}
