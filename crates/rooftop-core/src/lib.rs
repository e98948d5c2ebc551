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
