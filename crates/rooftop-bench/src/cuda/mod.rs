//! The CUDA backend: NVIDIA GPUs through the driver API, kernels in CUDA C compiled at
//! run time by NVRTC, cuBLAS / cuBLASLt GEMMs as built-in implementations, timing with
//! CUDA events. Everything is loaded dynamically (cudarc `dynamic-loading`): a build
//! with the `cuda` feature runs on machines without CUDA and says so in one sentence.
//!
//! Invariants:
//! - [`CudaBackend::open`] probes the driver, NVRTC and cuBLAS libraries before any
//!   other cudarc call (a missing library panics inside cudarc);
//! - a run is timed by two events (timing enabled) around `iters` back-to-back runs on
//!   one stream, and the elapsed time is read after the end event completed; runs
//!   shorter than [`GRAPH_BELOW_S`] are replayed from a CUDA graph of up to
//!   [`GRAPH_LAUNCHES`] runs (the note says both times);
//! - every launch is planned by [`plan`] against the suite's buffer specs first;
//! - `unsafe` lives in `ffi.rs` alone.

// m, n, k, a, b, c: the names of the GEMM formulas.
#![allow(clippy::many_single_char_names)]

mod blas;
mod ceilings;
mod device;
mod ffi;
pub mod info;
mod launch;
mod memory;
mod nvrtc;
pub mod plan;
mod timing;

pub use ceilings::ceiling_options_for;
pub use device::{check_versions, list_devices, pick_device, version_label};
pub use memory::{from_bytes, host_bytes};

use crate::backend::{
    Backend, BackendInfo, BufId, DType, HostBuf, Implementation, KernelCall, Launch, SourceKernel,
    SourceLang,
};
use crate::case::{Case, KernelRef};
use crate::ceilings::{CeilingOptions, Ceilings};
use crate::error::BackendError;
use crate::harness::TimingOptions;
use cudarc::driver::{sys, CudaContext, CudaEvent, CudaModule, CudaSlice, CudaStream, DevicePtr};
use device::{device_names, probe, query};
use info::DeviceAttributes;
use launch::{plan_key, Plan};
use memory::DevBuf;
use nvrtc::UserKernel;
use rooftop_core::device::DeviceSpec;
use rooftop_core::units::Precision;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Runs shorter than this are timed from CUDA graph replays (launch gaps removed).
pub const GRAPH_BELOW_S: f64 = 1e-3;
/// Most runs captured in one graph.
pub const GRAPH_LAUNCHES: u32 = 256;

/// One GPU as `rooftop devices --local` lists it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CudaDeviceSummary {
    pub ordinal: u32,
    pub name: String,
    pub attributes: DeviceAttributes,
    /// The catalog id the name matches, if any.
    pub catalog_id: Option<String>,
    pub driver_version: String,
}

/// What one launch of a plan uses, and its theoretical occupancy.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LaunchReport {
    /// `gemm [rooftop] rt_gemm_t64_f32 grid=16x16x1 block=256x1x1`.
    pub label: String,
    /// `None` when the driver did not report it (never a stand-in 0).
    pub regs_per_thread: Option<u32>,
    pub static_smem_bytes: Option<u32>,
    pub threads_per_block: u32,
    /// From `rooftop_core::occupancy` (None when it could not be computed).
    pub occupancy_pct: Option<f64>,
    pub blocks_per_sm: Option<u32>,
    pub limiter: Option<String>,
    /// Why the occupancy is unknown, when it is.
    pub occupancy_unknown: Option<String>,
    /// Seconds per run launched on the stream, and replayed from a graph (when used).
    pub stream_s: Option<f64>,
    pub graph_s: Option<f64>,
}

