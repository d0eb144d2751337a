//! Time-varying plans: a Markov graph spends the long-run fraction of time in each state that
//! its transition probabilities and mean dwell times give; schedules step at their offsets.

use netloom_link::empirical::{Empirical, PPB};
use netloom_link::{
    Markov, MarkovError, MarkovState, Schedule, ScheduleError, Timeline, Variation, MAX_STEPS,
};
use netloom_time::{Duration, Instant};
use std::sync::Arc;

const MS: u64 = 1_000_000;

/// Dwell uniform on [lo, hi] ms.
fn uniform_ms(lo: u64, hi: u64) -> Empirical {
    Empirical::from_points(&[(0, lo * MS), (PPB, hi * MS)], 1024).unwrap()
}

#[test]
fn markov_long_run_fractions_match_theory() {
    let p = [[0.0, 0.7, 0.3], [0.5, 0.0, 0.5], [0.8, 0.2, 0.0]];
    let dwell = [
        uniform_ms(100, 300),
        uniform_ms(10, 30),
        uniform_ms(500, 1500),
    ];
    let states: Vec<MarkovState> = (0..3)
        .map(|i| MarkovState {
            dwell: dwell[i].clone(),
            next: (0..3)
                .filter(|&j| p[i][j] > 0.0)
                .map(|j| (j as u32, p[i][j]))
                .collect(),
        })
        .collect();
    let plan = Arc::new(Variation::Markov(Markov::new(states, 0).unwrap()));

    // Stationary distribution of the jump chain by power iteration, then weight by mean dwell.
    let mut pi = [1.0 / 3.0; 3];
    for _ in 0..1000 {
        let mut next = [0.0; 3];
        for i in 0..3 {
            for j in 0..3 {
                next[j] += pi[i] * p[i][j];
            }
        }
        pi = next;
    }
    let weights: Vec<f64> = (0..3).map(|i| pi[i] * dwell[i].mean() as f64).collect();
    let total: f64 = weights.iter().sum();
    let expected: Vec<f64> = weights.iter().map(|w| w / total).collect();

    // 100 batches of 200 s each; the batch means give the standard error.
    let mut t = Timeline::new(plan, 11);
    let batches = 100;
    let batch_ns = 200_000 * MS;
    let mut fractions = vec![[0.0; 3]; batches];
    let mut now = Instant::ZERO;
    let mut state = t.state();
    for (b, frac) in fractions.iter_mut().enumerate() {
        let end = Instant::from_nanos((b as u64 + 1) * batch_ns);
        while now < end {
            let next = t.poll_at().unwrap().min(end);
            frac[state as usize] += (next.as_nanos() - now.as_nanos()) as f64 / batch_ns as f64;
            now = next;
            state = t.advance(now);
        }
    }
    for s in 0..3 {
        let xs: Vec<f64> = fractions.iter().map(|f| f[s]).collect();
        let mean = xs.iter().sum::<f64>() / batches as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (batches - 1) as f64;
        let se = (var / batches as f64).sqrt();
        println!(
            "state {s}: {mean:.4} (expected {:.4}, se {se:.4})",
            expected[s]
        );
        assert!(
            (mean - expected[s]).abs() <= 3.29 * se,
            "state {s}: {mean:.4} vs {:.4} ± {:.4}",
            expected[s],
            3.29 * se
        );
    }
}

