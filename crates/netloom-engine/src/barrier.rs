//! A spinning barrier for the partitioned driver's windows: parking and waking a thread costs
//! 35–45 µs on this kind of machine, more than a whole window's work, so waiters spin (yielding
//! now and then, in case there are more workers than CPUs). Any thread can call the run off.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Spins after which a waiter starts yielding its CPU between looks (a few µs): long enough to
/// catch a partner that is about to arrive, short enough to hand the CPU over quickly when the
/// partner is waiting for it.
const SPINS_BEFORE_YIELD: u32 = 1 << 10;

pub struct SpinBarrier {
    parties: usize,
    /// 0 when there are more parties than CPUs: a spinning waiter would then hold a CPU that
    /// a party it waits for needs.
    spins_before_yield: u32,
    arrived: AtomicUsize,
    /// Bumped by the last arrival of each round, which releases the others.
    generation: AtomicUsize,
    aborted: AtomicBool,
}

/// The run was called off while waiting (a worker failed).
#[derive(Debug)]
pub struct Aborted;

impl SpinBarrier {
    pub fn new(parties: usize) -> SpinBarrier {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        SpinBarrier {
            parties,
            spins_before_yield: if parties > cpus {
                0
            } else {
                SPINS_BEFORE_YIELD
            },
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            aborted: AtomicBool::new(false),
        }
    }

    /// Waits until all parties have arrived. Everything each party did before arriving is
    /// visible to all of them after.
    pub fn wait(&self) -> Result<(), Aborted> {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::AcqRel);
            return Ok(());
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == generation {
            if self.aborted.load(Ordering::Relaxed) {
                return Err(Aborted);
            }
            if spins < self.spins_before_yield {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        Ok(())
    }

    /// Releases every waiter, now and later, with `Aborted`.
    pub fn abort(&self) {
        self.aborted.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn nobody_passes_a_round_before_everyone_arrived() {
        let barrier = SpinBarrier::new(3);
        let counter = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for round in 1..=200u64 {
                        counter.fetch_add(1, Ordering::SeqCst);
                        barrier.wait().unwrap();
                        assert!(counter.load(Ordering::SeqCst) >= 3 * round);
                        barrier.wait().unwrap();
                    }
                });
            }
        });
        assert_eq!(counter.load(Ordering::SeqCst), 600);
    }

    #[test]
    fn abort_releases_a_waiter() {
        let barrier = SpinBarrier::new(2);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| barrier.wait());
            std::thread::sleep(std::time::Duration::from_millis(10));
            barrier.abort();
            assert!(waiter.join().unwrap().is_err());
        });
    }
}
