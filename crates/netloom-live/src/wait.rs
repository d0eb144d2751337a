//! How long the driver may sleep before its next turn, by precision mode: the policy alone, as a
//! function of the time, the next deadline and what happened lately, so it is tested without
//! sleeping. The driver does the waiting (in `PacketIo::wait`) and tells the `Waiter` how the
//! wait went.
//!
//! Why hybrid looks like this (measured on the 2-vCPU development VM, docs/live.md): a sleeping
//! thread's timer fires 15–60 µs late and the thread runs up to 100 µs after that, and every code
//! path idle for milliseconds (the wake-up itself, the TUN write) runs several times slower
//! than a warm one. So hybrid (1) learns how late its own timed wake-ups are and starts spinning
//! that much before each deadline: as late as nine in ten of the recent ones, not the latest,
//! since it pays the spin at every deadline and a wake-up a little later than that is still
//! far from late (spinning for the latest cost a tenth of a CPU at 5 Mbit/s on a loaded VM);
//! (2) keeps spinning for a while after a packet when that host's next packet (a reply, the
//! next of a stream) lately came soon enough to be worth it (`crate::linger`: a fixed spin after
//! every packet cost half a CPU at 5 Mbit/s), timing a packet read after a sleep by when it
//! likely came, the read less the usual lateness of a wake-up, not by the read; (3)
//! while traffic is recent, never sleeps longer than a millisecond at a time, which keeps the
//! wake-up path warm at a cost of about a thousand short turns a second; (4) treats a packet that
//! another worker will deliver to a host this driver reads as a deadline of its own (`expect`):
//! the host's answer is made inside that write, and it should find its reader awake, as it does
//! when one worker does both (measured: two workers read 0.11–0.18 ms slower than one on a busy
//! VM without it). A driver that sleeps
//! runs at real-time priority so that it wakes on time; one that has spun without a sleep for
//! longer than `LONG_SPIN` wants normal priority until it next sleeps (`wants_realtime`): a
//! real-time thread that never sleeps starves the programs sharing its CPU until the kernel
//! stops it for tens of milliseconds to let them run (measured: 35–50 ms lateness). Around a
//! move's instant, which every worker waits on, it keeps real-time priority however long it
//! has spun (`hold_realtime`).

use crate::linger::Lingers;
use netloom_time::{Duration, Instant};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// How the driver waits between deadlines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// Never sleeps: polls for packets and deadlines continuously on its own core. Deadlines
    /// are met within microseconds; one CPU is always busy.
    Busy,
    /// Sleeps between deadlines and packets, spinning just before each deadline and for a
    /// while after a packet whose host is likely to send again soon (see `Hybrid`).
    Hybrid(Hybrid),
    /// Sleeps until each deadline or packet: least CPU, releases late by the timer's lateness.
    Sleep,
}

/// The settings of hybrid precision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hybrid {
    /// How long before a deadline to stop sleeping and spin; `None`: learned from how late this
    /// machine's timed wake-ups are (the default).
    pub spin: Option<Duration>,
    /// The longest spin after a packet read or written before sleeping again: each host's is
    /// learned within it (`crate::linger`); zero turns lingering off.
    pub linger: Duration,
}

impl Default for Hybrid {
    fn default() -> Self {
        Hybrid {
            spin: None,
            linger: DEFAULT_LINGER,
        }
    }
}

/// The default bound of the linger: the reply of an exchange (from a kernel, or a program's
/// answer) comes within this. Longer lingers also catch the next request of a fast ping-pong,
/// but keep the vCPU busy without a break: the hypervisor then takes it away now and then, and
/// a spin past `LONG_SPIN` runs at normal priority, where a kernel thread on the same CPU costs
/// a whole scheduler tick (measured here: ping every 2 ms, p99 3.9 ms with a 2 ms linger, 0.12–0.21 ms
/// with 500 us; docs/performance.md).
pub const DEFAULT_LINGER: Duration = Duration::from_micros(500);
/// The longest single sleep, so a stop request or a change is noticed promptly even when
/// nothing happens (a posted order also wakes the driver at once).
pub const MAX_SLEEP: Duration = Duration::from_millis(20);
/// The longest sleep while traffic is recent (within `WARM_FOR` of the last packet).
pub const WARM_SLEEP: Duration = Duration::from_millis(1);
/// How long after the last packet sleeps stay short.
pub const WARM_FOR: Duration = Duration::from_secs(1);
/// The learned spin: never under this (timer slack and the cost of the wake-up itself) ...
pub const MIN_SPIN: Duration = Duration::from_micros(20);
/// ... nor over this, whatever wild wake-ups said (then the run's lateness shows it).
pub const MAX_SPIN: Duration = Duration::from_millis(1);
/// The learned spin covers the wake-up as late as this many tenths of the recent ones.
const COVERED_TENTHS: usize = 9;
/// The learned spin before any wake-up was measured.
pub const INITIAL_SPIN: Duration = Duration::from_micros(100);
/// How many recent timed wake-ups the learned spin covers.
const SAMPLES: usize = 32;
/// A spin run longer than this, with no sleep, goes on at normal priority.
pub const LONG_SPIN: Duration = Duration::from_millis(5);
/// Most deliveries expected at once; beyond, the latest are forgotten (the driver then sleeps
/// through them, as it would without expecting them).
const MAX_EXPECTED: usize = 4096;

