//! netloom's topology: the file format (`doc`), the resolved model (`model`), units, loading with
//! validation, and generators. It knows nothing of time passing, routing or packets.

pub mod doc;
pub mod gen;
pub mod model;

pub use model::*;
