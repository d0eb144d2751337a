//! `NfQueue`: a netfilter queue (NFQUEUE) socket, for `netloom shape` to hold the machine's own
//! packets in the kernel and decide, by verdict, when each goes on. Only headers are copied up.
//!
//! The messages are nfnetlink's (linux/netfilter/nfnetlink_queue.h): a netlink header, a
//! `nfgenmsg` naming the queue, then attributes. Written here rather than taken from a crate
//! because the shaping loop needs the descriptor (to wait on it with `Poller` beside its timers)
//! and batched verdicts, which the crates at hand do not expose.

use crate::netlink;
use crate::OsError;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

const NFNL_SUBSYS_QUEUE: u16 = 3;
const NFQNL_MSG_PACKET: u16 = 0;
const NFQNL_MSG_VERDICT: u16 = 1;
const NFQNL_MSG_CONFIG: u16 = 2;

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

const NF_DROP: u32 = 0;
const NF_ACCEPT: u32 = 1;

/// Netlink header (16 bytes) plus nfgenmsg (4 bytes).
const HEADER: usize = 20;
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
        })
    }

    /// Binds `queue`: copy the first `copy` bytes of each packet, hold at most `max_len`
    /// packets (the kernel drops beyond, or lets them pass with the rule's bypass when nobody
    /// is bound), and report each packet's socket owner. Fails if another process holds the
    /// queue.
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
            put_attr(m, NFQA_CFG_MASK, &NFQA_CFG_F_UID_GID.to_be_bytes());
            put_attr(m, NFQA_CFG_FLAGS, &NFQA_CFG_F_UID_GID.to_be_bytes());
        })
        .map_err(|e| OsError::io(what(), e))
    }

    /// Sends one configuration message for `queue` and waits for the kernel's acknowledgement.
    fn config(&mut self, queue: u16, attrs: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        let flags = (libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16;
        start_message(&mut self.message, NFQNL_MSG_CONFIG, flags, queue);
        attrs(&mut self.message);
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
            while let Some((kind, body, next)) = netlink_message(&self.buffer[..n], at) {
                if kind == libc::NLMSG_ERROR as u16 && body.len() >= 4 {
                    let errno = -i32::from_ne_bytes(body[..4].try_into().expect("4 bytes"));
                    return match errno {
                        0 => Ok(()),
                        e => Err(io::Error::from_raw_os_error(e)),
                    };
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
        while let Some((kind, body, next)) = netlink_message(&self.buffer[..n], at) {
            at = next;
            if kind != (NFNL_SUBSYS_QUEUE << 8 | NFQNL_MSG_PACKET) || body.len() < 4 {
                continue;
            }
            let queue = u16::from_be_bytes([body[2], body[3]]);
            if let Some(packet) = parse_packet(queue, &body[4..]) {
                count += 1;
                each(packet);
            }
        }
        Ok(count)
    }

    /// Gives the verdict on packet `id` of `queue`.
    pub fn verdict(&mut self, queue: u16, id: u32, verdict: Verdict) -> Result<(), OsError> {
        start_message(
            &mut self.message,
            NFQNL_MSG_VERDICT,
            libc::NLM_F_REQUEST as u16,
            queue,
        );
        let mut hdr = [0u8; 8];
        hdr[..4].copy_from_slice(&verdict.code().to_be_bytes());
        hdr[4..].copy_from_slice(&id.to_be_bytes());
        put_attr(&mut self.message, NFQA_VERDICT_HDR, &hdr);
        self.send()
            .map_err(|e| OsError::io(format!("give a verdict on queue {queue}"), e))
    }

    fn send(&mut self) -> io::Result<()> {
        let len = self.message.len() as u32;
        self.message[..4].copy_from_slice(&len.to_ne_bytes());
        // SAFETY: an all-zero sockaddr_nl addresses the kernel.
        let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: the message and the address are live for the call, with the lengths given.
        let rc = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                self.message.as_ptr().cast(),
                self.message.len(),
                0,
                (&kernel as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
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

/// Starts `m` as an nfnetlink queue message of `kind` for `queue`; `send` fills in the length.
fn start_message(m: &mut Vec<u8>, kind: u16, flags: u16, queue: u16) {
    m.clear();
    m.extend_from_slice(&0u32.to_ne_bytes());
    m.extend_from_slice(&(NFNL_SUBSYS_QUEUE << 8 | kind).to_ne_bytes());
    m.extend_from_slice(&flags.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes()); // sequence
    m.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel's
    m.extend_from_slice(&[libc::AF_UNSPEC as u8, 0]); // family, NFNETLINK_V0
    m.extend_from_slice(&queue.to_be_bytes());
    debug_assert_eq!(m.len(), HEADER);
}

/// Appends a netlink attribute, padded to 4 bytes.
fn put_attr(m: &mut Vec<u8>, kind: u16, value: &[u8]) {
    m.extend_from_slice(&(4 + value.len() as u16).to_ne_bytes());
    m.extend_from_slice(&kind.to_ne_bytes());
    m.extend_from_slice(value);
    m.resize(m.len().next_multiple_of(4), 0);
}

/// The netlink message at `at` in `buf`: its type, its body after the netlink header, and where
/// the next one starts; `None` at the end or on a malformed length.
pub(crate) fn netlink_message(buf: &[u8], at: usize) -> Option<(u16, &[u8], usize)> {
    let head = buf.get(at..at + 16)?;
    let len = u32::from_ne_bytes(head[..4].try_into().ok()?) as usize;
    let kind = u16::from_ne_bytes(head[4..6].try_into().ok()?);
    let body = buf.get(at + 16..at + len.max(16))?;
    Some((kind, body, at + len.next_multiple_of(4).max(16)))
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
