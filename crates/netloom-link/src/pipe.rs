//! The pipe state machine: queue occupancy, AQM, serialization, delay and impairments.

use crate::backlog::Backlog;
use crate::codel::{Codel, Verdict};
use crate::config::{
    Aqm, FqCodelParams, LossModel, PipeConfig, PipeData, QueueLimit, DEFAULT_PACKET_BYTES,
};
use crate::fq::{FqQueues, Served};
use crate::loss::LossState;
use crate::red::{self, RedAverage};
use crate::rng::{chance, PipeRng};
use crate::trace::TraceCursor;
use crate::wireless::Radio;
use netloom_time::{Duration, Instant, Rate};
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::num::NonZeroU32;

mod packet;
pub use packet::{
    Admission, Departure, Dequeued, DropCause, Ecn, Hold, PacketMeta, PipeCounters, Ticket,
};

/// One pipe. See the crate documentation for the protocol.
///
/// Stages of `offer`, in order: link state → loss → queue occupancy → AQM (RED) → drop-tail →
/// CoDel at the instant the packet will reach the head → serialization at `rate` (or the trace's next opportunities; or wireless attempts, which may
/// fail) → delay ± jitter (+ `ooo_delay` for out-of-order packets) → duplicate.
///
/// `take_state` and `resume` move what changes to the pipe's twin in another process or on
/// another machine (dynamic repartitioning), through bytes (`PipeState`).
///
/// Laid out in declaration order, on cache lines of its own, so that what every packet touches
/// sits in three lines (the epoch and the counters that always change; the serializer and the
/// backlog; `Essentials`) rather than in the eight or nine the 568-byte pipe spread it over: on
/// a large topology each of those lines is a cache miss per packet-hop (docs/performance.md).
#[repr(C, align(64))]
pub struct Pipe {
    /// Bumped each time the pipe goes down; tickets from an older epoch are dropped at release.
    epoch: NonZeroU32,
    counters: PipeCounters,
    /// When the serializer finishes the last accepted packet.
    busy_until: Instant,
    /// Latest exit of an in-order packet; later in-order packets never leave before it unless
    /// `reorder` is set.
    last_exit: Instant,
    backlog: Backlog,
    essentials: Essentials,
    config: PipeConfig,
    data: PipeData,
    /// The wireless channel, present when `config.wireless` is.
    radio: Option<Radio>,
    trace: TraceCursor,
    rng: PipeRng,
    red: RedAverage,
    codel: Codel,
    /// FQ-CoDel's state, from the first configuration with `aqm = "fq_codel"` on; boxed so that
    /// FIFO pipes, the common case, stay small.
    fq: Option<Box<Held>>,
    loss: LossState,
}

/// What changes in a pipe as packets cross it, as it travels to the pipe's twin in another
/// worker, process or machine when the pipe changes owner (`Pipe::take_state`, `resume`): the
/// twin continues exactly where this pipe stopped, its random generator included. Its
/// configuration's data (a MAC profile, a delivery trace) stays behind: the twin loaded the same
/// from the same topology. FQ-CoDel's flow queues refer to the caller's packets, so a pipe
/// holding packets in them cannot travel.
#[derive(Debug, Serialize, Deserialize)]
pub struct PipeState {
    epoch: NonZeroU32,
    counters: PipeCounters,
    busy_until: Instant,
    last_exit: Instant,
    backlog: Backlog,
    config: PipeConfig,
    trace: TraceCursor,
    rng: PipeRng,
    red: RedAverage,
    codel: Codel,
    loss: LossState,
}

/// What every packet reads of the configuration, copied from it into one cache line (a
/// `PipeConfig` spreads them over three), with what the configuration leaves out of the way.
#[derive(Clone, Copy)]
struct Essentials {
    rate: Rate,
    delay: Duration,
    queue: QueueLimit,
    mtu: u32,
    up: bool,
    reorder: bool,
    /// FQ-CoDel: the pipe holds its packets (`is_deferred`).
    deferred: bool,
    /// No loss model: nothing to draw as a packet enters.
    lossless: bool,
    /// No AQM before or after the drop-tail check.
    droptail: bool,
    /// No jitter, duplication, out-of-order packets, trace or radio: a packet's exit is its
    /// serialization's end plus `delay`.
    plain: bool,
}

