//! The daemon's `LoopIo`: NFQUEUE, sock_diag, epoll, and iptables on a thread of its own.

use super::packet_loop::{Handle, LoopIo, Queued};
use super::DaemonError;
use crate::classifier::{Direction, Packet, Rule};
use crate::kernel::{self, KernelError, QUEUES};
use crate::spec::Cgroup;
use netloom_os::{NfQueue, Poller, RawSender, SocketOwner, SocketTable, Verdict};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::mpsc;

/// Packets read from the queue before they are classified together (`Shaper::arrive_batch`);
/// fewer when the queue holds fewer. They share one arrival time, that of the wake-up.
pub(super) const BATCH: usize = 64;
/// The netfilter hook numbers NFQUEUE reports.
pub(super) const HOOK_INPUT: u8 = 1;
pub(super) const HOOK_OUTPUT: u8 = 3;

/// The daemon's `LoopIo`: NFQUEUE, sock_diag, iptables and epoll.
pub(super) struct KernelIo {
    /// Where installations go, how they ended, a byte on `installed_woken` for each, and
    /// whether one is under way.
    pub(super) installer: Installer,
    pub(super) queue: NfQueue,
    pub(super) sockets: SocketTable,
    pub(super) poller: Poller,
    /// A byte arrives here for each request the reader thread has posted.
    pub(super) woken: UnixStream,
    pub(super) ready: Vec<u32>,
    /// The verdicts of one turn, as each queue takes them.
    pub(super) verdicts: Vec<(u32, Verdict)>,
    pub(super) whole_verdicts: Vec<(u32, Verdict)>,
    /// The packets of the whole-copy queue held now, by id, each with whether it was marked.
    pub(super) copies: HashMap<u32, (Vec<u8>, bool)>,
    /// Sends duplicates, marked so netloom's rules let them go.
    pub(super) raw: RawSender,
    /// The duplicates pipes made, by the id of their original in the whole-copy queue, until
    /// their exit.
    pub(super) duplicates: HashMap<u32, Vec<u8>>,
    /// Duplicates that could not be sent: their original came through the header-only queue
    /// (its link began duplicating while it was held), was longer than the queue copies, or
    /// the raw socket refused them.
    pub(super) unsent: u64,
    /// Users' primary groups, read once each while the process runs.
    pub(super) groups: HashMap<u32, Option<u32>>,
}

impl LoopIo for KernelIo {
    fn wait(&mut self, timeout: std::time::Duration) -> Result<(), DaemonError> {
        self.poller.wait(Some(timeout), &mut self.ready)?;
        // Drain the wakers' bytes; each stands for a request in the channel or an installation
        // that ended, which the loop looks for every turn.
        let mut drained = [0u8; 64];
        if self.ready.contains(&TOKEN_REQUESTS) {
            while matches!((&self.woken).read(&mut drained), Ok(n) if n > 0) {}
        }
        if self.ready.contains(&TOKEN_INSTALLED) {
            while matches!((&self.installer.woken).read(&mut drained), Ok(n) if n > 0) {}
        }
        Ok(())
    }

    fn recv(&mut self, out: &mut Vec<Queued>) -> Result<(), DaemonError> {
        // One packet per read: drain what the queue holds, so it is classified as one batch.
        while out.len() < BATCH {
            let copies = &mut self.copies;
            let read = self.queue.recv(|p| {
                let direction = match p.hook {
                    HOOK_INPUT => Some(Direction::In),
                    HOOK_OUTPUT => Some(Direction::Out),
                    _ => None,
                };
                let whole = p.queue == QUEUES.whole;
                // A packet longer than the copy is neither rewritten (the verdict's payload
                // would trim it) nor duplicated.
                if whole && p.header.len() == p.len as usize {
                    copies.insert(p.id, (p.header.to_vec(), false));
                }
                out.push(Queued {
                    handle: Handle { whole, id: p.id },
                    len: p.len,
                    packet: direction.and_then(|d| Packet::parse(d, p.header, p.owner)),
                });
            })?;
            if read == 0 {
                break;
            }
        }
        Ok(())
    }

    fn socket(&mut self, proto: u8, local: SocketAddr, remote: SocketAddr) -> Option<SocketOwner> {
        self.sockets
            .lookup(proto, local, remote)
            .unwrap_or_else(|e| {
                eprintln!("netloom shape: {e}");
                None
            })
    }

    fn primary_group(&mut self, uid: u32) -> Option<u32> {
        *self
            .groups
            .entry(uid)
            .or_insert_with(|| netloom_os::primary_group(uid))
    }

    fn cgroups_above(&mut self, id: u64, named: &[&Cgroup]) -> Vec<u64> {
        // Read afresh: a cgroup made below a named one after the link was set is found too.
        named
            .iter()
            .filter(|c| c.id != id && c.tree().contains(&id))
            .map(|c| c.id)
            .collect()
    }

