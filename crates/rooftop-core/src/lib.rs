//! rooftop-core: the pure analysis core of rooftop.
//!
//! Data flows one way: an operation's [`ops::Work`] (FLOPs and bytes) and a
//! [`device::DeviceSpec`] go into [`roofline`], which gives the floor time, the bound and,
//! with a measured time, the achieved rates and attainment; [`gemm_tiles`] and
//! [`occupancy`] add GEMM tile/wave efficiency and theoretical occupancy; [`diagnose`]
//! turns the numbers into findings with evidence and advice; [`analysis`] runs the whole
//! pipeline for one kernel. [`schema`] holds the records the commands export and read back;
//! [`stats`] the statistics of samples.
//!
//! This crate does no I/O: the only data it parses is the embedded device catalog and
//! strings handed to it (kernel names, device files read by the caller).

pub mod analysis;
pub mod counters;
pub mod device;
pub mod diagnose;
pub mod error;
pub mod gemm_tiles;
pub mod limits;
pub mod model;
pub mod occupancy;
pub mod ops;
pub mod roofline;
pub mod schema;
pub mod stats;
pub mod trace;
pub mod units;

pub use error::InputError;

/// The types most programs against this crate need, in one `use`:
///
/// ```
/// use rooftop_core::prelude::*;
///
/// // A 4096³ bf16 GEMM on an H100 SXM (989.4 dense bf16 TFLOP/s), measured at 210 µs:
/// // 2 x 4096³ = 137.4 GFLOP in 210 µs is 654 TFLOP/s, 66.1% of the roof.
/// let catalog = Catalog::builtin();
/// let h100 = catalog.lookup("h100-sxm")?;
/// let work = GemmSpec::new(4096, 4096, 4096, Precision::Bf16).work()?;
/// let r = roofline(&work, h100, Some(210_000), &[])?;
/// assert_eq!(r.bound, Bound::Compute);
/// let achieved = r.achieved.expect("a time was given");
/// assert!((achieved.achieved_tflops - 654.5).abs() < 0.1);
/// assert!((achieved.compute_utilization_pct - 66.1).abs() < 0.1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub mod prelude {
    pub use crate::device::{Catalog, DeviceSpec};
    pub use crate::diagnose::{Finding, Severity};
    pub use crate::ops::gemm::GemmSpec;
    pub use crate::ops::Work;
    pub use crate::roofline::{roofline, Bound, Roofline};
    pub use crate::trace::report::{analyze as analyze_trace, TraceOptions, TraceReport};
    pub use crate::trace::tables::OpRow;
    pub use crate::trace::TraceModel;
    pub use crate::units::Precision;
    pub use crate::InputError;
}