impl Essentials {
    fn of(config: &PipeConfig, data: &PipeData, radio: &Option<Radio>) -> Essentials {
        Essentials {
            rate: config.rate,
            delay: config.delay,
            queue: config.queue,
            mtu: config.mtu,
            up: config.up,
            reorder: config.reorder,
            deferred: matches!(config.aqm, Aqm::FqCodel(_)),
            lossless: matches!(config.loss, LossModel::None),
            droptail: matches!(config.aqm, Aqm::DropTail),
            plain: config.jitter == Duration::ZERO
                && config.duplicate <= 0.0
                && config.ooo_rate <= 0.0
                && data.trace.is_none()
                && radio.is_none(),
        }
    }
}

/// Who decides whether a packet fits the queue (see `Pipe::offer_following`).
#[derive(Clone, Copy)]
enum Queueing {
    /// The queue limit and the AQM decide for this packet.
    Decide,
    /// They decided for the super-packet this segment belongs to, and took it.
    Decided,
    /// They refused the super-packet.
    Refused,
}

impl Pipe {
    /// A pipe with `config` whose random decisions all come from one generator seeded by `seed`.
    pub fn new(config: PipeConfig, seed: u64) -> Pipe {
        Pipe::with_data(config, seed, PipeData::default())
    }

    /// A pipe that also uses `data`: a measured MAC profile, a delivery trace.
    pub fn with_data(config: PipeConfig, seed: u64, data: PipeData) -> Pipe {
        let radio = radio_for(&config, &data);
        Pipe {
            essentials: Essentials::of(&config, &data, &radio),
            radio,
            trace: TraceCursor::default(),
            data,
            config,
            rng: PipeRng::seed_from_u64(seed),
            backlog: Backlog::default(),
            busy_until: Instant::ZERO,
            last_exit: Instant::ZERO,
            red: RedAverage::default(),
            codel: Codel::default(),
            fq: fq_state(&config),
            loss: LossState::default(),
            epoch: NonZeroU32::MIN,
            counters: PipeCounters::default(),
        }
    }

    /// Takes what changes in the pipe (`PipeState`) for its twin elsewhere to `resume`, and
    /// leaves this pipe as new: the same configuration and data, empty, counters at zero, its
    /// random generator at seed 0 (a pipe that changed owner is a replica until it comes back).
    ///
    /// Panics if the pipe holds packets in flow queues (FQ-CoDel): they refer to the caller's
    /// packets, which stay behind.
    pub fn take_state(&mut self) -> PipeState {
        assert!(
            self.fq
                .as_ref()
                .is_none_or(|fq| fq.queues.len() == (0, 0) && fq.gone.is_empty()),
            "a pipe holding packets in flow queues cannot move"
        );
        let blank = Pipe::with_data(self.config, 0, self.data.clone());
        let pipe = std::mem::replace(self, blank);
        PipeState {
            epoch: pipe.epoch,
            counters: pipe.counters,
            busy_until: pipe.busy_until,
            last_exit: pipe.last_exit,
            backlog: pipe.backlog,
            config: pipe.config,
            trace: pipe.trace,
            rng: pipe.rng,
            red: pipe.red,
            codel: pipe.codel,
            loss: pipe.loss,
        }
    }

    /// Continues from `state`, which its twin elsewhere took (`take_state`): every later packet
    /// meets exactly what it would have met there. Keeps this pipe's data, loaded from the
    /// same topology as the twin's.
    pub fn resume(&mut self, state: PipeState) {
        let data = std::mem::take(&mut self.data);
        *self = Pipe {
            epoch: state.epoch,
            counters: state.counters,
            busy_until: state.busy_until,
            last_exit: state.last_exit,
            backlog: state.backlog,
            rng: state.rng,
            red: state.red,
            codel: state.codel,
            loss: state.loss,
            trace: state.trace,
            ..Pipe::with_data(state.config, 0, data)
        };
    }

