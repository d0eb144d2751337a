//! `NfQueue`: a netfilter queue (NFQUEUE) socket, for `netloom shape` to hold the machine's own
//! packets in the kernel and decide, by verdict, when each goes on. A queue copies up headers
//! only, or whole packets for a verdict to give back rewritten (a CE mark).
//!
//! The messages are nfnetlink's (linux/netfilter/nfnetlink_queue.h): a netlink header, a
//! `nfgenmsg` naming the queue, then attributes. Written here rather than taken from a crate
//! because the shaping loop needs the descriptor (to wait on it with `Poller` beside its timers)
//! and batched verdicts, which the crates at hand do not expose.

use crate::netlink::{self, put_attr, set_length};
use crate::OsError;
use std::collections::{HashSet, VecDeque};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

const NFNL_SUBSYS_QUEUE: u16 = 3;
const NFQNL_MSG_PACKET: u16 = 0;
const NFQNL_MSG_VERDICT: u16 = 1;
const NFQNL_MSG_CONFIG: u16 = 2;
const NFQNL_MSG_VERDICT_BATCH: u16 = 3;

const NFQA_PACKET_HDR: u16 = 1;
const NFQA_VERDICT_HDR: u16 = 2;
const NFQA_PAYLOAD: u16 = 10;
const NFQA_CAP_LEN: u16 = 13;
const NFQA_UID: u16 = 16;
const NFQA_GID: u16 = 17;

const NFQA_CFG_CMD: u16 = 1;
const NFQA_CFG_PARAMS: u16 = 2;
const NFQA_CFG_QUEUE_MAXLEN: u16 = 3;
const NFQA_CFG_MASK: u16 = 4;
const NFQA_CFG_FLAGS: u16 = 5;
const NFQNL_CFG_CMD_BIND: u8 = 1;
const NFQNL_COPY_PACKET: u8 = 2;
const NFQA_CFG_F_UID_GID: u32 = 8;
/// The queue lets a packet go on (accepted) instead of dropping it when it is full or the
/// socket cannot take the packet's message.
const NFQA_CFG_F_FAIL_OPEN: u32 = 1;

const NF_DROP: u32 = 0;
const NF_ACCEPT: u32 = 1;

/// Netlink header (16 bytes) plus nfgenmsg (4 bytes).
const HEADER: usize = 20;
/// Verdict messages sent in one datagram at most (32 bytes each): well under the socket's
/// send buffer.
const VERDICTS_PER_SEND: usize = 1024;
/// Room for a burst of small (header-only) packet messages per `recv`.
const RECV_BUFFER: usize = 256 * 1024;
/// Receive buffer asked of the kernel, so a burst waits in the socket instead of being lost.
const SOCKET_BUFFER: libc::c_int = 16 * 1024 * 1024;

/// A packet the kernel holds for a verdict: what the queue message says of it.
#[derive(Clone, Copy, Debug)]
pub struct QueuedPacket<'a> {
    /// The queue it came through.
    pub queue: u16,
    /// Its id within the queue, for the verdict; ids rise in arrival order.
    pub id: u32,
    /// The netfilter hook that queued it (0 PREROUTING, 3 OUTPUT, ...).
    pub hook: u8,
    /// Its first bytes, from the IP header on (as many as `bind`'s `copy` asked for).
    pub header: &'a [u8],
    /// Its full length in bytes.
    pub len: u32,
    /// The uid and gid of its local socket, for packets that have one (leaving this machine).
    pub owner: Option<(u32, u32)>,
}

/// What to do with a held packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Let it continue through the stack.
    Accept,
    /// Discard it.
    Drop,
}

impl Verdict {
    fn code(self) -> u32 {
        match self {
            Verdict::Accept => NF_ACCEPT,
            Verdict::Drop => NF_DROP,
        }
    }
}

/// An nfnetlink socket bound to one or more queues.
#[derive(Debug)]
pub struct NfQueue {
    fd: OwnedFd,
    buffer: Vec<u8>,
    /// Messages to the kernel, built here to avoid an allocation per verdict.
    message: Vec<u8>,
    /// Per bound queue, the packets it holds for a verdict, for `verdicts` to batch.
    held: Vec<(u16, Held)>,
    /// What `verdicts` has sent.
    stats: VerdictStats,
}