    fn mark(&mut self, marked: &[Handle]) {
        for handle in marked.iter().filter(|h| h.whole) {
            if let Some((packet, marked)) = self.copies.get_mut(&handle.id) {
                netloom_packet::set_ce(packet);
                *marked = true;
            }
        }
    }

    fn duplicate(&mut self, duplicated: &[Handle]) {
        for handle in duplicated {
            match self.copies.get(&handle.id).filter(|_| handle.whole) {
                Some((packet, _)) => {
                    self.duplicates.insert(handle.id, packet.clone());
                }
                None => self.unsent += 1,
            }
        }
    }

    fn send_copies(&mut self, copies: &[(Handle, bool)]) {
        for &(handle, send) in copies {
            let Some(packet) = self.duplicates.remove(&handle.id).filter(|_| handle.whole) else {
                continue; // counted when it was duplicated
            };
            // Counted, not logged: a burst would flood the log; the count is logged at the end.
            if send && self.raw.send(&packet).is_err() {
                self.unsent += 1;
            }
        }
    }

    fn verdicts(&mut self, decided: &[(Handle, bool)]) {
        self.verdicts.clear();
        self.whole_verdicts.clear();
        for &(handle, accept) in decided {
            let verdict = match accept {
                true => Verdict::Accept,
                false => Verdict::Drop,
            };
            if !handle.whole {
                self.verdicts.push((handle.id, verdict));
                continue;
            }
            // A marked packet goes back rewritten, on its own; the rest as the other queue's.
            match self.copies.remove(&handle.id) {
                Some((packet, true)) if accept => {
                    if let Err(e) = self
                        .queue
                        .accept_rewritten(QUEUES.whole, handle.id, &packet)
                    {
                        eprintln!("netloom shape: {e}");
                        self.whole_verdicts.push((handle.id, verdict));
                    }
                }
                _ => self.whole_verdicts.push((handle.id, verdict)),
            }
        }
        // A verdict that could not be sent is logged, not fatal: ending here would leave every
        // other held packet to the bypass.
        for (queue, verdicts) in [
            (QUEUES.header, &self.verdicts),
            (QUEUES.whole, &self.whole_verdicts),
        ] {
            if let Err(e) = self.queue.verdicts(queue, verdicts) {
                eprintln!("netloom shape: {e}");
            }
        }
    }

    fn install(&mut self, rules: Option<Vec<Rule>>) {
        self.installer.busy = self.installer.jobs.send(rules).is_ok();
    }

    fn installed(&mut self) -> Option<Result<(), KernelError>> {
        let result = self.installer.results.try_recv().ok()?;
        self.installer.busy = false;
        Some(result)
    }

    fn remove(&mut self) {
        // After the installation under way, which would otherwise put rules back.
        if std::mem::take(&mut self.installer.busy) {
            let _ = self.installer.results.recv();
        }
        kernel::remove();
    }
}

/// The poller's token for the requests' waker.
pub(super) const TOKEN_REQUESTS: u32 = 1;
/// The poller's token for the installer's waker.
pub(super) const TOKEN_INSTALLED: u32 = 2;

/// The thread that writes the kernel's rules, and the loop's ends of it.
pub(super) struct Installer {
    jobs: mpsc::Sender<Option<Vec<Rule>>>,
    results: mpsc::Receiver<Result<(), KernelError>>,
    /// A byte arrives here as each installation ends.
    pub(super) woken: UnixStream,
    busy: bool,
}

impl Installer {
    /// Starts the thread, in the namespace of the calling thread (it inherits it).
    pub(super) fn start() -> Result<Installer, DaemonError> {
        let io = |e: std::io::Error| DaemonError::Io(format!("start the installing thread: {e}"));
        let (waker, woken) = UnixStream::pair().map_err(io)?;
        woken.set_nonblocking(true).map_err(io)?;
        let (jobs, todo) = mpsc::channel::<Option<Vec<Rule>>>();
        let (done, results) = mpsc::channel();
        std::thread::Builder::new()
            .name("shape-install".to_string())
            .spawn(move || {
                for rules in todo {
                    let result = match rules {
                        Some(rules) => kernel::install(&rules, QUEUES),
                        None => {
                            kernel::remove();
                            Ok(())
                        }
                    };
                    if done.send(result).is_err() {
                        return;
                    }
                    let _ = (&waker).write_all(&[1]);
                }
            })
            .map_err(io)?;
        Ok(Installer {
            jobs,
            results,
            woken,
            busy: false,
        })
    }

    /// What the poller watches for the end of an installation.
    pub(super) fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.woken.as_fd()
    }
}