/// The driver's waiting state: what the precision mode says, what the last packet was, and
/// how late recent timed wake-ups were.
#[derive(Clone, Debug)]
pub struct Waiter {
    precision: Precision,
    /// When a packet was last read or written.
    last_packet: Option<Instant>,
    /// Until when the last packets' lingers keep the driver spinning.
    linger_until: Instant,
    /// What each host's packets were followed by, which sets the linger (hybrid only).
    lingers: Option<Lingers>,
    /// Lateness of recent timed wake-ups, ns, a ring.
    lateness: [u64; SAMPLES],
    samples: usize,
    /// The spin they call for (`spin`), kept as they come.
    learned: Duration,
    /// The median of them: how long a wake-up usually takes to run, which a packet that came
    /// during a sleep waited before it was read.
    usual_wake: Duration,
    /// The sleep the current turn ended: from when a packet read in this turn may have come
    /// (its start, or its end if it ran its course), and when the driver woke.
    slept: Option<(Instant, Instant)>,
    /// The sleep in progress: when it was asked for, and until when.
    asleep: Option<(Instant, Instant)>,
    /// When the driver last ended a sleep (or started): the start of the current spin run.
    spinning_since: Instant,
    /// Deliveries another worker will make to hosts this driver reads, earliest first, with
    /// the host.
    expected: BinaryHeap<Reverse<(Instant, u32)>>,
    /// Real-time priority is kept over this span, however long the spin (`hold_realtime`).
    held: std::ops::Range<Instant>,
}

impl Waiter {
    /// A waiter for `precision` that has seen nothing yet.
    pub fn new(precision: Precision) -> Waiter {
        let lingers = match precision {
            Precision::Hybrid(h) => Some(Lingers::new(h.linger)),
            Precision::Busy | Precision::Sleep => None,
        };
        Waiter {
            precision,
            last_packet: None,
            linger_until: Instant::ZERO,
            lingers,
            lateness: [0; SAMPLES],
            samples: 0,
            learned: INITIAL_SPIN,
            usual_wake: Duration::ZERO,
            slept: None,
            asleep: None,
            spinning_since: Instant::ZERO,
            expected: BinaryHeap::new(),
            held: Instant::ZERO..Instant::ZERO,
        }
    }

    /// Another worker will write a packet at `at` into `host`, which this driver reads: wake as
    /// before a deadline, and linger after it as after a packet this driver wrote.
    pub fn expect(&mut self, at: Instant, host: u32) {
        if self.expected.len() < MAX_EXPECTED {
            self.expected.push(Reverse((at, host)));
        }
    }

    /// The precision mode.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// A packet of `host` was read at `now`. Read in the turn after a sleep, it came during
    /// the sleep and waited for the wake-up: its host's record times it by when it likely came,
    /// the wake less the usual lateness of a wake-up (never before the sleep began), as a
    /// follow-up read after the wake-up looked too slow to be worth awaiting, and then every
    /// one was read after a wake-up (`crate::linger`).
    pub fn read(&mut self, now: Instant, host: u32) {
        self.last_packet = Some(now);
        if let Some(l) = &mut self.lingers {
            let came = match self.slept {
                Some((from, woke)) => Instant(woke.0.saturating_sub(self.usual_wake.as_nanos()))
                    .max(from)
                    .min(now),
                None => now,
            };
            self.linger_until = self.linger_until.max(came + l.read(came, host));
        }
    }

