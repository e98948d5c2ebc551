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
    pub(super) fn report(&mut self, label: String, func: &CudaFunction, block: [u32; 3]) -> usize {
        if let Some(i) = self.reports.iter().position(|r| r.label == label) {
            return i;
        }
        if let Some(entry) = label.split_whitespace().find(|w| w.starts_with("rt_")).or_else(|| {
            label.split_whitespace().nth(1).map(|w| w.trim_matches(|c| c == '[' || c == ']'))
        }) {
            if !self.funcs.iter().any(|(l, _)| l == entry) {
                self.funcs.push((entry.to_string(), func.clone()));
            }
        }
        let regs = func.num_regs().unwrap_or(0).max(0) as u32;
        let smem = func.shared_size_bytes().unwrap_or(0).max(0) as u32;
        let threads = block[0] * block[1] * block[2];
        let occ = self.spec.as_ref().and_then(|s| {
            rooftop_core::occupancy::occupancy(
                s,
                &rooftop_core::occupancy::KernelResources {
                    threads_per_block: threads,
                    regs_per_thread: Some(regs),
                    smem_bytes: u64::from(smem),
                    ..Default::default()
                },
            )
            .ok()
        });
        self.reports.push(LaunchReport {
            label,
            regs_per_thread: regs,
            static_smem_bytes: smem,
            threads_per_block: threads,
            occupancy_pct: occ.as_ref().map(|o| o.occupancy_pct),
            blocks_per_sm: occ.as_ref().map(|o| o.blocks_per_cu),
            limiter: occ.as_ref().map(|o| o.limiter.as_str().to_string()),
            stream_s: None,
            graph_s: None,
        });
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
            let r = self.report(label.clone(), &func, block);
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