/// One launch configuration of [`CudaBackend::occupancy_checks`]: the driver's resident
/// blocks per SM beside rooftop's model.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct OccupancyCheck {
    /// The kernel's entry point.
    pub kernel: String,
    pub regs_per_thread: u32,
    pub static_smem_bytes: u32,
    pub dynamic_smem_bytes: u32,
    pub threads_per_block: u32,
    /// `cuOccupancyMaxActiveBlocksPerMultiprocessor`.
    pub driver_blocks_per_sm: u32,
    /// `rooftop_core::occupancy` (None when it refused the configuration).
    pub model_blocks_per_sm: Option<u32>,
    pub model_limiter: Option<String>,
}

/// The CUDA backend (module doc).
#[derive(Debug)]
pub struct CudaBackend {
    info: BackendInfo,
    attrs: DeviceAttributes,
    /// The catalog entry, or a spec built from the attributes (for occupancy).
    spec: Option<DeviceSpec>,
    plan: Option<Plan>,
    buffers: Vec<Option<DevBuf>>,
    modules: HashMap<&'static str, Arc<CudaModule>>,
    user: HashMap<String, UserKernel>,
    blas: Option<ffi::BlasHandle>,
    lt: Option<(ffi::LtHandle, CudaSlice<u8>, u64)>,
    blas_present: bool,
    flush: Option<(CudaSlice<u8>, u64, u64)>,
    flush_salt: u32,
    reports: Vec<LaunchReport>,
    /// Each kernel function prepared so far, by entry label (for [`Self::occupancy_checks`]).
    funcs: Vec<(String, cudarc::driver::CudaFunction)>,
    noted: HashSet<String>,
    events: (CudaEvent, CudaEvent),
    nvrtc_version: (i32, i32),
    stream: Arc<CudaStream>,
    ctx: Arc<CudaContext>,
}

fn driver_err(what: &str, e: impl std::fmt::Debug) -> BackendError {
    BackendError::Other(format!("CUDA: {what} failed: {e:?}"))
}