    /// A packet was written to `host` at `now`.
    pub fn wrote(&mut self, now: Instant, host: u32) {
        self.last_packet = self.last_packet.max(Some(now));
        if let Some(l) = &mut self.lingers {
            self.linger_until = self.linger_until.max(now + l.wrote(now, host));
        }
    }

    /// How long the driver may sleep from `now` with its next deadline at `deadline`: zero means
    /// poll and come back. Records the sleep, so `woke` can tell how late it ended.
    pub fn budget(&mut self, now: Instant, deadline: Option<Instant>) -> Duration {
        // The turn that followed the last sleep is over.
        self.slept = None;
        // An expected delivery that has come is a packet for the linger; the next one is a
        // deadline.
        while let Some(&Reverse((at, host))) =
            self.expected.peek().filter(|Reverse((at, _))| *at <= now)
        {
            self.expected.pop();
            self.wrote(at, host);
        }
        let deadline = match (deadline, self.expected.peek()) {
            (Some(d), Some(&Reverse((e, _)))) => Some(d.min(e)),
            (d, e) => d.or(e.map(|Reverse((e, _))| *e)),
        };
        let since_packet = self.last_packet.map(|t| now.saturating_since(t));
        let longest = match since_packet {
            Some(d) if d < WARM_FOR && matches!(self.precision, Precision::Hybrid(_)) => WARM_SLEEP,
            _ => MAX_SLEEP,
        };
        let until = |spin: Duration| match deadline {
            Some(at) => at.saturating_since(now).saturating_sub(spin).min(longest),
            None => longest,
        };
        let sleep = match self.precision {
            Precision::Busy => Duration::ZERO,
            Precision::Sleep => until(Duration::ZERO),
            Precision::Hybrid(_) if now < self.linger_until => Duration::ZERO,
            Precision::Hybrid(_) => until(self.spin()),
        };
        self.asleep = (!sleep.is_zero()).then(|| (now, now + sleep));
        sleep
    }

    /// How long a driver that waits only for a post from another thread (the others'
    /// transfers at a move) may sleep from `now`: the post wakes it, so as long as the longest
    /// sleep, whatever the linger, except in busy mode. Spinning instead, at real-time priority,
    /// would keep the CPUs from the threads that bring the post (between machines, the
    /// coordinator's and the worker's reading their control channels: measured 7 to 9 ms on 2
    /// vCPUs, until `LONG_SPIN` ended the priority). Records the sleep, as `budget`.
    pub fn awaiting(&mut self, now: Instant) -> Duration {
        self.slept = None;
        let sleep = match self.precision {
            Precision::Busy => Duration::ZERO,
            Precision::Hybrid(_) | Precision::Sleep => MAX_SLEEP,
        };
        self.asleep = (!sleep.is_zero()).then(|| (now, now + sleep));
        sleep
    }

    /// The wait that `budget` allowed ended at `now`; `by_timer` when it ran its course (no
    /// packet or message cut it short), in which case how late it ended teaches the spin.
    pub fn woke(&mut self, now: Instant, by_timer: bool) {
        if let Some((from, until)) = self.asleep.take() {
            self.spinning_since = now;
            // A sleep that ran its course was not cut short by a packet: any read now came
            // after its end.
            self.slept = Some((if by_timer { until } else { from }, now));
            if by_timer {
                self.lateness[self.samples % SAMPLES] = now.saturating_since(until).as_nanos();
                self.samples += 1;
                let [usual, covered] = self.late_as([5, COVERED_TENTHS]);
                self.usual_wake = Duration::from_nanos(usual);
                self.learned = learn(covered);
            }
        }
    }

    /// Whether a driver that sleeps in this mode should run at real-time priority at `now`:
    /// yes while it sleeps or has spun only briefly since its last sleep, no once the spin has
    /// gone on for `LONG_SPIN` (unless held, `hold_realtime`). `about_to_sleep`: the turn's
    /// budget allows a sleep, which must be taken at real-time priority.
    pub fn wants_realtime(&self, now: Instant, about_to_sleep: bool) -> bool {
        about_to_sleep
            || now.saturating_since(self.spinning_since) < LONG_SPIN
            || self.held.contains(&now)
    }