    /// The configuration in force: the one given at creation or the last `set_config`.
    pub fn config(&self) -> &PipeConfig {
        &self.config
    }

    /// Is the link administratively up?
    pub fn is_up(&self) -> bool {
        self.essentials.up
    }

    /// The largest IP packet the link carries (`PipeConfig::mtu`).
    pub fn mtu(&self) -> u32 {
        self.essentials.mtu
    }

    /// A word of each cache line that `offer` and `release` read, for a caller that loads a
    /// pipe ahead of its packets (the engine does, a timer slot at a time): its value means
    /// nothing.
    #[inline]
    pub fn touch(&self) -> u64 {
        self.counters.packets_in ^ self.busy_until.0 ^ u64::from(self.essentials.mtu)
    }

    /// As `touch`, for a deferred pipe about to `hold` a packet of flow `meta.flow` (its flow
    /// queue's lines), or to `dequeue` when `flow` is `None` (the queue it serves next): on a
    /// large topology FQ-CoDel's queues miss the cache as the pipes do. Nothing on other pipes.
    pub fn touch_held(&self, flow: Option<u32>) -> u64 {
        if !self.essentials.deferred {
            return 0;
        }
        self.fq.as_ref().map_or(0, |fq| match flow {
            Some(flow) => fq.queues.touch_push(flow),
            None => fq.queues.touch_serve(),
        })
    }

    /// Offer a packet of `bytes` arriving at `now`. `now` never goes backwards between calls.
    pub fn offer(&mut self, now: Instant, bytes: u32, meta: PacketMeta) -> Admission {
        self.admit(now, bytes, meta, Queueing::Decide)
    }

    /// Offer the next wire segment of a super-packet whose first segment this pipe was just
    /// offered: a sending host's queue takes or refuses a TSO packet whole, as one entry, and
    /// its NIC then sends the segments back to back. So the queue limit and the AQM decided
    /// with the first segment (`lead_queued`: false if they refused it), and each later segment
    /// only meets the link itself: its state, random loss and serialization.
    /// A segment of a super-packet the AQM marked shares the mark: the caller marks it too.
    pub fn offer_following(&mut self, now: Instant, bytes: u32, lead_queued: bool) -> Admission {
        let queueing = match lead_queued {
            true => Queueing::Decided,
            false => Queueing::Refused,
        };
        self.admit(now, bytes, PacketMeta::default(), queueing)
    }

    fn admit(
        &mut self,
        now: Instant,
        bytes: u32,
        meta: PacketMeta,
        queueing: Queueing,
    ) -> Admission {
        self.counters.packets_in += 1;
        self.counters.bytes_in += u64::from(bytes);
        if !self.essentials.up {
            return self.reject(DropCause::LinkDown);
        }
        if let Queueing::Refused = queueing {
            return self.reject(DropCause::Queue);
        }
        if !self.essentials.lossless && self.loss.lose(&self.config.loss, &mut self.rng) {
            return self.reject(DropCause::Loss);
        }
        self.backlog.drain(now);
        if let Queueing::Decided = queueing {
            return self.accept(now, bytes, false);
        }
        // A drop-tail pipe leaves the rest of its configuration unread.
        let aqm = match self.essentials.droptail {
            true => Aqm::DropTail,
            false => self.config.aqm,
        };
        let markable = !self.essentials.droptail && self.config.ecn && meta.ecn.is_capable();
        let mut marked = false;
        if let Aqm::Red(params) = aqm {
            // An empty queue has been empty since the serializer went idle.
            let idle = self.backlog.is_empty().then(|| {
                let full_packet = self.config.rate.tx_time(DEFAULT_PACKET_BYTES);
                (self.busy_until, full_packet)
            });
            let q = self.backlog.level(self.essentials.queue);
            let avg = self.red.update(params.weight, q, now, idle);
            if chance(&mut self.rng, red::drop_probability(&params, avg)) {
                if !markable {
                    return self.reject(DropCause::Red);
                }
                marked = true;
            }
        }
        if !self.backlog.fits(self.essentials.queue, bytes) {
            return self.reject(DropCause::Queue);
        }
        if let Aqm::Codel(params) = aqm {
            // In a FIFO the packet reaches the head when the serializer is done with the ones
            // ahead of it, so CoDel's dequeue decision can be taken now (docs/link.md).
            if now > self.busy_until {
                self.codel.idle();
            }
            let head = now.max(self.busy_until);
            let short_queue = self.backlog.bytes() <= DEFAULT_PACKET_BYTES;
            let sojourn = head.saturating_since(now);
            match self
                .codel
                .dequeue(&params, head, sojourn, short_queue, markable)
            {
                Verdict::Pass => {}
                Verdict::Mark => marked = true,
                Verdict::Drop => {
                    // Dropped at the head, it held its place in the queue until then but takes
                    // no serialization time.
                    self.busy_until = head;
                    self.backlog.push(head, bytes);
                    return self.reject(DropCause::Codel);
                }
            }
        }
        self.accept(now, bytes, marked)
    }