/// What `NfQueue::verdicts` has sent: packets decided, verdict messages and `sendto` calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerdictStats {
    /// Packets given a verdict.
    pub packets: u64,
    /// Verdict messages: one per batch or single verdict.
    pub messages: u64,
    /// Datagrams (syscalls) they went in.
    pub sends: u64,
}

/// The packets a queue holds for a verdict, in the order the kernel queued them (its list's
/// order; ids rise in it), so that a run of them at the front, all accepted at once, can be
/// given one `NFQNL_MSG_VERDICT_BATCH` (which accepts every packet of the list up to an id).
#[derive(Debug, Default)]
struct Held {
    ids: VecDeque<u32>,
    /// Ids among `ids` already given a verdict of their own (out of order): gone from the
    /// kernel's list, skipped when they reach the front.
    done: HashSet<u32>,
}

/// One verdict message: on one packet, or on every held packet up to and including `id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Message {
    One(u32, Verdict),
    UpTo(u32),
}

impl Held {
    /// The messages that give `decided` (each a packet this queue holds): every packet at the
    /// front of the queue that is accepted now goes in one batch, up to the first that is not
    /// decided yet (a drop at the front is sent on its own between batches); the rest get
    /// messages of their own. Packets of different pipes leave out of arrival order, so only
    /// such a front run can be batched.
    fn plan(&mut self, decided: &[(u32, Verdict)], out: &mut Vec<Message>) {
        let mut now: std::collections::HashMap<u32, Verdict> = decided.iter().copied().collect();
        let mut batch = None;
        while let Some(&front) = self.ids.front() {
            match now.remove(&front) {
                Some(Verdict::Accept) => batch = Some(front),
                Some(Verdict::Drop) => {
                    out.extend(batch.take().map(Message::UpTo));
                    out.push(Message::One(front, Verdict::Drop));
                }
                None if self.done.remove(&front) => {}
                None => break,
            }
            self.ids.pop_front();
        }
        out.extend(batch.map(Message::UpTo));
        // The rest in the order given (exit order), each on its own.
        for &(id, verdict) in decided {
            if now.remove(&id).is_some() {
                self.done.insert(id);
                out.push(Message::One(id, verdict));
            }
        }
    }
}