    /// Keeps real-time priority over `span` however long the spin, or until `end_hold`: around
    /// a deadline every worker waits on, a move's instant. A worker past `LONG_SPIN` that a
    /// program on its CPU preempted at a move's instant stalled the whole run for the program's
    /// time slice (measured: paused 1.4 and 2.8 ms late after 2 and 4 ms on the run queue).
    pub fn hold_realtime(&mut self, span: std::ops::Range<Instant>) {
        self.held = span;
    }

    /// Ends the hold of `hold_realtime` (the move is done).
    pub fn end_hold(&mut self) {
        self.held = Instant::ZERO..Instant::ZERO;
    }

    /// How long before a deadline hybrid precision starts spinning: as configured, or learned
    /// (`learn`).
    pub fn spin(&self) -> Duration {
        match self.precision {
            Precision::Hybrid(Hybrid {
                spin: Some(spin), ..
            }) => spin,
            Precision::Hybrid(_) => self.learned,
            Precision::Busy | Precision::Sleep => Duration::ZERO,
        }
    }

    /// The latenesses, ns, that each of `tenths` tenths of the recent timed wake-ups were no later
    /// than, from one sort of them.
    fn late_as(&self, tenths: [usize; 2]) -> [u64; 2] {
        let seen = self.samples.min(SAMPLES);
        let mut sorted = self.lateness;
        let sorted = &mut sorted[..seen];
        sorted.sort_unstable();
        tenths.map(|t| sorted[(seen * t).div_ceil(10).max(1) - 1])
    }
}

