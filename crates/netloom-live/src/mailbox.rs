//! Mailboxes between the threads of a live run. Each worker has one inbox that every other
//! worker and the experiment's control thread post into: one FIFO queue (std's lock-free list
//! channel), so a `Hold` posted before a hand-off is always read before the `Release` that
//! hand-off may cause elsewhere. A post wakes the worker only when it sleeps: waking costs a
//! syscall, and a spinning worker finds the message on its next turn anyway. A worker on
//! another machine is posted to through an `Outbound` instead (a UDP socket, `cluster`).

use crate::message::{Answer, Order};
use crate::moved::Transfer;
use netloom_engine::{Handoff, Refusal};
use netloom_topo::NodeId;
use std::io::{self, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;

/// What one thread tells a worker.
#[derive(Debug)]
pub(crate) enum Message {
    /// A packet whose exit this worker handles, with its intended exit time.
    Handoff(Handoff),
    /// The same, with its payload along (a wire packet, framed as the hosts' I/O frames it),
    /// when payloads are shipped: this worker holds it from now on.
    Shipped(Handoff, Box<[u8]>),
    /// A pipe elsewhere duplicated a segment whose payload this worker holds (engine token).
    Hold(u64),
    /// A copy of a segment whose payload this worker holds was dropped elsewhere.
    Release(u64),
    /// Router `node` refused the segment `token` names, whose payload this worker holds, on
    /// another worker (`Output::Refused`): this worker answers. Posted before that copy's
    /// `Release`.
    Refused {
        token: u64,
        node: NodeId,
        why: Refusal,
        ttl: u8,
    },
    /// An order of the experiment's (a change, a snapshot): every worker answers for its part.
    Order(Order, Sender<Answer>),
    /// What another worker hands this one at a move (`Order::Move`), posted after everything
    /// it posted under the last ownership: every worker posts one to every other, empty or not.
    Transfer(Box<Transfer>),
    /// What came from worker `from` on another machine where a transfer was due, and was not
    /// one: the move cannot complete, so this worker stops the run saying why, where it would
    /// otherwise wait for the move to time out.
    Unreadable { from: u16, why: String },
}

/// Whether the worker sleeps, and how to wake it.
#[derive(Debug)]
pub(crate) struct Door {
    sleeping: AtomicBool,
    waker: UnixStream,
}

/// How messages reach a worker in another process: only shipped hand-offs travel there (a
/// run over several machines ships payloads, so no other news is ever for another machine).
pub(crate) trait Outbound: Send + Sync {
    /// Sends `message` on its way; false when it cannot go.
    fn send(&self, message: Message) -> bool;
}

/// Where to post to one worker.
#[derive(Clone)]
pub(crate) enum Post {
    /// A worker thread of this process.
    Local {
        tx: Sender<Message>,
        door: Arc<Door>,
    },
    /// A worker in another process.
    Remote(Arc<dyn Outbound>),
}

impl Post {
    /// Queues `message` and wakes the worker if it sleeps. False when the worker is gone.
    pub fn send(&self, message: Message) -> bool {
        let (tx, door) = match self {
            Post::Local { tx, door } => (tx, door),
            Post::Remote(out) => return out.send(message),
        };
        if tx.send(message).is_err() {
            return false;
        }
        // Pairs with the fence in `Inbox::may_sleep`: either the worker sees the message
        // before it sleeps, or this sees it sleeping and wakes it.
        fence(Ordering::SeqCst);
        if door.sleeping.swap(false, Ordering::SeqCst) {
            // A full socket buffer already holds a wake-up; nothing else can fail here.
            let _ = (&door.waker).write(&[1]);
        }
        true
    }
}

/// A worker's end: what was posted to it, in order.
pub(crate) struct Inbox {
    rx: Receiver<Message>,
    door: Arc<Door>,
    /// The read end of the waker, for the worker's poller.
    woken: UnixStream,
    /// A message taken while checking before a sleep.
    early: Option<Message>,
}

impl Inbox {
    /// Empties the inbox once its worker has stopped, and returns how many packets were in it
    /// (hand-offs, and those of transfers), never taken: they count as inside the network when
    /// the run stopped. Orders waiting in it go unanswered.
    pub fn drain_packets(&mut self) -> u64 {
        let mut unread = 0;
        while let Some(message) = self.take() {
            match message {
                Message::Handoff(_) | Message::Shipped(..) => unread += 1,
                Message::Transfer(h) => unread += h.packets(),
                Message::Order(..)
                | Message::Hold(_)
                | Message::Release(_)
                | Message::Refused { .. }
                | Message::Unreadable { .. } => {}
            }
        }
        unread
    }

    /// The read end of the waker: the worker's poller watches a copy of it and drains it.
    pub fn waker(&self) -> io::Result<UnixStream> {
        self.woken.try_clone()
    }

    /// Says the worker is about to sleep; false if something is already waiting, in which case
    /// it must not.
    pub fn may_sleep(&mut self) -> bool {
        self.door.sleeping.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if self.early.is_none() {
            self.early = self.rx.try_recv().ok();
        }
        if self.early.is_some() {
            self.door.sleeping.store(false, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// The worker is awake again: posts no longer need to wake it.
    pub fn awake(&self) {
        self.door.sleeping.store(false, Ordering::Relaxed);
    }

    /// The next message, if any; `None` also once every poster is gone.
    pub fn take(&mut self) -> Option<Message> {
        if let Some(m) = self.early.take() {
            return Some(m);
        }
        self.rx.try_recv().ok()
    }
}

/// One inbox per worker and a post to each, in worker order.
pub(crate) fn mailboxes(workers: usize) -> io::Result<(Vec<Inbox>, Vec<Post>)> {
    let mut inboxes = Vec::with_capacity(workers);
    let mut posts = Vec::with_capacity(workers);
    for _ in 0..workers {
        let (tx, rx) = mpsc::channel();
        let (waker, woken) = UnixStream::pair()?;
        waker.set_nonblocking(true)?;
        woken.set_nonblocking(true)?;
        let door = Arc::new(Door {
            sleeping: AtomicBool::new(false),
            waker,
        });
        posts.push(Post::Local {
            tx,
            door: door.clone(),
        });
        inboxes.push(Inbox {
            rx,
            door,
            woken,
            early: None,
        });
    }
    Ok((inboxes, posts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn pending_wakes(inbox: &Inbox) -> usize {
        let mut buf = [0u8; 16];
        (&inbox.woken).read(&mut buf).unwrap_or(0)
    }

    #[test]
    fn messages_arrive_in_order_and_wake_only_a_sleeper() {
        let (mut inboxes, posts) = mailboxes(1).unwrap();
        let inbox = &mut inboxes[0];
        assert!(posts[0].send(Message::Hold(1)));
        assert_eq!(pending_wakes(inbox), 0, "an awake worker is not woken");
        // A message already queued forbids sleeping and is not lost by the check.
        assert!(!inbox.may_sleep());
        assert!(matches!(inbox.take(), Some(Message::Hold(1))));
        assert!(inbox.may_sleep());
        assert!(posts[0].send(Message::Release(2)));
        assert!(posts[0].send(Message::Release(3)));
        assert_eq!(
            pending_wakes(inbox),
            1,
            "one wake-up for a sleeper, however many posts"
        );
        inbox.awake();
        assert!(matches!(inbox.take(), Some(Message::Release(2))));
        assert!(matches!(inbox.take(), Some(Message::Release(3))));
        assert!(inbox.take().is_none());
    }

    #[test]
    fn a_post_from_another_thread_wakes_a_sleeping_worker() {
        let (mut inboxes, posts) = mailboxes(1).unwrap();
        let mut inbox = inboxes.pop().unwrap();
        let woken = inbox.waker().unwrap();
        woken.set_nonblocking(false).unwrap();
        assert!(inbox.may_sleep());
        let post = posts[0].clone();
        let poster = std::thread::spawn(move || post.send(Message::Hold(9)));
        let mut byte = [0u8; 1];
        (&woken).read_exact(&mut byte).unwrap();
        inbox.awake();
        assert!(poster.join().unwrap());
        assert!(matches!(inbox.take(), Some(Message::Hold(9))));
        drop(posts);
        assert!(inbox.take().is_none(), "nothing once the posters are gone");
    }
}