impl CudaBackend {
    /// Opens the GPU `adapter` names (index or part of the name; the first without).
    pub fn open(adapter: Option<&str>) -> Result<CudaBackend, BackendError> {
        let (blas_present, driver, nvrtc_version) = probe()?;
        let names = device_names()?;
        let ordinal = pick_device(&names, adapter)?;
        let ctx = CudaContext::new(ordinal).map_err(|e| driver_err("creating a context", e))?;
        let stream = ctx.new_stream().map_err(|e| driver_err("creating a stream", e))?;
        let attrs = query(&ctx)?;
        let timing = || {
            ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| driver_err("creating an event", e))
        };
        let events = (timing()?, timing()?);
        let mut notes = vec![format!(
            "device {ordinal}: {} ({}), CUDA driver {}, NVRTC {}.{}",
            attrs.summary(),
            attrs.pci,
            version_label(driver),
            nvrtc_version.0,
            nvrtc_version.1
        )];
        let catalog = attrs.catalog_match(rooftop_core::device::Catalog::builtin());
        match &catalog {
            Some(spec) => notes.extend(attrs.compare_with(spec)),
            None => notes.push(format!(
                "`{}` is not in rooftop's catalog: its spec comes from the driver's attributes",
                attrs.name
            )),
        }
        if !blas_present {
            notes.push(
                "cuBLAS / cuBLASLt not loadable (libcublas.so.12/13, libcublasLt.so.12/13): \
                 the built-in GEMMs are unavailable"
                    .to_string(),
            );
        }
        notes.push(
            "the CUDA driver API does not report the current SM clock or temperature (that \
             needs NVML, not linked): clocks may boost or throttle during a run; \
             scripts/gpu-validate.sh records nvidia-smi before and after"
                .to_string(),
        );
        let spec = match catalog {
            Some(s) => Some(s),
            None => attrs.device_spec(&[]).ok(),
        };
        let info = BackendInfo {
            backend: "cuda".to_string(),
            device_name: attrs.name.clone(),
            timer: "CUDA events (timing enabled) around the runs on one stream; runs under 1 ms \
                    replayed from a CUDA graph"
                .to_string(),
            parallelism: attrs.sm_count,
            simulated: false,
            notes,
        };
        Ok(CudaBackend {
            info,
            attrs,
            spec,
            plan: None,
            buffers: Vec::new(),
            modules: HashMap::new(),
            user: HashMap::new(),
            blas: None,
            lt: None,
            blas_present,
            flush: None,
            flush_salt: 0,
            reports: Vec::new(),
            funcs: Vec::new(),
            noted: HashSet::new(),
            events,
            nvrtc_version,
            stream,
            ctx,
        })
    }

    /// What the driver reports about the device.
    pub fn attributes(&self) -> &DeviceAttributes {
        &self.attrs
    }

    /// Registers, shared memory, occupancy and times of every launch prepared so far.
    pub fn launch_reports(&self) -> &[LaunchReport] {
        &self.reports
    }

    /// rooftop's occupancy model against the driver's own calculator
    /// (`cuOccupancyMaxActiveBlocksPerMultiprocessor`, default flags and carveout) for every
    /// kernel function prepared so far, at each block size and dynamic shared-memory size
    /// given. Configurations a function cannot launch (more threads than its
    /// `maxThreadsPerBlock`, more than 48 KiB of shared memory in all) are skipped.
    pub fn occupancy_checks(
        &self,
        block_sizes: &[u32],
        dynamic_smem: &[u32],
    ) -> Result<Vec<OccupancyCheck>, BackendError> {
        let spec = self.spec.as_ref().ok_or_else(|| {
            BackendError::Other("CUDA: no device spec, so no occupancy model to check".into())
        })?;
        let mut out = Vec::new();
        for (label, func) in &self.funcs {
            let regs = func.num_regs().map_err(|e| driver_err("reading registers", e))?;
            let smem =
                func.shared_size_bytes().map_err(|e| driver_err("reading shared memory", e))?;
            let max_threads =
                func.max_threads_per_block().map_err(|e| driver_err("reading max threads", e))?;
            let (regs, smem) = (regs.max(0) as u32, smem.max(0) as u32);
            for &threads in block_sizes {
                if i64::from(threads) > i64::from(max_threads) {
                    continue;
                }
                for &dynamic in dynamic_smem {
                    if smem + dynamic > 48 * 1024 {
                        continue;
                    }
                    let driver = func
                        .occupancy_max_active_blocks_per_multiprocessor(
                            threads,
                            dynamic as usize,
                            None,
                        )
                        .map_err(|e| {
                            driver_err("cuOccupancyMaxActiveBlocksPerMultiprocessor", e)
                        })?;
                    let model = rooftop_core::occupancy::occupancy(
                        spec,
                        &rooftop_core::occupancy::KernelResources {
                            threads_per_block: threads,
                            regs_per_thread: Some(regs),
                            smem_bytes: u64::from(smem + dynamic),
                            ..Default::default()
                        },
                    );
                    out.push(OccupancyCheck {
                        kernel: label.clone(),
                        regs_per_thread: regs,
                        static_smem_bytes: smem,
                        dynamic_smem_bytes: dynamic,
                        threads_per_block: threads,
                        driver_blocks_per_sm: driver,
                        model_blocks_per_sm: model.as_ref().ok().map(|o| o.blocks_per_cu),
                        model_limiter: model.as_ref().ok().map(|o| o.limiter.as_str().to_string()),
                    });
                }
            }
        }
        Ok(out)
    }

    /// The device's spec: the catalog entry when the name matches one (the notes compare
    /// it with the attributes), else one built from the attributes, with measured FMA
    /// peaks standing in for unknown ones.
    pub fn device_spec(&self, ceilings: Option<&Ceilings>) -> Result<DeviceSpec, BackendError> {
        let measured: Vec<(Precision, f64)> = ceilings
            .map(|c| {
                [Precision::Fp32, Precision::Fp64]
                    .iter()
                    .filter_map(|&p| c.vector_gflops(p).map(|g| (p, g)))
                    .collect()
            })
            .unwrap_or_default();
        self.attrs.device_spec(&measured).map_err(BackendError::Other)
    }

    /// Ceilings options: L2 as the cache level (sweep to 8x L2, at least 1 GiB), the
    /// theoretical FMA peaks, and tensor-core GEMM probes through cuBLASLt.
    pub fn ceiling_options(&self, quick: bool, timing: TimingOptions) -> CeilingOptions {
        ceiling_options_for(&self.attrs, self.spec.as_ref(), self.blas_present, quick, timing)
    }
}

