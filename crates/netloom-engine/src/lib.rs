//! The event engine.