impl NfQueue {
    /// A non-blocking nfnetlink socket bound to nothing yet. Needs CAP_NET_ADMIN.
    pub fn open() -> Result<NfQueue, OsError> {
        let fd = netlink::socket(libc::NETLINK_NETFILTER, libc::SOCK_NONBLOCK)
            .map_err(|e| OsError::io("open a netfilter queue socket", e))?;
        // SAFETY: an all-zero sockaddr_nl is valid (the kernel picks the port id).
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: `addr` is a live sockaddr_nl of the size given.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(OsError::last("bind a netfilter queue socket"));
        }
        // A full socket buffer loses queue messages (the packets stay held until the queue
        // goes away), so ask for a large one; FORCE needs CAP_NET_ADMIN, which binding needs too.
        set_int_option(&fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, SOCKET_BUFFER)?;
        set_int_option(&fd, libc::SOL_NETLINK, libc::NETLINK_NO_ENOBUFS, 1)?;
        Ok(NfQueue {
            fd,
            buffer: vec![0; RECV_BUFFER],
            message: Vec::with_capacity(64),
            held: Vec::new(),
            stats: VerdictStats::default(),
        })
    }

    /// Binds `queue`: copy the first `copy` bytes of each packet, hold at most `max_len`
    /// packets (beyond, or when this socket's buffer is full, the kernel lets a packet go on
    /// unqueued: fail-open, not the drop a full queue gives by default; with the rule's bypass
    /// they pass too when nobody is bound), and report each packet's socket owner. Fails if
    /// another process holds the queue.
    pub fn bind(&mut self, queue: u16, copy: u32, max_len: u32) -> Result<(), OsError> {
        let what = || format!("bind netfilter queue {queue}");
        self.config(queue, |m| {
            put_attr(m, NFQA_CFG_CMD, &[NFQNL_CFG_CMD_BIND, 0, 0, 0]);
        })
        .map_err(|e| OsError::io(what(), e))?;
        self.config(queue, |m| {
            let mut params = copy.to_be_bytes().to_vec();
            params.push(NFQNL_COPY_PACKET);
            put_attr(m, NFQA_CFG_PARAMS, &params);
            put_attr(m, NFQA_CFG_QUEUE_MAXLEN, &max_len.to_be_bytes());
            let flags = NFQA_CFG_F_UID_GID | NFQA_CFG_F_FAIL_OPEN;
            put_attr(m, NFQA_CFG_MASK, &flags.to_be_bytes());
            put_attr(m, NFQA_CFG_FLAGS, &flags.to_be_bytes());
        })
        .map_err(|e| OsError::io(what(), e))?;
        self.held.push((queue, Held::default()));
        Ok(())
    }

    /// Sends one configuration message for `queue` and waits for the kernel's acknowledgement.
    fn config(&mut self, queue: u16, attrs: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        let flags = (libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16;
        self.message.clear();
        start_message(&mut self.message, NFQNL_MSG_CONFIG, flags, queue, 0);
        attrs(&mut self.message);
        set_length(&mut self.message, 0);
        self.send()?;
        // The socket is non-blocking; the acknowledgement comes at once, but wait for it.
        loop {
            let n = match self.recv_raw() {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    wait_readable(self.fd.as_fd())?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let mut at = 0;
            while let Some((kind, body, next)) = netlink::message(&self.buffer[..n], at) {
                if let Some(verdict) = netlink::acknowledgement(kind, body) {
                    return verdict;
                }
                at = next;
            }
        }
    }

    /// Reads what the kernel has queued without waiting, calling `each` for every packet;
    /// returns how many there were (0: nothing waiting).
    pub fn recv(&mut self, mut each: impl FnMut(QueuedPacket)) -> Result<usize, OsError> {
        let n = match self.recv_raw() {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(0),
            Err(e) => return Err(OsError::io("read the netfilter queue", e)),
        };
        let mut count = 0;
        let mut at = 0;
        while let Some((kind, body, next)) = netlink::message(&self.buffer[..n], at) {
            at = next;
            if kind != (NFNL_SUBSYS_QUEUE << 8 | NFQNL_MSG_PACKET) || body.len() < 4 {
                continue;
            }
            let queue = u16::from_be_bytes([body[2], body[3]]);
            if let Some(packet) = parse_packet(queue, &body[4..]) {
                count += 1;
                if let Some((_, held)) = self.held.iter_mut().find(|(q, _)| *q == queue) {
                    held.ids.push_back(packet.id);
                }
                each(packet);
            }
        }
        Ok(count)
    }

    /// Gives the verdicts `decided` (packet id, verdict) on packets of `queue` that `recv`
    /// handed out: a run at the front of the queue's list accepted together is one batch
    /// message, the others a message each, and all of them go in as few datagrams as fit
    /// (the kernel reads every message of a datagram; one refused, for a packet it no longer
    /// holds, does not stop the others). A packet whose queue message was lost (a full socket
    /// buffer) and that sits before a batch's last packet is accepted with it.
    pub fn verdicts(&mut self, queue: u16, decided: &[(u32, Verdict)]) -> Result<(), OsError> {
        if decided.is_empty() {
            return Ok(());
        }
        let mut plan = Vec::with_capacity(decided.len());
        match self.held.iter_mut().find(|(q, _)| *q == queue) {
            Some((_, held)) => held.plan(decided, &mut plan),
            None => plan.extend(decided.iter().map(|&(id, v)| Message::One(id, v))),
        }
        self.stats.packets += decided.len() as u64;
        for chunk in plan.chunks(VERDICTS_PER_SEND) {
            self.message.clear();
            for &m in chunk {
                let (kind, id, verdict) = match m {
                    Message::One(id, v) => (NFQNL_MSG_VERDICT, id, v),
                    Message::UpTo(id) => (NFQNL_MSG_VERDICT_BATCH, id, Verdict::Accept),
                };
                let at = self.message.len();
                start_message(
                    &mut self.message,
                    kind,
                    libc::NLM_F_REQUEST as u16,
                    queue,
                    at,
                );
                let mut hdr = [0u8; 8];
                hdr[..4].copy_from_slice(&verdict.code().to_be_bytes());
                hdr[4..].copy_from_slice(&id.to_be_bytes());
                put_attr(&mut self.message, NFQA_VERDICT_HDR, &hdr);
                set_length(&mut self.message, at);
            }
            self.stats.messages += chunk.len() as u64;
            self.stats.sends += 1;
            self.send()
                .map_err(|e| OsError::io(format!("give verdicts on queue {queue}"), e))?;
        }
        Ok(())
    }

    /// Accepts packet `id` of `queue` replaced by `packet` (its whole copy, rewritten): the
    /// kernel takes the verdict's payload as the packet, trimming it if shorter, so `packet`
    /// must be all of it. Sent on its own, before any batch that would take the packet.
    pub fn accept_rewritten(&mut self, queue: u16, id: u32, packet: &[u8]) -> Result<(), OsError> {
        // A netlink attribute's length is 16 bits, header included (the kernel copies up no
        // more than that either).
        if packet.len() > usize::from(u16::MAX) - 4 {
            return Err(OsError::io(
                format!("give a rewritten packet to queue {queue}"),
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "packet longer than an attribute",
                ),
            ));
        }
        if let Some((_, held)) = self.held.iter_mut().find(|(q, _)| *q == queue) {
            held.done.insert(id);
        }
        self.message.clear();
        let flags = libc::NLM_F_REQUEST as u16;
        start_message(&mut self.message, NFQNL_MSG_VERDICT, flags, queue, 0);
        let mut hdr = [0u8; 8];
        hdr[..4].copy_from_slice(&NF_ACCEPT.to_be_bytes());
        hdr[4..].copy_from_slice(&id.to_be_bytes());
        put_attr(&mut self.message, NFQA_VERDICT_HDR, &hdr);
        put_attr(&mut self.message, NFQA_PAYLOAD, packet);
        set_length(&mut self.message, 0);
        self.stats.packets += 1;
        self.stats.messages += 1;
        self.stats.sends += 1;
        self.send()
            .map_err(|e| OsError::io(format!("give a rewritten packet to queue {queue}"), e))
    }

    /// What `verdicts` has sent so far.
    pub fn stats(&self) -> VerdictStats {
        self.stats
    }

    /// Sends `message` (one or more netlink messages, each with its length set) to the kernel.
    fn send(&mut self) -> io::Result<()> {
        netlink::send(self.fd.as_fd(), &self.message)
    }

    fn recv_raw(&mut self) -> io::Result<usize> {
        netlink::recv(self.fd.as_fd(), &mut self.buffer)
    }
}