impl Backend for CudaBackend {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn alloc(&mut self, dtype: DType, len: usize) -> Result<BufId, BackendError> {
        let bytes =
            len.checked_mul(dtype.size_bytes()).ok_or_else(|| BackendError::OutOfMemory {
                bytes: u64::MAX,
                reason: format!("{len} elements of {} overflow the address space", dtype.as_str()),
            })?;
        let id = u32::try_from(self.buffers.len())
            .map_err(|_| BackendError::Other("too many buffers".into()))?;
        let mem = self.alloc_bytes(bytes)?;
        let (ptr, _) = mem.device_ptr(&self.stream);
        self.buffers.push(Some(DevBuf { dtype, len, ptr, mem }));
        Ok(BufId(id))
    }

    fn upload(&mut self, buf: BufId, data: &HostBuf) -> Result<(), BackendError> {
        let (dtype, len) = {
            let b = self.buf(buf)?;
            (b.dtype, b.len)
        };
        let bytes = host_bytes(dtype, data).filter(|_| data.len() == len).ok_or_else(|| {
            BackendError::BufferMismatch {
                buffer: buf.0,
                expected: format!("{len} x {}", dtype.as_str()),
                got: format!("{} x {}", data.len(), data.kind()),
            }
        })?;
        let slot = self
            .buffers
            .get_mut(buf.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(BackendError::BadBuffer(buf.0))?;
        self.stream
            .memcpy_htod(&bytes, &mut slot.mem)
            .map_err(|e| driver_err("cuMemcpyHtoD", e))?;
        self.stream.synchronize().map_err(|e| driver_err("upload", e))
    }

    fn download(&mut self, buf: BufId) -> Result<HostBuf, BackendError> {
        let b = self.buf(buf)?;
        let bytes = self.stream.clone_dtoh(&b.mem).map_err(|e| driver_err("cuMemcpyDtoH", e))?;
        self.stream.synchronize().map_err(|e| driver_err("download", e))?;
        Ok(from_bytes(b.dtype, &bytes[..b.len * b.dtype.size_bytes()]))
    }

    fn free(&mut self, buf: BufId) {
        // A plan holding the buffer's address must not outlive it.
        if self.plan.as_ref().is_some_and(|p| p.key.contains(&format!("BufId({})", buf.0))) {
            self.plan = None;
        }
        if let Some(s) = self.buffers.get_mut(buf.0 as usize) {
            *s = None;
        }
        while matches!(self.buffers.last(), Some(None)) {
            self.buffers.pop();
        }
    }

    fn implementations(&self, kernel: KernelRef) -> Vec<Implementation> {
        let mut v = plan::implementations(kernel, self.blas_present);
        for name in self.user.keys() {
            if name == kernel.name() {
                v.push(Implementation {
                    id: name.clone(),
                    builtin: false,
                    label: "user CUDA kernel (NVRTC)".into(),
                });
            }
        }
        v
    }

    fn prepare(&mut self, call: &KernelCall<'_>) -> Result<(), BackendError> {
        self.plan = None;
        let p = self.build(call)?;
        self.plan = Some(p);
        Ok(())
    }

    fn run(&mut self, call: &KernelCall<'_>, iters: u32) -> Result<f64, BackendError> {
        if self.plan.as_ref().is_none_or(|p| p.key != plan_key(call)) {
            self.prepare(call)?;
        }
        let Some(mut plan) = self.plan.take() else {
            return Err(BackendError::Other("no prepared call".to_string()));
        };
        let r = self.time(&mut plan, iters);
        self.plan = Some(plan);
        r
    }

    fn launch_info(&self, call: &KernelCall<'_>) -> Vec<crate::backend::LaunchInfo> {
        let Some(plan) = self.plan.as_ref().filter(|p| p.key == plan_key(call)) else {
            return Vec::new();
        };
        plan.reports
            .iter()
            .filter_map(|&r| self.reports.get(r))
            .map(|r| crate::backend::LaunchInfo {
                label: r.label.clone(),
                threads_per_block: r.threads_per_block,
                regs_per_thread: r.regs_per_thread,
                static_shared_bytes: r.static_smem_bytes,
                occupancy_pct: r.occupancy_pct,
                blocks_per_unit: r.blocks_per_sm,
                limiter: r.limiter.clone(),
            })
            .collect()
    }

    fn flush_cache(&mut self) -> Result<(), BackendError> {
        self.ensure_flush()?;
        let func = self.function("probe", "rt_flush")?;
        let Some((ptr, words)) = self.flush.as_ref().map(|(_, p, w)| (*p, *w)) else {
            return Ok(());
        };
        self.flush_salt = self.flush_salt.wrapping_add(1);
        let grid = (u64::from(self.attrs.sm_count.max(1)) * 8).min(words.div_ceil(256)) as u32;
        ffi::launch(
            &self.stream,
            &func,
            [grid.max(1), 1, 1],
            [256, 1, 1],
            &[ffi::Arg::Ptr(ptr), ffi::Arg::U64(words), ffi::Arg::U32(self.flush_salt)],
        )
        .map_err(|e| driver_err("the L2 flush kernel", e))?;
        self.stream.synchronize().map_err(|e| driver_err("the L2 flush kernel", e))
    }

    fn launch_space(&self, call: &KernelCall<'_>) -> Vec<Launch> {
        if self.user.contains_key(call.implementation) {
            return vec![*call.launch];
        }
        plan::launch_space(
            call.case.kernel,
            call.implementation,
            self.attrs.max_threads_per_block.max(32),
        )
    }

    fn default_launch(&self, case: &Case) -> Launch {
        plan::default_launch(case)
    }

    fn available_memory_bytes(&self) -> Option<u64> {
        self.ctx.mem_get_info().ok().map(|(free, _)| free as u64)
    }

    fn load_source(&mut self, kernel: &SourceKernel) -> Result<(), BackendError> {
        if kernel.lang != SourceLang::Cuda {
            return Err(BackendError::Other(format!(
                "the cuda backend runs CUDA C++ kernels, not {} ({})",
                kernel.lang.as_str(),
                kernel.path.display()
            )));
        }
        let code = std::str::from_utf8(&kernel.code).map_err(|e| {
            BackendError::Other(format!(
                "{}: not UTF-8 at byte {}",
                kernel.path.display(),
                e.valid_up_to()
            ))
        })?;
        let file = kernel
            .path
            .file_name()
            .map_or_else(|| "kernel.cu".to_string(), |f| f.to_string_lossy().into_owned());
        if kernel.entry.is_empty() || kernel.entry.contains('\0') {
            return Err(BackendError::Other(format!(
                "{}: the entry point name `{}` is not a C identifier",
                kernel.path.display(),
                kernel.entry.escape_debug()
            )));
        }
        let module = self.compile_text(code, &file)?;
        let func = module.load_function(&kernel.entry).map_err(|_| {
            BackendError::Other(format!(
                "{}: no kernel named `{}` (declare it `extern \"C\" __global__` so that its name is not mangled)",
                kernel.path.display(),
                kernel.entry
            ))
        })?;
        self.user.insert(kernel.name.clone(), UserKernel { func, _module: module });
        Ok(())
    }
}