#[test]
fn markov_is_deterministic_per_seed() {
    let states = vec![
        MarkovState {
            dwell: uniform_ms(1, 10),
            next: vec![(1, 1.0)],
        },
        MarkovState {
            dwell: uniform_ms(1, 10),
            next: vec![(0, 0.5), (1, 0.5)],
        },
    ];
    let plan = Arc::new(Variation::Markov(Markov::new(states, 0).unwrap()));
    let run = |seed| {
        let mut t = Timeline::new(plan.clone(), seed);
        (0..100)
            .map(|_| {
                let at = t.poll_at().unwrap();
                (at, t.advance(at))
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(run(5), run(5));
    assert_ne!(run(5), run(6));
}

#[test]
fn markov_graphs_are_checked() {
    let state = |next: Vec<(u32, f64)>| MarkovState {
        dwell: uniform_ms(1, 2),
        next,
    };
    assert_eq!(Markov::new(vec![], 0), Err(MarkovError::NoStates));
    assert_eq!(
        Markov::new(vec![state(vec![(0, 0.5), (0, 0.4)])], 0),
        Err(MarkovError::Sum { state: 0, sum: 0.9 })
    );
    assert_eq!(
        Markov::new(vec![state(vec![(3, 1.0)])], 0),
        Err(MarkovError::UnknownState { state: 0, to: 3 })
    );
    let zero = MarkovState {
        dwell: Empirical::constant(0),
        next: vec![],
    };
    assert_eq!(
        Markov::new(vec![zero], 0),
        Err(MarkovError::ShortDwell { state: 0 })
    );
    let nanosecond = MarkovState {
        dwell: Empirical::constant(1),
        next: vec![(0, 1.0)],
    };
    assert_eq!(
        Markov::new(vec![nanosecond], 0),
        Err(MarkovError::ShortDwell { state: 0 })
    );
}

#[test]
fn a_repeating_schedule_starts_over_in_its_base_state() {
    let s = |ms: u64| Duration::from_millis(ms);
    let schedule = Schedule::new(vec![(s(10), 1), (s(20), 2), (s(25), 3)], Some(s(60))).unwrap();
    let mut t = Timeline::new(Arc::new(Variation::Schedule(schedule)), 0);
    let mut seen = vec![(0, t.state())];
    while let Some(at) = t.poll_at().filter(|&at| at < Instant::from_nanos(130 * MS)) {
        seen.push((at.as_nanos() / MS, t.advance(at)));
    }
    assert_eq!(
        seen,
        [
            (0, 0),
            (10, 1),
            (20, 2),
            (25, 3),
            (60, 0),
            (70, 1),
            (80, 2),
            (85, 3),
            (120, 0)
        ]
    );
}

#[test]
fn a_one_shot_schedule_ends_and_a_late_advance_catches_up() {
    let s = |ms: u64| Duration::from_millis(ms);
    let schedule = Schedule::new(vec![(s(0), 1), (s(10), 2), (s(20), 0)], None).unwrap();
    let mut t = Timeline::new(Arc::new(Variation::Schedule(schedule)), 0);
    assert_eq!(t.state(), 1);
    assert_eq!(t.advance(Instant::from_nanos(25 * MS)), 0);
    assert_eq!(t.poll_at(), None);
    assert_eq!(
        Schedule::new(vec![(s(10), 1), (s(10), 2)], None),
        Err(ScheduleError::NotIncreasing { index: 1 })
    );
    assert!(matches!(
        Schedule::new(vec![(s(70), 1)], Some(s(60))),
        Err(ScheduleError::BeyondPeriod { index: 0, .. })
    ));
}

#[test]
fn schedules_too_fine_or_too_long_to_keep_are_refused() {
    let ms = Duration::from_millis;
    let ns = Duration::from_nanos;
    // every = "1ns": a change a nanosecond, from the one step to the next period's.
    assert_eq!(
        Schedule::new(vec![], Some(ns(1))),
        Err(ScheduleError::TooFine {
            previous: ns(0),
            at: ns(1),
            gap: ns(1)
        })
    );
    assert!(matches!(
        Schedule::new(vec![(ms(1), 1), (ns(1_500_000), 2)], None),
        Err(ScheduleError::TooFine { .. })
    ));
    // Across the end of the period too: the last change at 59.9995 s of 60 s.
    assert!(matches!(
        Schedule::new(vec![(ns(59_999_500_000), 1)], Some(ms(60_000))),
        Err(ScheduleError::TooFine { .. })
    ));
    assert!(Schedule::new(vec![(ms(1), 1), (ms(2), 2)], Some(ms(3))).is_ok());
    let steps = |n: u64| (1..=n).map(|i| (ms(i), 1)).collect::<Vec<_>>();
    assert!(Schedule::new(steps(MAX_STEPS as u64 - 1), None).is_ok());
    assert_eq!(
        Schedule::new(steps(MAX_STEPS as u64), None),
        Err(ScheduleError::TooMany {
            steps: MAX_STEPS + 1
        })
    );
}