impl AsFd for NfQueue {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Appends to `m` (at `at`, its length) the start of an nfnetlink queue message of `kind` for
/// `queue`; `set_length` fills in its length once its attributes are there.
fn start_message(m: &mut Vec<u8>, kind: u16, flags: u16, queue: u16, at: usize) {
    debug_assert_eq!(m.len(), at);
    m.extend_from_slice(&0u32.to_ne_bytes());
    m.extend_from_slice(&(NFNL_SUBSYS_QUEUE << 8 | kind).to_ne_bytes());
    m.extend_from_slice(&flags.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes()); // sequence
    m.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel's
    m.extend_from_slice(&[libc::AF_UNSPEC as u8, 0]); // family, NFNETLINK_V0
    m.extend_from_slice(&queue.to_be_bytes());
    debug_assert_eq!(m.len(), at + HEADER);
}

/// A packet message's attributes (after the nfgenmsg) → the packet, if it has a header and id.
fn parse_packet(queue: u16, mut attrs: &[u8]) -> Option<QueuedPacket<'_>> {
    let (mut id, mut hook, mut header, mut cap_len) = (None, 0, &[][..], None);
    let (mut uid, mut gid) = (None, None);
    while attrs.len() >= 4 {
        let len = usize::from(u16::from_ne_bytes([attrs[0], attrs[1]]));
        let kind = u16::from_ne_bytes([attrs[2], attrs[3]]) & 0x3fff;
        let value = attrs.get(4..len.max(4))?;
        let be32 = || {
            value
                .get(..4)
                .map(|v| u32::from_be_bytes(v.try_into().expect("4")))
        };
        match kind {
            NFQA_PACKET_HDR if value.len() >= 7 => {
                id = be32();
                hook = value[6];
            }
            NFQA_PAYLOAD => header = value,
            NFQA_CAP_LEN => cap_len = be32(),
            NFQA_UID => uid = be32(),
            NFQA_GID => gid = be32(),
            _ => {}
        }
        attrs = attrs.get(len.next_multiple_of(4).max(4)..).unwrap_or(&[]);
    }
    Some(QueuedPacket {
        queue,
        id: id?,
        hook,
        header,
        // NFQA_CAP_LEN is there only when the copy was cut short.
        len: cap_len.unwrap_or(header.len() as u32),
        owner: uid.zip(gid),
    })
}

