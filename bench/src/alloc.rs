//! Live heap bytes of the whole process, for `memory`: what the instrumented system allocator
//! (stats_alloc, installed in main.rs) counts as requested and not yet freed, not the
//! allocator's own overhead.

use stats_alloc::INSTRUMENTED_SYSTEM;

/// Heap bytes allocated and not yet freed.
pub fn live() -> usize {
    // A reallocation already adds its growth to the allocated bytes, or its shrinking to the
    // freed ones; `bytes_reallocated` only repeats that.
    let s = INSTRUMENTED_SYSTEM.stats();
    s.bytes_allocated.saturating_sub(s.bytes_deallocated)
}