/// The learned spin: `covered`, the lateness of the recent timed wake-up that nine in ten of them
/// were no later than, plus half again, within [`MIN_SPIN`, `MAX_SPIN`].
fn learn(covered: u64) -> Duration {
    Duration::from_nanos(covered.saturating_add(covered / 2))
        .max(MIN_SPIN)
        .min(MAX_SPIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    fn at_us(n: u64) -> Instant {
        Instant(n * 1_000)
    }

    fn hybrid() -> Waiter {
        Waiter::new(Precision::Hybrid(Hybrid::default()))
    }

    #[test]
    fn busy_never_sleeps_and_sleep_sleeps_to_the_deadline() {
        let mut busy = Waiter::new(Precision::Busy);
        assert_eq!(busy.budget(at_us(0), Some(at_us(500))), Duration::ZERO);
        let mut sleep = Waiter::new(Precision::Sleep);
        assert_eq!(sleep.budget(at_us(0), Some(at_us(500))), us(500));
        assert_eq!(sleep.budget(at_us(0), None), MAX_SLEEP);
        assert_eq!(sleep.budget(at_us(600), Some(at_us(500))), Duration::ZERO);
    }

    #[test]
    fn hybrid_spins_the_learned_lateness_before_a_deadline() {
        let mut w = hybrid();
        // Nothing measured yet: the initial spin.
        assert_eq!(w.budget(at_us(0), Some(at_us(1_000))), us(900));
        // That sleep ended 40 us late (at 940 instead of 900): spin 60 us from now on.
        w.woke(at_us(940), true);
        assert_eq!(w.spin(), us(60));
        assert_eq!(w.budget(at_us(1_000), Some(at_us(3_000))), us(1_940));
        // A sleep cut short by a packet teaches nothing.
        w.woke(at_us(1_200), false);
        assert_eq!(w.spin(), us(60));
        // A wild wake-up among two is capped.
        w.budget(at_us(2_000), Some(at_us(10_000)));
        w.woke(at_us(12_000), true);
        assert_eq!(w.spin(), MAX_SPIN);
        // An on-time wake-up raises the spin to the floor at least.
        let mut quiet = hybrid();
        quiet.budget(at_us(0), Some(at_us(500)));
        quiet.woke(at_us(400), true);
        assert_eq!(quiet.spin(), MIN_SPIN);
    }

    #[test]
    fn a_driver_awaiting_a_post_sleeps_even_while_lingering_and_at_real_time_priority() {
        let mut w = hybrid();
        w.read(at_us(0), 0);
        assert_eq!(w.budget(at_us(10), None), Duration::ZERO, "lingering");
        let sleep = w.awaiting(at_us(10));
        assert_eq!(sleep, MAX_SLEEP);
        assert!(w.wants_realtime(at_us(10), !sleep.is_zero()));
        assert_eq!(Waiter::new(Precision::Sleep).awaiting(at_us(0)), MAX_SLEEP);
        assert_eq!(
            Waiter::new(Precision::Busy).awaiting(at_us(0)),
            Duration::ZERO
        );
    }

    #[test]
    fn old_wake_ups_are_forgotten() {
        let mut w = hybrid();
        w.budget(at_us(0), Some(at_us(1_000)));
        w.woke(at_us(1_000), true); // 100 us late: spin 150
        assert_eq!(w.spin(), us(150));
        for k in 1..=SAMPLES as u64 {
            let now = at_us(k * 10_000);
            let sleep = w.budget(now, Some(now + us(1_000)));
            w.woke(now + sleep, true); // on time
        }
        assert_eq!(w.spin(), MIN_SPIN);
    }

    #[test]
    fn hybrid_lingers_after_a_packet_then_keeps_sleeps_short_for_a_while() {
        // A host it knows nothing of yet: the whole linger.
        let mut w = hybrid();
        w.read(at_us(0), 0);
        let linger = DEFAULT_LINGER.as_nanos();
        assert_eq!(
            w.budget(Instant(linger - 1), None),
            Duration::ZERO,
            "lingering"
        );
        assert_eq!(w.budget(Instant(linger), None), WARM_SLEEP);
        assert_eq!(w.budget(at_us(999_999), None), WARM_SLEEP);
        assert_eq!(w.budget(at_us(1_000_000), None), MAX_SLEEP);
        // The linger is a setting; zero turns it off.
        let mut eager = Waiter::new(Precision::Hybrid(Hybrid {
            spin: Some(us(60)),
            linger: Duration::ZERO,
        }));
        eager.wrote(at_us(0), 0);
        assert_eq!(eager.budget(at_us(0), Some(at_us(560))), us(500));
    }

    #[test]
    fn an_expected_delivery_is_woken_for_and_lingered_after() {
        let mut w = Waiter::new(Precision::Hybrid(Hybrid {
            spin: Some(us(100)),
            linger: us(500),
        }));
        // Nothing else to do: without the expectation it would sleep 20 ms.
        w.expect(at_us(3_000), 1);
        assert_eq!(
            w.budget(at_us(0), None),
            us(2_900),
            "wakes the spin before it"
        );
        assert_eq!(
            w.budget(at_us(2_950), None),
            Duration::ZERO,
            "spins up to it"
        );
        // Once it has come, the driver lingers as after a packet of its own...
        assert_eq!(w.budget(at_us(3_000), None), Duration::ZERO);
        assert_eq!(w.budget(at_us(3_499), None), Duration::ZERO);
        // ...then sleeps, short while traffic is recent.
        assert_eq!(w.budget(at_us(3_500), None), WARM_SLEEP);
        // An engine deadline earlier than the expectation still comes first.
        w.expect(at_us(9_000), 1);
        assert_eq!(w.budget(at_us(4_000), Some(at_us(4_500))), us(400));
    }

    #[test]
    fn a_long_spin_gives_up_real_time_priority_until_the_next_sleep() {
        let mut w = hybrid();
        // Packets keep coming, 50 us apart: the driver spins from 0 on.
        for t in (0..10_000).step_by(50) {
            w.read(at_us(t), 0);
            assert_eq!(w.budget(at_us(t), None), Duration::ZERO);
            assert_eq!(
                w.wants_realtime(at_us(t), false),
                at_us(t) < at_us(5_000),
                "{t}"
            );
        }
        // The traffic stops; the linger ends; before sleeping it takes real-time priority back.
        let sleep = w.budget(at_us(12_000), None);
        assert!(!sleep.is_zero());
        assert!(w.wants_realtime(at_us(12_000), true));
        w.woke(at_us(13_000), true);
        assert!(w.wants_realtime(at_us(13_000), false), "a new spin run");
        assert!(!w.wants_realtime(at_us(18_000), false));
        // A move's instant holds it, however long the spin, until the hold ends.
        w.hold_realtime(at_us(20_000)..at_us(21_000));
        assert!(!w.wants_realtime(at_us(19_999), false));
        assert!(w.wants_realtime(at_us(20_000), false));
        assert!(w.wants_realtime(at_us(20_999), false));
        assert!(!w.wants_realtime(at_us(21_000), false));
        w.hold_realtime(at_us(22_000)..at_us(30_000));
        assert!(w.wants_realtime(at_us(22_000), false));
        w.end_hold();
        assert!(!w.wants_realtime(at_us(22_001), false));
    }

    #[test]
    fn hybrid_sleeps_after_the_packets_of_a_host_that_sends_only_every_2_ms() {
        // A TCP sender at 5 Mbit/s: a segment every 2.4 ms, nothing in between. A fixed linger
        // spun 500 us after each; once the host's gaps are known, the driver sleeps at once.
        let mut w = hybrid();
        for k in 0..10 {
            w.read(at_us(k * 2_400), 1);
        }
        let now = at_us(9 * 2_400);
        assert_eq!(w.budget(now, Some(now + us(800))), us(700));
    }

    #[test]
    fn hybrid_lingers_after_a_write_as_long_as_the_answer_takes() {
        // A server that answers each request 60 us after it is written: the driver spins 90 us
        // (the answer and half again) after each write, then sleeps; not the whole 500 us.
        let mut w = hybrid();
        for k in 0..10 {
            w.wrote(at_us(k * 1_000), 1);
            w.read(at_us(k * 1_000 + 60), 1);
        }
        w.wrote(at_us(10_000), 1);
        assert_eq!(
            w.budget(at_us(10_089), None),
            Duration::ZERO,
            "awaits the answer"
        );
        assert_eq!(w.budget(at_us(10_090), None), WARM_SLEEP);
    }

    /// One packet from `host` that comes `after` µs after `at`: the driver takes a turn every
    /// microsecond while it lingers; once the linger is over it sleeps, and the packet wakes it
    /// `wake` µs after it came. Returns whether the driver was awake for it, and when it was
    /// read.
    fn comes(w: &mut Waiter, at: u64, after: u64, wake: u64, host: u32) -> (bool, u64) {
        for t in at + 1..at + after {
            if !w.budget(at_us(t), None).is_zero() {
                let read = at + after + wake;
                w.woke(at_us(read), false);
                w.read(at_us(read), host);
                return (false, read);
            }
        }
        w.read(at_us(at + after), host);
        (true, at + after)
    }

    #[test]
    fn a_fast_ping_pong_is_caught_again_after_slow_answers() {
        // Two programs in ping-pong: each answers 20-60 us after the other's message is written
        // to it. The driver's wake-ups take 100-200 us (its timed ones taught it so). A slow
        // phase first, every answer 300 us late, leaves each host's linger at zero; then the
        // answers come fast again, and each is read only after a wake-up. Timed by its read,
        // each looked 120-260 us late, not worth a spin, so the driver never lingered again:
        // the old model slept through every one of them for good.
        let mut w = hybrid();
        let wakes = [100, 150, 200, 120, 180, 150, 130, 170];
        let mut t = 0;
        for &late in &wakes {
            let sleep = w.budget(at_us(t), None);
            w.woke(at_us(t) + sleep + us(late), true);
            t += 2_000;
        }
        let mut caught = Vec::new();
        for k in 0..60u64 {
            let answer = if k < 16 { 300 } else { 20 + (k * 17) % 41 };
            let wake = wakes[k as usize % wakes.len()];
            let to = (k % 2) as u32;
            w.wrote(at_us(t), to);
            let (awake, read) = comes(&mut w, t, answer, wake, to);
            caught.push(awake);
            t = read + 5;
        }
        assert!(
            !caught[8..16].iter().any(|&c| c),
            "the slow phase: {caught:?}"
        );
        assert!(
            caught[40..].iter().all(|&c| c),
            "the fast phase: {caught:?}"
        );
    }

    #[test]
    fn a_few_wild_wake_ups_in_ten_do_not_set_the_spin() {
        // 29 of the last 32 wake-ups 20 us late, 3 of them 400 us: the spin covers the 20 us
        // ones (and half again); the latest one set 600 us before, spun at every deadline.
        let mut w = hybrid();
        for k in 0..SAMPLES as u64 {
            let now = at_us(k * 10_000);
            let sleep = w.budget(now, Some(now + us(5_000)));
            let late = if k % 10 == 9 { us(400) } else { us(20) };
            w.woke(now + sleep + late, true);
        }
        assert_eq!(w.spin(), us(30));
        // A fourth one in 32 is more than one in ten: it counts.
        let now = at_us(400_000);
        let sleep = w.budget(now, Some(now + us(5_000)));
        w.woke(now + sleep + us(400), true);
        assert_eq!(w.spin(), us(600));
    }
}
