//! netloom's topology: the file format (`doc`), the resolved model (`model`), units, loading with
//! validation, writing, summaries and generators. It knows nothing of time passing, routing or
//! packets.

mod addressing;
pub mod bundle;
mod data;
pub mod doc;
pub mod error;
pub mod export;
mod format;
#[doc(hidden)]
pub mod fuzzing;
pub mod gen;
pub mod import;
mod layer;
pub mod load;
mod locate;
pub mod model;
mod patch;
mod plan;
pub mod read;
mod routing;
mod schema;
pub mod shown;
pub mod summary;
pub mod units;
pub mod write;

pub use addressing::{MAX_CPU, MIN_CPU};
pub use bundle::Bundle;
pub use error::{Diagnostic, ErrorKind, TopoError};
pub use import::{
    import_path, import_str, HostPlan, HostPlanError, ImportOptions, Imported, InputFormat,
};
pub use load::{load_path, load_path_as, load_str, parse_str, resolve, Format};
pub use model::*;
pub use patch::{LinkPatch, PatchError};
pub use routing::{KernelRouting, RoutingDaemon, RoutingProtocol, MAX_ASN};
pub use schema::did_you_mean;
pub use shown::{shown, Shown};
pub use summary::{summarize, Summary};