    /// Schedules a packet past the queue's checks, and its duplicate if the pipe makes one.
    /// `marked`: the AQM marked it CE.
    // Inlined: it runs once per packet-hop, and the calls of the per-hop path (saving and
    // restoring registers, results through memory) were ~110 of its ~1,000 instructions.
    #[inline(always)]
    fn accept(&mut self, now: Instant, bytes: u32, marked: bool) -> Admission {
        let Some(first) = self.schedule(now, bytes) else {
            return self.reject(DropCause::TxFail);
        };
        // Draw before looking at the queue, so the duplication pattern does not depend on it.
        // The copy is made inside the pipe, past the AQM, so only the queue limit applies to it.
        let duplicate = if !self.essentials.plain
            && chance(&mut self.rng, self.config.duplicate)
            && self.backlog.fits(self.essentials.queue, bytes)
        {
            self.counters.duplicates += 1;
            let copy = self.schedule(now, bytes);
            self.counters.drops_tx_fail += u64::from(copy.is_none());
            copy
        } else {
            None
        };
        self.counters.marks += u64::from(marked);
        Admission::Scheduled {
            first,
            duplicate,
            marked,
        }
    }

    /// The packet scheduled with `ticket` leaves at `now` (its exit time). Returns false, and
    /// counts a link-down drop, if the pipe went down after the packet was scheduled.
    pub fn release(&mut self, _now: Instant, ticket: Ticket, bytes: u32) -> bool {
        if ticket.epoch != self.epoch {
            self.counters.drops_down += 1;
            return false;
        }
        self.counters.packets_out += 1;
        self.counters.bytes_out += u64::from(bytes);
        true
    }

    /// Change parameters at `now` without flushing: packets already scheduled keep their exit
    /// times; later packets see the new configuration. Going down invalidates tickets in flight.
    pub fn set_config(&mut self, now: Instant, config: PipeConfig) {
        let going_down = self.config.up && !config.up;
        // The PER table and the profile depend only on these; rebuilding costs a table.
        if (config.wireless, config.rate) != (self.config.wireless, self.config.rate) {
            self.radio = radio_for(&config, &self.data);
        }
        if let Aqm::FqCodel(params) = config.aqm {
            self.fq.get_or_insert_with(|| Held::new(params)).params = params;
        }
        self.config = config;
        self.essentials = Essentials::of(&config, &self.data, &self.radio);
        if going_down {
            if let Some(fq) = &mut self.fq {
                let gone = &mut fq.gone;
                fq.queues.clear(|handle| gone.push(handle));
                self.counters.drops_down += gone.len() as u64;
            }
            self.epoch = self.epoch.checked_add(1).unwrap_or(NonZeroU32::MIN);
            // Everything queued or in flight is lost, so a later up starts with an idle link.
            self.backlog.clear();
            self.busy_until = now;
            self.last_exit = Instant::ZERO;
            self.red = RedAverage::default();
            self.codel = Codel::default();
            self.trace = TraceCursor::default();
        }
    }