fn set_int_option(
    fd: &OwnedFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> Result<(), OsError> {
    // SAFETY: `value` is a live c_int of the size given.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(OsError::last("set a netfilter queue socket option"));
    }
    Ok(())
}

/// Blocks until `fd` is readable (for the acknowledgement of a configuration message).
fn wait_readable(fd: BorrowedFd) -> io::Result<()> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `pfd` is one live pollfd.
    let rc = unsafe { libc::poll(&mut pfd, 1, 1000) };
    match rc {
        0 => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the kernel did not answer",
        )),
        r if r < 0 => Err(io::Error::last_os_error()),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(ids: &[u32]) -> Held {
        Held {
            ids: ids.iter().copied().collect(),
            done: HashSet::new(),
        }
    }

    fn plan(held: &mut Held, decided: &[(u32, Verdict)]) -> Vec<Message> {
        let mut out = Vec::new();
        held.plan(decided, &mut out);
        out
    }

    use Verdict::{Accept as A, Drop as D};

    #[test]
    fn packets_accepted_in_arrival_order_take_one_batch_message() {
        let mut h = held(&[1, 2, 3, 4, 5]);
        assert_eq!(
            plan(&mut h, &[(1, A), (2, A), (3, A)]),
            vec![Message::UpTo(3)]
        );
        assert_eq!(plan(&mut h, &[(4, A), (5, A)]), vec![Message::UpTo(5)]);
        assert!(h.ids.is_empty() && h.done.is_empty());
    }

    #[test]
    fn packets_leaving_out_of_order_get_single_verdicts_and_are_skipped_by_later_batches() {
        // Packet 3 (a short pipe) leaves before 2 (a long one): 1 is batched, 3 alone.
        let mut h = held(&[1, 2, 3, 4]);
        assert_eq!(
            plan(&mut h, &[(1, A), (3, A)]),
            vec![Message::UpTo(1), Message::One(3, A)]
        );
        // 2 and 4 then: one batch up to 4 (3 is gone from the kernel's list already).
        assert_eq!(plan(&mut h, &[(4, A), (2, A)]), vec![Message::UpTo(4)]);
        assert!(h.ids.is_empty() && h.done.is_empty());
    }

    #[test]
    fn a_drop_splits_batches_and_is_never_batched() {
        let mut h = held(&[1, 2, 3, 4, 5]);
        assert_eq!(
            plan(&mut h, &[(1, A), (2, D), (3, A), (5, D)]),
            vec![
                Message::UpTo(1),
                Message::One(2, D),
                Message::UpTo(3),
                Message::One(5, D)
            ]
        );
        assert_eq!(plan(&mut h, &[(4, A)]), vec![Message::UpTo(4)]);
        assert!(h.ids.is_empty() && h.done.is_empty());
    }

    #[test]
    fn a_packet_message_gives_its_id_hook_header_length_and_owner() {
        let mut attrs = Vec::new();
        put_attr(&mut attrs, NFQA_PACKET_HDR, &[0, 0, 0, 42, 0x08, 0x00, 3]);
        put_attr(&mut attrs, NFQA_UID, &1000u32.to_be_bytes());
        put_attr(&mut attrs, NFQA_GID, &100u32.to_be_bytes());
        put_attr(&mut attrs, NFQA_CAP_LEN, &1500u32.to_be_bytes());
        put_attr(&mut attrs, NFQA_PAYLOAD, &[0x45, 0, 5, 0xdc, 9]);
        let p = parse_packet(7, &attrs).expect("a packet");
        assert_eq!((p.queue, p.id, p.hook, p.len), (7, 42, 3, 1500));
        assert_eq!(p.header, &[0x45, 0, 5, 0xdc, 9]);
        assert_eq!(p.owner, Some((1000, 100)));
        // Without NFQA_CAP_LEN the copy is the whole packet; without an id there is no packet.
        let mut short = Vec::new();
        put_attr(&mut short, NFQA_PAYLOAD, &[1, 2, 3]);
        assert!(parse_packet(7, &short).is_none());
        put_attr(&mut short, NFQA_PACKET_HDR, &[0, 0, 0, 1, 0x08, 0x00, 0]);
        assert_eq!(parse_packet(7, &short).expect("a packet").len, 3);
    }
}
