//! CoDel's dequeue-side state machine (RFC 8289), run one packet at a time in FIFO order.
//!
//! The RFC's `dequeue` may drop several packets in one call: it drops the head, takes the next
//! one and decides again at the same instant. Here each packet is decided on its own, at the
//! instant it reaches the head, so the state remembers whether the packet before it was dropped
//! at that same instant (`AfterDrop`): such a packet is the one the RFC's call takes next, and it
//! gets the treatment the RFC gives it inside the loop. A head found empty (`idle`) resets the
//! state as the RFC's `dodequeue` on an empty queue does.

use crate::config::CodelParams;
use netloom_time::{Duration, Instant};
use serde::{Deserialize, Serialize};

/// What CoDel does with the packet at the head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Send it.
    Pass,
    /// Drop it; the next packet reaches the head at the same instant.
    Drop,
    /// Mark it CE and send it (ECN instead of a drop).
    Mark,
}

/// Which branch of the RFC's `dequeue` dropped the packet just before.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum AfterDrop {
    /// The drop that entered the dropping state: the next packet is sent whatever it waited.
    Entry,
    /// A drop of the dropping loop: the next packet is judged again at the same instant.
    Loop,
}

/// The RFC's per-queue variables, plus what links one packet's decision to the next.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Codel {
    /// When the queue delay first went above target, plus an interval, if `above`. Not an
    /// `Option`: without its 8 bytes of tag and padding a state is 32 bytes, and FQ-CoDel's
    /// flow queue with it one cache line (`fq::FlowQueue`).
    first_above_time: Instant,
    /// The queue delay is above target (since `first_above_time` less an interval).
    above: bool,
    /// When the next drop is due while `dropping`.
    drop_next: Instant,
    /// Drops (and marks) since entering the dropping state; sets the control law's spacing.
    count: u32,
    /// `count` when the dropping state was last entered, for the RFC's count reuse rule.
    lastcount: u32,
    dropping: bool,
    after_drop: Option<AfterDrop>,
}

impl Codel {
    /// The serializer found the queue empty: the RFC's `dodequeue` with nothing to dequeue
    /// forgets the time above target, and leaves the dropping state (as Linux does at once).
    pub(crate) fn idle(&mut self) {
        self.above = false;
        self.dropping = false;
        self.after_drop = None;
    }

    /// Decides for the packet that reaches the head at `head` after waiting `sojourn`.
    /// `short_queue` says the queue holds at most one full-size packet (the RFC's
    /// `bytes() <= MAXPACKET`), and `markable` that a drop may be replaced by a CE mark.
    pub(crate) fn dequeue(
        &mut self,
        params: &CodelParams,
        head: Instant,
        sojourn: Duration,
        short_queue: bool,
        markable: bool,
    ) -> Verdict {
        let ok_to_drop = self.ok_to_drop(params, head, sojourn, short_queue);
        match self.after_drop.take() {
            Some(AfterDrop::Entry) => return Verdict::Pass,
            Some(AfterDrop::Loop) => {
                if !ok_to_drop {
                    self.dropping = false;
                    return Verdict::Pass;
                }
                self.drop_next = control_law(self.drop_next, params.interval, self.count);
            }
            None if !self.dropping => {
                return match ok_to_drop {
                    true => self.enter(params, head, markable),
                    false => Verdict::Pass,
                };
            }
            None if !ok_to_drop => {
                self.dropping = false;
                return Verdict::Pass;
            }
            None => {}
        }
        if head < self.drop_next {
            return Verdict::Pass;
        }
        self.count += 1;
        if markable {
            // Linux's codel: a mark sends the packet and ends this dequeue's loop.
            self.drop_next = control_law(self.drop_next, params.interval, self.count);
            return Verdict::Mark;
        }
        self.after_drop = Some(AfterDrop::Loop);
        Verdict::Drop
    }

    /// The RFC's `dodequeue` test: has the queue delay been above target for an interval?
    fn ok_to_drop(
        &mut self,
        params: &CodelParams,
        head: Instant,
        sojourn: Duration,
        short_queue: bool,
    ) -> bool {
        if sojourn < params.target || short_queue {
            self.above = false;
            return false;
        }
        if !self.above {
            self.above = true;
            self.first_above_time = head + params.interval;
            return false;
        }
        head >= self.first_above_time
    }

    /// Enters the dropping state with the packet at the head, reusing the last cycle's drop
    /// rate if the queue went above target again soon after it left (RFC 8289's Linux rule).
    fn enter(&mut self, params: &CodelParams, head: Instant, markable: bool) -> Verdict {
        self.dropping = true;
        let delta = self.count.wrapping_sub(self.lastcount);
        let recent = head < self.drop_next + Duration(params.interval.as_nanos() * 16);
        self.count = if delta > 1 && recent { delta } else { 1 };
        self.drop_next = control_law(head, params.interval, self.count);
        self.lastcount = self.count;
        if markable {
            return Verdict::Mark;
        }
        self.after_drop = Some(AfterDrop::Entry);
        Verdict::Drop
    }
}

/// The RFC's control law: the next drop is interval / sqrt(count) after `t`.
fn control_law(t: Instant, interval: Duration, count: u32) -> Instant {
    let spacing = interval.as_nanos() as f64 / f64::from(count).sqrt();
    t + Duration(spacing.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn control_law_spaces_drops_by_interval_over_sqrt_count() {
        let interval = Duration::from_millis(100);
        let t = Instant::from_nanos(7);
        let spacing = |count| control_law(t, interval, count).as_nanos() - 7;
        assert_eq!(spacing(1), 100 * MS);
        assert_eq!(spacing(2), 70_710_678);
        assert_eq!(spacing(4), 50 * MS);
        assert_eq!(spacing(100), 10 * MS);
    }

    #[test]
    fn a_short_queue_or_a_delay_under_target_never_drops() {
        let params = CodelParams::default();
        let mut codel = Codel::default();
        let long = Duration::from_millis(50);
        for k in 0..1000 {
            let head = Instant::from_nanos(k * MS);
            let v = codel.dequeue(&params, head, long, true, false);
            assert_eq!(v, Verdict::Pass);
            let v = codel.dequeue(&params, head, Duration::from_millis(4), false, false);
            assert_eq!(v, Verdict::Pass);
        }
    }
}