    /// Packets and bytes in the queue (waiting or being serialized) at `now`.
    pub fn queue_len(&mut self, now: Instant) -> (u64, u64) {
        self.backlog.drain(now);
        let (packets, bytes) = self.fq.as_ref().map_or((0, 0), |fq| fq.queues.len());
        (
            self.backlog.packets() + packets,
            self.backlog.bytes() + bytes,
        )
    }

    /// How many of FQ-CoDel's flow queues this pipe has made: one per `fq_flows` queue a packet
    /// has used (they are made on first use, not all up front).
    pub fn flow_queues(&self) -> usize {
        self.fq.as_ref().map_or(0, |fq| fq.queues.made())
    }

    /// Does this pipe hold its packets (`hold`, `poll_at`, `dequeue`) instead of fixing their
    /// exit on arrival (`offer`)? True under FQ-CoDel, whose service order depends on later
    /// arrivals. Offer a packet to such a pipe with `hold`.
    #[inline]
    pub fn is_deferred(&self) -> bool {
        self.essentials.deferred
    }

    /// Gives a deferred pipe a packet arriving at `now`, known to the caller by `handle`, to
    /// hold until `dequeue` says what became of it. The caller keeps the packet meanwhile.
    /// When the queues go over the limit, packets are dropped from the head of the longest flow
    /// queue (perhaps this very packet), in a batch as Linux does (up to half its bytes, at most
    /// 64 packets); their handles are appended to `evicted` and counted in `drops_queue`.
    pub fn hold(
        &mut self,
        now: Instant,
        bytes: u32,
        meta: PacketMeta,
        handle: u32,
        evicted: &mut Vec<u32>,
    ) -> Hold {
        self.counters.packets_in += 1;
        self.counters.bytes_in += u64::from(bytes);
        if !self.essentials.up {
            self.counters.drops_down += 1;
            return Hold::Dropped(DropCause::LinkDown);
        }
        if self.loss.lose(&self.config.loss, &mut self.rng) {
            self.counters.drops_loss += 1;
            return Hold::Dropped(DropCause::Loss);
        }
        let params = fq_params(&self.config);
        let fq = self.fq.get_or_insert_with(|| Held::new(params));
        fq.queues
            .push(&fq.params, meta.flow, handle, bytes, now, meta.ecn);
        // The limit counts the packet being sent too, as a FIFO pipe's does.
        let (mut packets, mut total) = self.queue_len(now);
        let over = match self.config.queue {
            QueueLimit::Packets(n) => packets > u64::from(n),
            QueueLimit::Bytes(b) => total > b,
        };
        if let (true, Some(fq)) = (over, &mut self.fq) {
            let before = evicted.len();
            fq.queues.drop_from_fattest(|victim| evicted.push(victim));
            self.counters.drops_queue += (evicted.len() - before) as u64;
            (packets, total) = self.queue_len(now);
        }
        let c = &mut self.counters;
        c.queue_hwm_packets = c.queue_hwm_packets.max(packets);
        c.queue_hwm_bytes = c.queue_hwm_bytes.max(total);
        Hold::Held
    }

    /// Does this deferred pipe hold no packet (none waiting, none dropped and unreported) with
    /// its serializer free at `now`? A packet `hold` then takes is one `dequeue` at `now` would
    /// send at once, as Linux's qdisc dequeues at enqueue when the link can send.
    #[inline]
    pub fn is_idle(&self, now: Instant) -> bool {
        now >= self.busy_until
            && self
                .fq
                .as_ref()
                .is_none_or(|fq| fq.queues.len().0 == 0 && fq.gone.is_empty())
    }

