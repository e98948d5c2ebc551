//! Prepared calls: a [`KernelCall`] planned (by [`plan`](super::plan)) into steps with
//! device addresses, occupancy recorded per launch, and steps enqueued on the stream.

use super::blas::lt_plan;
use super::plan::{self, ArgSpec, StepSpec};
use super::{driver_err, ffi, CudaBackend, LaunchReport};
use crate::backend::{KernelCall, Scalar};
use crate::error::BackendError;
use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr};

/// One step of a prepared call, with device addresses.
#[derive(Debug)]
pub(super) enum Step {
    Kernel { func: CudaFunction, grid: [u32; 3], block: [u32; 3], args: Vec<ffi::Arg> },
    Blas { double: bool, m: i32, n: i32, k: i32, a: u64, b: u64, c: u64 },
    Lt { plan: ffi::LtPlan, a: u64, b: u64, d: u64 },
}

/// A prepared call.
pub(super) struct Plan {
    pub(super) key: String,
    pub(super) label: String,
    pub(super) steps: Vec<Step>,
    pub(super) _scratch: Vec<CudaSlice<u8>>,
    /// Only our kernels are captured in graphs (cuBLAS handles its own workspace).
    pub(super) graphable: bool,
    pub(super) graph: Option<(u32, cudarc::driver::CudaGraph)>,
    pub(super) stream_per_run_s: Option<f64>,
    pub(super) reports: Vec<usize>,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("key", &self.key)
            .field("steps", &self.steps.len())
            .finish_non_exhaustive()
    }
}

impl CudaBackend {
    /// The report of a launch of `func` (entry point `entry`), recorded once per label;
    /// the function is kept for [`CudaBackend::occupancy_checks`].
    pub(super) fn report(
        &mut self,
        label: String,
        entry: &str,
        func: &CudaFunction,
        block: [u32; 3],
    ) -> usize {
        if let Some(i) = self.reports.iter().position(|r| r.label == label) {
            return i;
        }
        if !self.funcs.iter().any(|(e, _)| e == entry) {
            self.funcs.push((entry.to_string(), func.clone()));
        }
        let regs = func.num_regs().map_err(|e| format!("{e:?}"));
        let smem = func.shared_size_bytes().map_err(|e| format!("{e:?}"));
        let report = launch_report(label, regs, smem, block, self.spec.as_ref());
        self.reports.push(report);
        self.reports.len() - 1
    }

    pub(super) fn note_once(&mut self, key: String, note: String) {
        if self.noted.insert(key) {
            self.info.notes.push(note);
        }
    }

