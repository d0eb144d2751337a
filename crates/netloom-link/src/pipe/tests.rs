//! Tests of the pipe against hand-worked timings and statistical bounds.