    /// When the pipe next needs `dequeue`: when its serializer is free with packets held (which
    /// may be before the last `now`: call it then at once), or at once after the link went down
    /// with packets held; `None` when it holds nothing.
    pub fn poll_at(&self) -> Option<Instant> {
        let fq = self.fq.as_ref()?;
        if !fq.gone.is_empty() {
            return Some(Instant::ZERO);
        }
        (fq.queues.len().0 > 0).then_some(self.busy_until)
    }

    /// At `now`, a time `poll_at` gave or later: reports the held packets dropped by the link
    /// going down, then, if the serializer is free, what the flow queues' scheduler does: CoDel
    /// drops at the heads, and the next packet's departure.
    pub fn dequeue(&mut self, now: Instant, out: &mut Vec<Dequeued>) {
        // Out of `self` meanwhile, so the serializer can be used beside it.
        let Some(mut fq) = self.fq.take() else {
            return;
        };
        out.extend(fq.gone.drain(..).map(|handle| Dequeued::Dropped {
            handle,
            cause: DropCause::LinkDown,
        }));
        if now >= self.busy_until {
            self.serve(&mut fq, now, out);
        }
        self.fq = Some(fq);
    }

    /// The flow queues' scheduler at `now`, the serializer being free: CoDel's drops at the
    /// heads, then the departure of the next packet, if any.
    fn serve(&mut self, fq: &mut Held, now: Instant, out: &mut Vec<Dequeued>) {
        loop {
            match fq.queues.serve(&fq.params, now, self.config.ecn) {
                Served::Empty => return,
                Served::Dropped(handle) => {
                    self.counters.drops_codel += 1;
                    out.push(Dequeued::Dropped {
                        handle,
                        cause: DropCause::Codel,
                    });
                }
                Served::Send {
                    handle,
                    bytes,
                    marked,
                } => {
                    out.push(match self.schedule(now, bytes) {
                        Some(departure) => {
                            self.counters.marks += u64::from(marked);
                            Dequeued::Departed {
                                handle,
                                departure,
                                marked,
                            }
                        }
                        None => {
                            self.counters.drops_tx_fail += 1;
                            Dequeued::Dropped {
                                handle,
                                cause: DropCause::TxFail,
                            }
                        }
                    });
                    return;
                }
            }
        }
    }

    /// The counters since the pipe was created, including any absorbed from replicas.
    pub fn counters(&self) -> &PipeCounters {
        &self.counters
    }

    /// Adds counts kept by a replica of this pipe elsewhere (another worker of a partitioned
    /// run releases the packets it hands on): counts add up, high-water marks take the larger.
    pub fn absorb_counters(&mut self, other: &PipeCounters) {
        let c = &mut self.counters;
        c.packets_in += other.packets_in;
        c.bytes_in += other.bytes_in;
        c.packets_out += other.packets_out;
        c.bytes_out += other.bytes_out;
        c.drops_queue += other.drops_queue;
        c.drops_red += other.drops_red;
        c.drops_codel += other.drops_codel;
        c.marks += other.marks;
        c.drops_loss += other.drops_loss;
        c.drops_down += other.drops_down;
        c.drops_tx_fail += other.drops_tx_fail;
        c.retries += other.retries;
        c.duplicates += other.duplicates;
        c.queue_hwm_packets = c.queue_hwm_packets.max(other.queue_hwm_packets);
        c.queue_hwm_bytes = c.queue_hwm_bytes.max(other.queue_hwm_bytes);
    }

    fn reject(&mut self, cause: DropCause) -> Admission {
        let c = &mut self.counters;
        match cause {
            DropCause::Queue => c.drops_queue += 1,
            DropCause::Red => c.drops_red += 1,
            DropCause::Codel => c.drops_codel += 1,
            DropCause::Loss => c.drops_loss += 1,
            DropCause::LinkDown => c.drops_down += 1,
            DropCause::TxFail => c.drops_tx_fail += 1,
        }
        Admission::Dropped(cause)
    }