    pub(super) fn build(&mut self, call: &KernelCall<'_>) -> Result<Plan, BackendError> {
        let mut bufs = Vec::with_capacity(call.buffers.len());
        let mut ptrs = Vec::with_capacity(call.buffers.len());
        for id in call.buffers {
            let b = self.buf(*id)?;
            bufs.push((b.dtype, b.len));
            ptrs.push(b.ptr);
        }
        let key = plan_key(call);
        if let Some(u) = self.user.get(call.implementation) {
            // A user kernel: buffers, then scalars, on the call's grid and block.
            let (Some(grid), Some(block)) = (call.launch.grid, call.launch.block) else {
                return Err(BackendError::BadLaunch(format!(
                    "the CUDA kernel `{}` from source needs a grid and a block",
                    call.implementation
                )));
            };
            let mut args: Vec<ffi::Arg> = ptrs.iter().map(|&p| ffi::Arg::Ptr(p)).collect();
            args.extend(call.scalars.iter().map(|s| match *s {
                Scalar::U32(v) => ffi::Arg::U32(v),
                Scalar::I32(v) => ffi::Arg::I32(v),
                Scalar::F32(v) => ffi::Arg::F32(v),
            }));
            let func = u.func.clone();
            let label = format!(
                "{} [{}] grid={} block={}",
                call.case.kernel,
                call.implementation,
                dims(grid),
                dims(block)
            );
            let r = self.report(label.clone(), call.implementation, &func, block);
            return Ok(Plan {
                key,
                label,
                steps: vec![Step::Kernel { func, grid, block, args }],
                _scratch: Vec::new(),
                graphable: true,
                graph: None,
                stream_per_run_s: None,
                reports: vec![r],
            });
        }
        let spec = plan::plan(call.case, call.implementation, call.launch, &bufs, &self.attrs)?;
        let mut scratch = Vec::new();
        let mut sptr = Vec::new();
        for &b in &spec.scratch_bytes {
            let s = self.alloc_bytes(usize::try_from(b).unwrap_or(usize::MAX))?;
            let (p, _) = s.device_ptr(&self.stream);
            sptr.push(p);
            scratch.push(s);
        }
        let resolve = |a: &ArgSpec| -> ffi::Arg {
            match *a {
                ArgSpec::Buf(i) => ffi::Arg::Ptr(ptrs[i]),
                ArgSpec::Scratch(i) => ffi::Arg::Ptr(sptr[i]),
                ArgSpec::Null => ffi::Arg::Ptr(0),
                ArgSpec::U32(v) => ffi::Arg::U32(v),
                ArgSpec::U64(v) => ffi::Arg::U64(v),
            }
        };
        let ptr_of = |a: &ArgSpec| match resolve(a) {
            ffi::Arg::Ptr(p) => p,
            _ => 0,
        };
        let label = format!(
            "{} {} [{}] {}",
            call.case.kernel,
            call.case.label(),
            call.implementation,
            call.launch.label()
        );
        let mut steps = Vec::new();
        let mut reports = Vec::new();
        let mut graphable = true;
        for (timed, s) in
            spec.prep.iter().map(|s| (false, s)).chain(spec.steps.iter().map(|s| (true, s)))
        {
            let step = match s {
                StepSpec::Kernel { source, entry, grid, block, args } => {
                    let func = self.function(source, entry)?;
                    if timed {
                        let r = self.report(
                            format!(
                                "{} [{}] {entry} grid={} block={}",
                                call.case.kernel,
                                call.implementation,
                                dims(*grid),
                                dims(*block)
                            ),
                            entry,
                            &func,
                            *block,
                        );
                        reports.push(r);
                    }
                    Step::Kernel {
                        func,
                        grid: *grid,
                        block: *block,
                        args: args.iter().map(resolve).collect(),
                    }
                }
                StepSpec::Blas { double, m, n, k } => {
                    graphable = false;
                    self.blas_handle()?;
                    Step::Blas {
                        double: *double,
                        m: *m,
                        n: *n,
                        k: *k,
                        a: ptrs[0],
                        b: ptrs[1],
                        c: ptrs[2],
                    }
                }
                StepSpec::Lt { kind, m, n, k, a, b, d } => {
                    graphable = false;
                    self.lt_handle()?;
                    let lt = lt_plan(self, *kind, *m, *n, *k)?;
                    Step::Lt { plan: lt, a: ptr_of(a), b: ptr_of(b), d: ptr_of(d) }
                }
            };
            if timed {
                steps.push(step);
            } else {
                // Preparation (operand conversion) runs now, untimed.
                self.enqueue(&step)?;
            }
        }
        self.stream.synchronize().map_err(|e| driver_err("preparing the call", e))?;
        Ok(Plan {
            key,
            label,
            steps,
            _scratch: scratch,
            graphable,
            graph: None,
            stream_per_run_s: None,
            reports,
        })
    }

    pub(super) fn enqueue(&self, step: &Step) -> Result<(), BackendError> {
        match step {
            Step::Kernel { func, grid, block, args } => {
                ffi::launch(&self.stream, func, *grid, *block, args).map_err(|e| {
                    BackendError::BadLaunch(format!(
                        "cuLaunchKernel grid={} block={}: {e:?}",
                        dims(*grid),
                        dims(*block)
                    ))
                })
            }
            Step::Blas { double, m, n, k, a, b, c } => {
                let h = self
                    .blas
                    .as_ref()
                    .ok_or_else(|| BackendError::Other("no cuBLAS handle".into()))?;
                ffi::cublas_gemm(h.0, *double, *m, *n, *k, *a, *b, *c).map_err(BackendError::Other)
            }
            Step::Lt { plan, a, b, d } => {
                let (h, _, ws) = self
                    .lt
                    .as_ref()
                    .ok_or_else(|| BackendError::Other("no cuBLASLt handle".into()))?;
                plan.run(h, &self.stream, *a, *b, *d, *ws).map_err(BackendError::Other)
            }
        }
    }

    pub(super) fn enqueue_plan(&self, plan: &Plan, runs: u32) -> Result<(), BackendError> {
        for _ in 0..runs {
            for s in &plan.steps {
                self.enqueue(s)?;
            }
        }
        Ok(())
    }
}

pub(super) fn dims(d: [u32; 3]) -> String {
    format!("{}x{}x{}", d[0], d[1], d[2])
}

