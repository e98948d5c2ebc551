//! Collectives across ranks: what each rank's communication kernels were
//! ([`record`]), how the same collective is found on every member of its process group
//! ([`reduce`]), and what the matched instances show ([`metrics`]: transfer time,
//! algorithm and bus bandwidth, arrival skew and wait; [`alltoall`]: split imbalance;
//! [`findings`]: stragglers, slow collectives, imbalance).
//!
//! Definitions follow TraceLens's `NcclAnalyser` (`build_df_nccl_implicit_sync_cat`,
//! `build_df_straggler_summary`) where it has one, with decimal units:
//! - transfer time of an instance: the shortest kernel duration across its ranks (the
//!   rank that arrived last waits least, so its kernel is closest to pure transfer);
//! - start skew: latest start minus earliest start; end skew likewise for ends;
//! - wait of a rank: latest start minus its start; the rank that started last is the
//!   instance's straggler and *causes* the sum of the others' waits;
//! - bandwidths by the NCCL-tests formulas ([`kind`]), in GB/s = 10^9 bytes/s (TraceLens
//!   prints MiB-based "GB/s", i.e. GiB/s).
//!
//! Start times are compared on a common clock: each rank's `ts` plus its trace's
//! `baseTimeNanoseconds` (Kineto writes `ts` relative to a per-process base).

pub mod alltoall;
pub mod findings;
pub mod interconnect;
pub mod kind;
pub mod metrics;
pub mod record;
pub mod reduce;

pub use interconnect::{Interconnects, Link, LinkChoice, Scope};
pub use kind::CollectiveKind;
pub use record::{collectives, ArgsFrom, CollectiveRecord};

use crate::diagnose::Finding;
use crate::trace::model::TraceWarning;
use serde::Serialize;

/// One row of the collectives table: every matched instance of one kind, message size
/// and dtype in one process group.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct CollectiveRow {
    /// `Process Group Description` when recorded (`default_pg`, `mesh_tp`), else its
    /// name; `(no process group)` for traces without one.
    pub process_group: String,
    pub kind: CollectiveKind,
    /// `Collective name` as recorded (the kind when nothing was recorded).
    pub collective: String,
    pub dtype: Option<String>,
    /// Message size `S` (see [`kind`]), bytes; `None` when unknown.
    pub message_bytes: Option<u64>,
    pub group_size: u32,
    pub scope: Scope,
    pub count: u64,
    /// Sum of the instances' transfer times.
    pub transfer_total_ms: f64,
    pub transfer_mean_us: f64,
    pub transfer_min_us: f64,
    pub transfer_max_us: f64,
    /// `message_bytes / transfer_mean`, GB/s.
    pub algbw_gbs: Option<f64>,
    /// `algbw_gbs` times the NCCL-tests factor of the kind.
    pub busbw_gbs: Option<f64>,
    /// The link of this scope from the interconnect catalog and its per-GPU bandwidth.
    pub peak_link: Option<String>,
    pub peak_busbw_gbs: Option<f64>,
    /// `busbw_gbs / peak_busbw_gbs`, percent (uncapped).
    pub busbw_pct_of_peak: Option<f64>,
    pub start_skew_mean_us: f64,
    pub start_skew_max_us: f64,
    pub end_skew_mean_us: f64,
    pub end_skew_max_us: f64,
    /// Waits of all ranks in all instances, summed.
    pub wait_total_ms: f64,
    /// Mean wait of one rank in one instance.
    pub wait_mean_us: f64,
}

/// One rank's part in the matched synchronising instances.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Straggler {
    pub rank: i64,
    /// Its label in the rank table (`rank 5 (rank5.json)`).
    pub name: String,
    /// Matched instances it took part in.
    pub collectives: u64,
    /// Instances it started last / first (ranks tied for last are each counted).
    pub times_last: u64,
    pub times_first: u64,
    /// `times_last / collectives`, percent.
    pub pct_last: f64,
    /// Its own waits, summed.
    pub wait_suffered_ms: f64,
    /// The others' waits in the instances it started last, summed (shared equally
    /// among ranks tied for last).
    pub wait_caused_ms: f64,
    /// Profiler steps (`ProfilerStep#N` annotations) in its trace.
    pub steps: u64,
    /// `wait_caused_ms / steps`, when the trace has steps.
    pub wait_caused_per_step_ms: Option<f64>,
    /// Mean computation it ran before the instances it started last
    /// ([`CollectiveRecord::compute_before_ns`]), and the others' mean before the same
    /// instances.
    pub compute_before_when_last_us: Option<f64>,
    pub others_compute_before_us: Option<f64>,
    /// The longest computation before the instances it started last, most often (its
    /// launching op, else the kernel).
    pub late_after: Option<String>,
}

/// All-to-all traffic of one process group.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct AllToAllGroup {
    pub process_group: String,
    pub group_size: u32,
    /// Global ranks in group order.
    pub members: Vec<i64>,
    /// Instances whose per-destination sizes are known.
    pub count: u64,
    /// Bytes sent by all members over all instances.
    pub total_bytes: u64,
    /// Per instance: the largest member's send bytes over the members' mean; mean and
    /// maximum over instances (1 = perfectly even).
    pub imbalance_mean: f64,
    pub imbalance_max: f64,
    /// The member that sent the most bytes in total.
    pub heaviest_sender: Option<i64>,
    /// Bytes each member sent / received, in `members` order.
    pub send_bytes: Vec<u64>,
    pub recv_bytes: Vec<u64>,
    /// `matrix_bytes[i][j]`: bytes member `i` sent to member `j`, for groups of at
    /// most [`alltoall::MATRIX_MAX_RANKS`] ranks.
    pub matrix_bytes: Option<Vec<Vec<u64>>>,
}

/// One process group as the matching saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct GroupRow {
    /// `Process Group Name`.
    pub name: String,
    pub description: Option<String>,
    pub group_size: u32,
    /// Members as recorded (`None` when the trace truncated the list and it could not
    /// be rebuilt); the ranks seen with this group otherwise.
    pub members: Option<Vec<i64>>,
    /// How instances were keyed: `seq` (the recorded `Seq`) or `order` (start order).
    pub matched_by: String,
    /// Instances on every member and consistent.
    pub matched: u64,
    /// Instances some member's trace lacks (outside its profiling window, or its trace
    /// is missing).
    pub incomplete: u64,
    /// Instances whose members disagree on kind, dtype or size.
    pub inconsistent: u64,
}

/// The collective analysis of a multi-rank run.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct CollectiveAnalysis {
    /// `--gpus-per-node` (`None`: intra/inter-node unknown).
    pub gpus_per_node: Option<u32>,
    /// The links bus bandwidth is compared with.
    pub links: LinkChoice,
    /// Communication kernels read, all ranks.
    pub kernels: u64,
    /// Matched instances (one per collective call, all its ranks).
    pub matched: u64,
    pub rows: Vec<CollectiveRow>,
    pub groups: Vec<GroupRow>,
}

/// What the reduce adds to the cross-rank report.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct CommReport {
    pub collectives: CollectiveAnalysis,
    /// Ranks by the wait they caused, largest first.
    pub stragglers: Vec<Straggler>,
    pub all_to_all: Vec<AllToAllGroup>,
    pub findings: Vec<Finding>,
    /// What the reduce skipped and why (missing or duplicate ranks, mismatched world
    /// sizes, collectives it could not match).
    pub warnings: Vec<TraceWarning>,
}
