//! Doing many slow removals at once: namespaces and `/etc/netns` directories of a testbed.

use crate::OsError;
use std::sync::Mutex;

/// Threads that remove namespaces or `/etc/netns` directories at once. An unmount waits for an
/// RCU grace period after it, and removing a directory of `/etc` waits for its file system;
/// done from many threads the waits overlap (2,000 hosts: `netloom stop` 5.7 s before, 2.3 s
/// after; docs/performance.md, "10,000 hosts").
const REMOVERS: usize = 64;

/// Runs `each` on every item from up to `threads` threads at once and collects what it returns,
/// in no particular order. The calling thread is one of them, so every item is done even where
/// no thread can be made.
fn in_parallel<T: Send, R: Send>(
    items: Vec<T>,
    threads: usize,
    each: impl Fn(T) -> Option<R> + Sync,
) -> Vec<R> {
    let helpers = threads.min(items.len()).saturating_sub(1);
    let queue = Mutex::new(items);
    let results = Mutex::new(Vec::new());
    let work = || loop {
        let Some(item) = queue.lock().expect("no panics while held").pop() else {
            break;
        };
        if let Some(result) = each(item) {
            results.lock().expect("no panics while held").push(result);
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..helpers {
            // Where no thread can be made, the others do its share.
            let _ = std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn_scoped(scope, work);
        }
        work();
    });
    results.into_inner().expect("workers have ended")
}

/// Removes every name of `names` with `remove`, many at once, keeping those that failed (to
/// retry) in their order; the error of the first of them goes to `first_error` unless it holds
/// one already.
pub(crate) fn remove_in_parallel(
    names: &mut Vec<String>,
    remove: fn(&str) -> Result<bool, OsError>,
    first_error: &mut Option<OsError>,
) {
    let items: Vec<_> = std::mem::take(names).into_iter().enumerate().collect();
    let mut failed = in_parallel(items, REMOVERS, |(i, name)| {
        remove(&name).err().map(|err| (i, name, err))
    });
    failed.sort_by_key(|(i, _, _)| *i);
    for (_, name, err) in failed {
        first_error.get_or_insert(err);
        names.push(name);
    }
}