pub(super) fn plan_key(call: &KernelCall<'_>) -> String {
    format!(
        "{}|{}|{}|{}|{:?}|{:?}",
        call.case.kernel,
        call.case.label(),
        call.implementation,
        call.launch.label(),
        call.buffers,
        call.scalars
    )
}

/// A launch's registers, static shared memory and theoretical occupancy from what the
/// driver reported: a value it did not report (or reported as negative) is unknown, and
/// so is the occupancy, with the reason; never computed from a stand-in 0.
pub(super) fn launch_report(
    label: String,
    regs: Result<i32, String>,
    smem: Result<i32, String>,
    block: [u32; 3],
    spec: Option<&rooftop_core::device::DeviceSpec>,
) -> LaunchReport {
    let read = |what: &str, r: Result<i32, String>| match r {
        Ok(v) => u32::try_from(v).map_err(|_| format!("the driver reported {v} {what}")),
        Err(e) => Err(format!("the driver did not report its {what} ({e})")),
    };
    let regs = read("registers per thread", regs);
    let smem = read("static shared memory", smem);
    let threads = block[0] * block[1] * block[2];
    let occupancy = match (&regs, &smem, spec) {
        (Ok(r), Ok(s), Some(spec)) => rooftop_core::occupancy::occupancy(
            spec,
            &rooftop_core::occupancy::KernelResources {
                threads_per_block: threads,
                regs_per_thread: Some(*r),
                smem_bytes: u64::from(*s),
                ..Default::default()
            },
        )
        .map_err(|e| e.to_string()),
        (Err(e), _, _) | (_, Err(e), _) => Err(e.clone()),
        (_, _, None) => Err("no device spec for the occupancy calculator".to_string()),
    };
    let (occ, unknown) = match occupancy {
        Ok(o) => (Some(o), None),
        Err(why) => (None, Some(why)),
    };
    LaunchReport {
        label,
        regs_per_thread: regs.ok(),
        static_smem_bytes: smem.ok(),
        threads_per_block: threads,
        occupancy_pct: occ.as_ref().map(|o| o.occupancy_pct),
        blocks_per_sm: occ.as_ref().map(|o| o.blocks_per_cu),
        limiter: occ.as_ref().map(|o| o.limiter.as_str().to_string()),
        occupancy_unknown: unknown,
        stream_s: None,
        graph_s: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::info::h100_sxm_attributes;
    use crate::cuda::timing::occupancy_note;

    #[test]
    fn occupancy_needs_the_registers_and_shared_memory_the_driver_reports() {
        let spec = h100_sxm_attributes().device_spec(&[]).unwrap();
        // By hand (H100: 65536 registers, 2048 threads, 32 blocks per SM): 256 threads x
        // 32 registers = 8192 per block, so 8 blocks = 2048 threads = 64 of 64 warps.
        let ok = launch_report("k".into(), Ok(32), Ok(0), [256, 1, 1], Some(&spec));
        assert_eq!((ok.occupancy_pct, ok.blocks_per_sm), (Some(100.0), Some(8)));
        assert!(occupancy_note(&ok).contains("theoretical occupancy 100% (8 blocks/SM"));
        // A failed register query: unknown, with the reason, never an occupancy computed
        // from a stand-in of 0 registers.
        let r = launch_report(
            "k".into(),
            Err("CUDA_ERROR_INVALID_HANDLE".into()),
            Ok(0),
            [256, 1, 1],
            Some(&spec),
        );
        assert_eq!((r.regs_per_thread, r.occupancy_pct, r.blocks_per_sm), (None, None, None));
        let why = r.occupancy_unknown.clone().unwrap();
        assert!(why.contains("registers per thread") && why.contains("INVALID_HANDLE"), "{why}");
        let note = occupancy_note(&r);
        assert!(note.contains("unknown registers/thread"), "{note}");
        assert!(
            note.contains("theoretical occupancy unknown (the driver did not report"),
            "{note}"
        );
        // A negative shared-memory size is no size either.
        let r = launch_report("k".into(), Ok(32), Ok(-1), [256, 1, 1], Some(&spec));
        assert_eq!((r.static_smem_bytes, r.occupancy_pct), (None, None));
        assert!(r.occupancy_unknown.unwrap().contains("-1 static shared memory"));
        // No device spec: unknown too.
        let r = launch_report("k".into(), Ok(32), Ok(0), [256, 1, 1], None);
        assert!(r.occupancy_pct.is_none() && r.occupancy_unknown.is_some());
    }
}