    /// Serializes an admitted packet behind the ones already queued and picks its exit time;
    /// `None` if a wireless channel gave up on it (a transmit failure, which the caller counts).
    /// A failed packet still held the queue and the channel for all its attempts.
    // Inlined: it runs once per packet-hop, and the calls of the per-hop path (saving and
    // restoring registers, results through memory) were ~110 of its ~1,000 instructions.
    #[inline(always)]
    fn schedule(&mut self, now: Instant, bytes: u32) -> Option<Departure> {
        let tx_start = now.max(self.busy_until);
        let airtime = self.essentials.rate.tx_time(u64::from(bytes));
        // A trace replaces serialization and a radio extends it; the topology loader refuses a
        // link with both.
        let (tx_end, delivered) = if self.essentials.plain {
            (tx_start + airtime, true)
        } else if let Some(trace) = &self.data.trace {
            (self.trace.deliver(trace, now, bytes), true)
        } else if let Some(radio) = &mut self.radio {
            let t = radio.transmit(tx_start, bytes, airtime, &mut self.rng);
            self.counters.retries += u64::from(t.attempts - 1);
            (t.end, t.delivered)
        } else {
            (tx_start + airtime, true)
        };
        self.busy_until = tx_end;
        self.backlog.push(tx_end, bytes);
        let c = &mut self.counters;
        c.queue_hwm_packets = c.queue_hwm_packets.max(self.backlog.packets());
        c.queue_hwm_bytes = c.queue_hwm_bytes.max(self.backlog.bytes());
        if !delivered {
            return None;
        }

        let exit = tx_end + self.sample_delay();
        let out_of_order = !self.essentials.plain && chance(&mut self.rng, self.config.ooo_rate);
        let exit = if out_of_order {
            // NemC's out-of-order packet: held back on its own; it neither waits for the packets
            // before it nor holds back the ones after it.
            exit + self.config.ooo_delay
        } else {
            let fifo_exit = exit.max(self.last_exit);
            self.last_exit = fifo_exit;
            if self.essentials.reorder {
                exit
            } else {
                fifo_exit
            }
        };
        Some(Departure {
            exit,
            ticket: Ticket { epoch: self.epoch },
        })
    }

    /// Propagation delay plus a jitter sample uniform in [−jitter, +jitter], clamped at zero.
    fn sample_delay(&mut self) -> Duration {
        if self.essentials.plain {
            return self.essentials.delay;
        }
        let Duration(jitter) = self.config.jitter;
        if jitter == 0 {
            return self.config.delay;
        }
        let offset = self.rng.gen_range(0..=jitter.saturating_mul(2));
        Duration(
            self.config
                .delay
                .as_nanos()
                .saturating_add(offset)
                .saturating_sub(jitter),
        )
    }
}

/// A deferred pipe's packets and what it needs to serve them.
struct Held {
    queues: FqQueues,
    /// The parameters the queues were last configured with: packets held under FQ-CoDel still
    /// drain by them after a change to another `aqm`.
    params: FqCodelParams,
    /// Held packets dropped when the link went down, for the next `dequeue` to report.
    gone: Vec<u32>,
}

impl Held {
    fn new(params: FqCodelParams) -> Box<Held> {
        Box::new(Held {
            queues: FqQueues::default(),
            params,
            gone: Vec::new(),
        })
    }
}

/// The FQ-CoDel parameters of `config`, or the defaults when it has another `aqm`.
fn fq_params(config: &PipeConfig) -> FqCodelParams {
    match config.aqm {
        Aqm::FqCodel(params) => params,
        _ => FqCodelParams::default(),
    }
}

/// A deferred pipe's state when `config` asks for FQ-CoDel.
fn fq_state(config: &PipeConfig) -> Option<Box<Held>> {
    matches!(config.aqm, Aqm::FqCodel(_)).then(|| Held::new(fq_params(config)))
}

/// The wireless channel `config` asks for, if any.
fn radio_for(config: &PipeConfig, data: &PipeData) -> Option<Radio> {
    let w = config.wireless.as_ref()?;
    Some(Radio::new(config, w, data.profile.as_ref()))
}

#[cfg(test)]
mod tests;
