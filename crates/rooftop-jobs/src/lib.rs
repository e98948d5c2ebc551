//! rooftop-jobs: multi-rank analysis past one machine, submitted to the engine the cluster
//! already has. rooftop never schedules work across machines itself
//! (docs/multi-rank.md#past-one-machine-slurm): it writes job scripts and hands them to the
//! scheduler.
//!
//! [`slurm`]: an `sbatch --array` job whose task `i` maps the `i`-th rank's trace to
//! its Parquet tables (`rooftop trace RANK --format parquet -o TABLES/<stem>`), and a
//! reduce job that runs after it (`--dependency=afterany`, so ranks whose map failed
//! show up in the report as missing ranks rather than blocking it) and writes the
//! cross-rank report (`rooftop trace TABLES`). Kubernetes (an Indexed Job) and Ray run
//! the same two commands; `docs/multi-rank.md` shows how.
//!
//! [`trace_dir`]: the plan of `rooftop trace DIR --slurm` from its settings, and the
//! text that shows it.

pub mod slurm;
pub mod trace_dir;

pub use slurm::{JobError, SlurmPlan, Submitted};
