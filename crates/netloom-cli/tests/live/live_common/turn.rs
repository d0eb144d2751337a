//! The turn: the live binary's tests run one at a time, whichever module they are in.
//!
//! Every test of the live binary takes the turn for its whole run: `Lab::new` takes it (the
//! `Lab` holds it), and a test that makes no `Lab`, or makes one through a helper, takes it
//! itself first with `let _turn = live_common::turn();`. The tests of all its modules share
//! one process, one machine's two CPUs and its namespaces, and most of them measure timing.
//!
//! The turn is re-entrant on the thread that holds it: a test that took it and then makes a
//! `Lab` (or two) holds it once more, not waits for itself. A `Turn` cannot be sent to another
//! thread, so it is given back on the thread that took it.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::{Mutex, MutexGuard};

/// Two emulators spinning on a 2-vCPU machine would starve each other and the programs under
/// test; one test's flood would be another's noise.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

thread_local! {
    /// The lock while this thread holds the turn, and how many `Turn`s of it are alive.
    static HELD: RefCell<(Option<MutexGuard<'static, ()>>, usize)> = const { RefCell::new((None, 0)) };
}

/// A hold on the turn; the turn is given back when the thread's last `Turn` is dropped.
#[must_use = "the turn is given back as soon as the Turn is dropped"]
pub struct Turn {
    /// As a `MutexGuard`: not `Send` (the thread-local count it belongs to is its taker's),
    /// but `Sync`, as a `Lab` that holds it is lent to scoped threads.
    _here: PhantomData<MutexGuard<'static, ()>>,
}

/// Waits for the turn, or takes it once more if this thread holds it already.
pub fn turn() -> Turn {
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        if held.1 == 0 {
            // A test that failed while holding the lock poisoned it; the next may still run.
            held.0 = Some(ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner()));
        }
        held.1 += 1;
    });
    Turn { _here: PhantomData }
}

impl Drop for Turn {
    fn drop(&mut self) {
        HELD.with(|held| {
            let mut held = held.borrow_mut();
            held.1 -= 1;
            if held.1 == 0 {
                held.0 = None;
            }
        });
    }
}

/// A test that holds the turn takes it again without waiting for itself, and another thread
/// gets it only when the last of the first thread's holds is given back.
#[test]
fn the_turn_is_re_entrant_and_one_thread_s_at_a_time() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;
    let outer = turn();
    let inner = turn();
    let other_has_it = Arc::new(AtomicBool::new(false));
    let other = {
        let other_has_it = other_has_it.clone();
        std::thread::spawn(move || {
            let _turn = turn();
            other_has_it.store(true, Ordering::SeqCst);
        })
    };
    std::thread::sleep(Duration::from_millis(100));
    assert!(!other_has_it.load(Ordering::SeqCst), "taken twice at once");
    drop(inner);
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !other_has_it.load(Ordering::SeqCst),
        "taken while one hold of it was left"
    );
    drop(outer);
    other.join().unwrap();
    assert!(other_has_it.load(Ordering::SeqCst));
}

/// The ways a test takes the turn, as its body reads: itself, or by making a lab that holds it
/// (live_common's `Lab`, hostile_shape's `Lab`, live_shape's `Turn`).
const TAKES_THE_TURN: [&str; 3] = ["turn()", "Lab::new(", "Turn::new("];

/// Reads every source file of this binary and fails, naming them, on the tests whose bodies
/// take the turn in none of the ways of `TAKES_THE_TURN`: a test that makes its lab through a
/// helper takes it itself too (it is re-entrant), so the body shows it.
#[test]
fn every_test_takes_the_turn() {
    let _turn = turn();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/live");
    let mut files = vec![dir];
    let (mut tests, mut without) = (0, Vec::new());
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // rustfmt puts a test's `#[test]` at the start of a line and its closing brace alone
        // on one.
        for test in text.split("\n#[test]\n").skip(1) {
            let body = test.split("\n}\n").next().unwrap();
            tests += 1;
            if !TAKES_THE_TURN.iter().any(|way| body.contains(way)) {
                let name = body.split("fn ").nth(1).unwrap_or(body);
                let name = name.split('(').next().unwrap();
                without.push(format!("{}: {name}", path.display()));
            }
        }
    }
    assert!(tests > 100, "only {tests} tests found under tests/live");
    assert!(
        without.is_empty(),
        "tests that do not take the turn: {without:#?}"
    );
}
