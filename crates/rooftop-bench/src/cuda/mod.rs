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

mod ffi;
pub mod info;
pub mod plan;

use crate::backend::{
    Backend, BackendInfo, BufId, DType, HostBuf, Implementation, KernelCall, Launch, Scalar,
    SourceKernel, SourceLang,
};
use crate::case::Case;
use crate::ceilings::{CeilingOptions, Ceilings, MatrixProbe};
use crate::cpu::info::TheoreticalPeak;
use crate::error::BackendError;
use crate::harness::TimingOptions;
use cudarc::driver::{
    sys, CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr,
};
use info::DeviceAttributes;
use plan::{ArgSpec, LtKind, StepSpec};
use rooftop_core::device::{DeviceSpec, MemLevel};
use rooftop_core::units::{ExecUnit, Precision};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Runs shorter than this are timed from CUDA graph replays (launch gaps removed).
pub const GRAPH_BELOW_S: f64 = 50e-6;
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
    pub regs_per_thread: u32,
    pub static_smem_bytes: u32,
    pub threads_per_block: u32,
    /// From `rooftop_core::occupancy` (None when it could not be computed).
    pub occupancy_pct: Option<f64>,
    pub blocks_per_sm: Option<u32>,
    pub limiter: Option<String>,
    /// Seconds per run launched on the stream, and replayed from a graph (when used).
    pub stream_s: Option<f64>,
    pub graph_s: Option<f64>,
}

/// A device buffer.
#[derive(Debug)]
struct DevBuf {
    dtype: DType,
    len: usize,
    ptr: u64,
    mem: CudaSlice<u8>,
}

/// One step of a prepared call, with device addresses.
#[derive(Debug)]
enum Step {
    Kernel { func: CudaFunction, grid: [u32; 3], block: [u32; 3], args: Vec<ffi::Arg> },
    Blas { double: bool, m: i32, n: i32, k: i32, a: u64, b: u64, c: u64 },
    Lt { plan: ffi::LtPlan, a: u64, b: u64, d: u64 },
}

/// A prepared call.
struct Plan {
    key: String,
    label: String,
    steps: Vec<Step>,
    _scratch: Vec<CudaSlice<u8>>,
    /// Only our kernels are captured in graphs (cuBLAS handles its own workspace).
    graphable: bool,
    graph: Option<(u32, cudarc::driver::CudaGraph)>,
    stream_per_run_s: Option<f64>,
    reports: Vec<usize>,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("key", &self.key)
            .field("steps", &self.steps.len())
            .finish_non_exhaustive()
    }
}

/// A user kernel compiled by [`Backend::load_source`].
#[derive(Debug)]
struct UserKernel {
    func: CudaFunction,
    _module: Arc<CudaModule>,
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
    noted: HashSet<String>,
    events: (CudaEvent, CudaEvent),
    nvrtc_version: (i32, i32),
    stream: Arc<CudaStream>,
    ctx: Arc<CudaContext>,
}

fn driver_err(what: &str, e: impl std::fmt::Debug) -> BackendError {
    BackendError::Other(format!("CUDA: {what} failed: {e:?}"))
}

/// The libraries, checked before any other cudarc call; a missing driver or NVRTC is an
/// error, missing cuBLAS / cuBLASLt only removes the built-in GEMMs (the bool).
fn probe() -> Result<(bool, i32, (i32, i32)), BackendError> {
    let libs = ffi::libraries();
    if !libs.driver {
        return Err(BackendError::Other(
            "no CUDA driver found (libcuda.so not loadable): install the NVIDIA driver, or run \
             on a machine with an NVIDIA GPU"
                .to_string(),
        ));
    }
    if !libs.nvrtc {
        return Err(BackendError::Other(
            "NVRTC not found (libnvrtc.so.12/13 not loadable): install the CUDA toolkit's nvrtc \
             (cuda-nvrtc-12-x / -13-x, or the nvidia-cuda-nvrtc wheel) and add its lib \
             directory to LD_LIBRARY_PATH"
                .to_string(),
        ));
    }
    let driver = ffi::driver_version()
        .map_err(|e| BackendError::Other(format!("the CUDA driver does not answer: {e:?}")))?;
    let nvrtc = ffi::nvrtc_version()
        .map_err(|e| BackendError::Other(format!("NVRTC does not answer: {e}")))?;
    check_versions(driver, nvrtc)?;
    Ok((libs.cublas && libs.cublaslt, driver, nvrtc))
}

/// NVRTC newer than the driver produces PTX the driver cannot load.
pub fn check_versions(driver: i32, nvrtc: (i32, i32)) -> Result<(), BackendError> {
    let nv = nvrtc.0 * 1000 + nvrtc.1 * 10;
    if nv > driver {
        return Err(BackendError::Other(format!(
            "NVRTC {}.{} is newer than the CUDA driver (CUDA {}), which cannot load the code it \
             compiles: update the NVIDIA driver to one for CUDA {}.{} or use an NVRTC no newer \
             than {}",
            nvrtc.0,
            nvrtc.1,
            version_label(driver),
            nvrtc.0,
            nvrtc.1,
            version_label(driver)
        )));
    }
    Ok(())
}

/// `13.0` from 13000.
pub fn version_label(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// The attributes of device `ordinal` (driver initialised).
fn query(ctx: &Arc<CudaContext>) -> Result<DeviceAttributes, BackendError> {
    use sys::CUdevice_attribute as A;
    let get = |a: A| -> Result<u32, BackendError> {
        ctx.attribute(a).map(|v| v.max(0) as u32).map_err(|e| driver_err("cuDeviceGetAttribute", e))
    };
    let (major, minor) =
        ctx.compute_capability().map_err(|e| driver_err("compute capability", e))?;
    Ok(DeviceAttributes {
        ordinal: ctx.ordinal() as u32,
        name: ctx.name().map_err(|e| driver_err("cuDeviceGetName", e))?,
        compute_capability: (major.max(0) as u32, minor.max(0) as u32),
        sm_count: get(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        clock_khz: get(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?,
        mem_clock_khz: get(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?,
        bus_width_bits: get(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?,
        l2_bytes: u64::from(get(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?),
        total_mem_bytes: ctx.total_mem().map_err(|e| driver_err("cuDeviceTotalMem", e))? as u64,
        smem_per_sm_bytes: u64::from(get(
            A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
        )?),
        smem_per_block_bytes: u64::from(get(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?),
        smem_per_block_optin_bytes: u64::from(get(
            A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )?),
        smem_reserved_per_block_bytes: u64::from(get(
            A::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
        )?),
        regs_per_sm: get(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
        regs_per_block: get(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?,
        max_threads_per_sm: get(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
        max_threads_per_block: get(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        max_blocks_per_sm: get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?,
        warp_size: get(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
        pci: format!(
            "{:04x}:{:02x}:{:02x}",
            get(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
            get(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
            get(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?
        ),
    })
}

/// Names of the devices the driver sees (driver initialised by the caller's probe).
fn device_names() -> Result<Vec<String>, BackendError> {
    use cudarc::driver::result;
    result::init().map_err(|e| match e.0 {
        sys::CUresult::CUDA_ERROR_NO_DEVICE => {
            BackendError::Other("the CUDA driver found no GPU (CUDA_ERROR_NO_DEVICE)".to_string())
        }
        other => BackendError::Other(format!("the CUDA driver did not initialise: {other:?}")),
    })?;
    let n = result::device::get_count().map_err(|e| driver_err("cuDeviceGetCount", e))?;
    (0..n)
        .map(|i| {
            result::device::get(i)
                .and_then(result::device::get_name)
                .map_err(|e| driver_err("cuDeviceGetName", e))
        })
        .collect()
}

/// The device `adapter` names: an index, or part of a name (case-insensitive, first
/// match); the first device without one.
pub fn pick_device(names: &[String], adapter: Option<&str>) -> Result<usize, BackendError> {
    if names.is_empty() {
        return Err(BackendError::Other("the CUDA driver found no GPU".to_string()));
    }
    let Some(a) = adapter.map(str::trim) else { return Ok(0) };
    if let Ok(i) = a.parse::<usize>() {
        return if i < names.len() {
            Ok(i)
        } else {
            Err(BackendError::Other(format!(
                "--adapter {i}: there are {} CUDA devices (0..{})",
                names.len(),
                names.len() - 1
            )))
        };
    }
    let lower = a.to_ascii_lowercase();
    names.iter().position(|n| n.to_ascii_lowercase().contains(&lower)).ok_or_else(|| {
        BackendError::Other(format!(
            "--adapter `{a}` matches no CUDA device (devices: {})",
            names
                .iter()
                .enumerate()
                .map(|(i, n)| format!("{i}: {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

/// Every CUDA device with its attributes, for `rooftop devices --local`.
pub fn list_devices() -> Result<Vec<CudaDeviceSummary>, BackendError> {
    let (_, driver, _) = probe()?;
    let names = device_names()?;
    let mut out = Vec::new();
    for i in 0..names.len() {
        let ctx = CudaContext::new(i).map_err(|e| driver_err("creating a context", e))?;
        let attrs = query(&ctx)?;
        out.push(CudaDeviceSummary {
            ordinal: i as u32,
            name: attrs.name.clone(),
            catalog_id: attrs
                .catalog_match(&rooftop_core::device::Catalog::builtin())
                .map(|d| d.id),
            attributes: attrs,
            driver_version: version_label(driver),
        });
    }
    Ok(out)
}

/// `HostBuf` as raw bytes for a buffer of `dtype` (native endianness, as the GPU reads
/// them on little-endian hosts).
pub fn host_bytes(dtype: DType, data: &HostBuf) -> Option<Vec<u8>> {
    Some(match (dtype, data) {
        (DType::F32, HostBuf::F32(v)) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        (DType::F64, HostBuf::F64(v)) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        (DType::F16 | DType::Bf16, HostBuf::U16(v)) => {
            v.iter().flat_map(|x| x.to_ne_bytes()).collect()
        }
        (DType::U8, HostBuf::U8(v)) => v.clone(),
        (DType::I8, HostBuf::I8(v)) => v.iter().map(|&x| x.cast_unsigned()).collect(),
        (DType::U32, HostBuf::U32(v)) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        _ => return None,
    })
}

/// Raw bytes back into a `HostBuf` of `dtype`.
pub fn from_bytes(dtype: DType, b: &[u8]) -> HostBuf {
    fn chunks<const N: usize>(b: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
        b.chunks_exact(N).map(|c| {
            let mut a = [0u8; N];
            a.copy_from_slice(c);
            a
        })
    }
    match dtype {
        DType::F32 => HostBuf::F32(chunks::<4>(b).map(f32::from_ne_bytes).collect()),
        DType::F64 => HostBuf::F64(chunks::<8>(b).map(f64::from_ne_bytes).collect()),
        DType::F16 | DType::Bf16 => HostBuf::U16(chunks::<2>(b).map(u16::from_ne_bytes).collect()),
        DType::U8 => HostBuf::U8(b.to_vec()),
        DType::I8 => HostBuf::I8(b.iter().map(|&x| x.cast_signed()).collect()),
        DType::U32 => HostBuf::U32(chunks::<4>(b).map(u32::from_ne_bytes).collect()),
    }
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
        let catalog = attrs.catalog_match(&rooftop_core::device::Catalog::builtin());
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
            timer: "CUDA events (timing enabled) around the runs on one stream; runs under 50 µs \
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

    fn compile(&mut self, name: &'static str) -> Result<Arc<CudaModule>, BackendError> {
        if let Some(m) = self.modules.get(name) {
            return Ok(m.clone());
        }
        let src = plan::source(name)
            .ok_or_else(|| BackendError::Other(format!("no CUDA source `{name}`")))?;
        let code = format!("{}\n{}", plan::COMMON, src.code);
        let m = self.compile_text(&code, &format!("{name}.cu"))?;
        self.modules.insert(name, m.clone());
        Ok(m)
    }

    fn compile_text(&self, code: &str, file: &str) -> Result<Arc<CudaModule>, BackendError> {
        if code.contains('\0') {
            return Err(BackendError::Other(format!("{file}: the source contains a NUL byte")));
        }
        let (major, minor) = self.attrs.compute_capability;
        let opts = cudarc::nvrtc::CompileOptions {
            options: vec![
                format!("--gpu-architecture=compute_{major}{minor}"),
                "--std=c++17".into(),
            ],
            name: Some(file.to_string()),
            ..Default::default()
        };
        let ptx = cudarc::nvrtc::compile_ptx_with_opts(code, opts).map_err(|e| match e {
            cudarc::nvrtc::CompileError::CompileError { log, .. } => BackendError::Other(format!(
                "NVRTC {}.{} could not compile {file} for compute_{major}{minor}:\n{}",
                self.nvrtc_version.0,
                self.nvrtc_version.1,
                log.to_string_lossy().trim_end()
            )),
            other => BackendError::Other(format!("NVRTC could not compile {file}: {other:?}")),
        })?;
        self.ctx.load_module(ptx).map_err(|e| {
            if e.0 == sys::CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION {
                BackendError::Other(format!(
                    "the CUDA driver cannot load the PTX NVRTC {}.{} produced for {file}: the \
                     driver is older than NVRTC; update the driver",
                    self.nvrtc_version.0, self.nvrtc_version.1
                ))
            } else {
                driver_err(&format!("loading {file}"), e)
            }
        })
    }

    fn function(
        &mut self,
        source: &'static str,
        entry: &str,
    ) -> Result<CudaFunction, BackendError> {
        let m = self.compile(source)?;
        m.load_function(entry)
            .map_err(|e| driver_err(&format!("finding {entry} in {source}.cu"), e))
    }

    fn buf(&self, id: BufId) -> Result<&DevBuf, BackendError> {
        self.buffers
            .get(id.0 as usize)
            .and_then(Option::as_ref)
            .ok_or(BackendError::BadBuffer(id.0))
    }

    fn blas_handle(&mut self) -> Result<&ffi::BlasHandle, BackendError> {
        if !self.blas_present {
            return Err(BackendError::Other("cuBLAS is not loadable on this machine".to_string()));
        }
        if self.blas.is_none() {
            self.blas = Some(ffi::BlasHandle::new(&self.stream).map_err(BackendError::Other)?);
        }
        self.blas.as_ref().ok_or_else(|| BackendError::Other("no cuBLAS handle".to_string()))
    }

    fn lt_handle(&mut self) -> Result<(), BackendError> {
        if !self.blas_present {
            return Err(BackendError::Other(
                "cuBLASLt is not loadable on this machine".to_string(),
            ));
        }
        if self.lt.is_none() {
            let h = ffi::LtHandle::new().map_err(BackendError::Other)?;
            // NVIDIA's recommendation: 32 MiB of workspace on Hopper, 4 MiB before.
            let bytes = if self.attrs.compute_capability.0 >= 9 { 32 << 20 } else { 4 << 20 };
            let ws = self.alloc_bytes(bytes)?;
            let (p, _) = ws.device_ptr(&self.stream);
            self.lt = Some((h, ws, p));
        }
        Ok(())
    }

    fn alloc_bytes(&self, bytes: usize) -> Result<CudaSlice<u8>, BackendError> {
        self.stream.alloc_zeros::<u8>(bytes.max(1)).map_err(|e| BackendError::OutOfMemory {
            bytes: bytes as u64,
            reason: format!("cuMemAlloc: {e:?}"),
        })
    }

    /// Occupancy and resources of a launch, recorded once per label (and as a note).
    fn report(&mut self, label: String, func: &CudaFunction, block: [u32; 3]) -> usize {
        if let Some(i) = self.reports.iter().position(|r| r.label == label) {
            return i;
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

    fn note_once(&mut self, key: String, note: String) {
        if self.noted.insert(key) {
            self.info.notes.push(note);
        }
    }

    fn build(&mut self, call: &KernelCall<'_>) -> Result<Plan, BackendError> {
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

    fn enqueue(&self, step: &Step) -> Result<(), BackendError> {
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

    fn enqueue_plan(&self, plan: &Plan, runs: u32) -> Result<(), BackendError> {
        for _ in 0..runs {
            for s in &plan.steps {
                self.enqueue(s)?;
            }
        }
        Ok(())
    }

    fn capture(&self, plan: &Plan, runs: u32) -> Result<cudarc::driver::CudaGraph, BackendError> {
        self.stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(|e| driver_err("cuStreamBeginCapture", e))?;
        let r = self.enqueue_plan(plan, runs);
        let g = self
            .stream
            .end_capture(
                sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH,
            )
            .map_err(|e| driver_err("cuStreamEndCapture", e))?;
        r?;
        g.ok_or_else(|| BackendError::Other("graph capture returned no graph".to_string()))
    }

    fn ensure_flush(&mut self) -> Result<(), BackendError> {
        if self.flush.is_none() {
            let bytes = (2 * self.attrs.l2_bytes).max(64 << 20);
            let mem = self.alloc_bytes(bytes as usize)?;
            let (p, _) = mem.device_ptr(&self.stream);
            self.flush = Some((mem, p, bytes / 4));
        }
        Ok(())
    }
}

fn dims(d: [u32; 3]) -> String {
    format!("{}x{}x{}", d[0], d[1], d[2])
}

fn plan_key(call: &KernelCall<'_>) -> String {
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

/// The cuBLASLt plan of a step (layouts per `StepSpec::Lt`).
fn lt_plan(
    b: &CudaBackend,
    kind: LtKind,
    m: u64,
    n: u64,
    k: u64,
) -> Result<ffi::LtPlan, BackendError> {
    use cudarc::cublaslt::sys::{cublasComputeType_t as C, cudaDataType_t as T};
    let (h, _, _) =
        b.lt.as_ref().ok_or_else(|| BackendError::Other("no cuBLASLt handle".into()))?;
    let (compute, ty) = match kind {
        LtKind::F32 => (C::CUBLAS_COMPUTE_32F, T::CUDA_R_32F),
        LtKind::F64 => (C::CUBLAS_COMPUTE_64F, T::CUDA_R_64F),
        LtKind::Tf32 => (C::CUBLAS_COMPUTE_32F_FAST_TF32, T::CUDA_R_32F),
        LtKind::Bf16 => (C::CUBLAS_COMPUTE_32F, T::CUDA_R_16BF),
        LtKind::F16 => (C::CUBLAS_COMPUTE_32F, T::CUDA_R_16F),
        LtKind::Fp8 => (C::CUBLAS_COMPUTE_32F, T::CUDA_R_8F_E4M3),
    };
    let out = if kind == LtKind::F64 { T::CUDA_R_64F } else { T::CUDA_R_32F };
    let ld = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let m_ = |dtype, rows, cols, ldv| ffi::LtMatrix { dtype, rows, cols, ld: ld(ldv) };
    let (a, transa) = if kind.converted() {
        // The suite's B transposed (n x k row-major) = column-major k x n, op T.
        (m_(ty, k, n, k), true)
    } else {
        // The suite's B (k x n row-major) = column-major n x k, op N.
        (m_(ty, n, k, n), false)
    };
    let bm = m_(ty, k, m, k);
    let d = m_(out, n, m, n);
    let ws = if b.attrs.compute_capability.0 >= 9 { 32 << 20 } else { 4 << 20 };
    ffi::LtPlan::new(h, compute, kind == LtKind::F64, transa, false, a, bm, d, ws)
        .map_err(BackendError::Other)
}

/// Ceilings options for a device (see [`CudaBackend::ceiling_options`]).
pub fn ceiling_options_for(
    attrs: &DeviceAttributes,
    spec: Option<&DeviceSpec>,
    blas: bool,
    quick: bool,
    timing: TimingOptions,
) -> CeilingOptions {
    let mut o = CeilingOptions::new(quick, timing);
    let mut notes = Vec::new();
    if attrs.l2_bytes > 0 {
        o.cache_levels = vec![(MemLevel::L2, attrs.l2_bytes)];
        o.max_working_set = Some((8 * attrs.l2_bytes).max(1 << 30));
        notes.push(format!(
            "L2 ({} MiB) is the cache level of the sweep; DRAM points are working sets of at least 4x L2",
            attrs.l2_bytes >> 20
        ));
    }
    for p in [Precision::Fp32, Precision::Fp64] {
        if let Some(t) = attrs.fma_peak(p) {
            o.theoretical.push(TheoreticalPeak {
                precision: p,
                variant: "vector",
                gflops: t.gflops,
                formula: t.formula,
            });
        }
    }
    if blas {
        let side = if quick { 4096 } else { 8192 };
        let mut kinds = vec![
            (Precision::Fp16, (7, 0)),
            (Precision::Bf16, (8, 0)),
            (Precision::Tf32, (8, 0)),
            (Precision::Fp8, (8, 9)),
        ];
        kinds.retain(|&(_, cc)| attrs.compute_capability >= cc);
        for (p, _) in kinds {
            let peak = spec.and_then(|s| s.peak(p, ExecUnit::Matrix));
            o.matrix.push(MatrixProbe {
                implementation: plan::CUBLASLT.to_string(),
                precision: p,
                shape: (side, side, side),
                label: format!(
                    "tensor cores: cuBLASLt {} {side}x{side}x{side}, fp32 accumulate, random inputs in [-1, 1)",
                    p.as_str()
                ),
                theoretical_gflops: peak.map(|r| r.tflops * 1e3),
                theoretical_formula: peak.map(|r| format!("catalog {} {}_matrix: {}", spec.map_or("", |s| s.id.as_str()), p.as_str(), r.meta.source)),
            });
        }
    } else {
        notes.push("tensor-core peaks not measured: cuBLASLt is not loadable".to_string());
    }
    o.notes = notes;
    o
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

    fn implementations(&self, kernel: &str) -> Vec<Implementation> {
        let mut v = plan::implementations(kernel, self.blas_present);
        for name in self.user.keys() {
            if name == kernel {
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
                regs_per_thread: Some(r.regs_per_thread),
                static_shared_bytes: Some(r.static_smem_bytes),
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

impl CudaBackend {
    /// Times `iters` runs of a prepared plan (module doc).
    fn time(&mut self, plan: &mut Plan, iters: u32) -> Result<f64, BackendError> {
        let iters = iters.max(1);
        let use_graph = plan.graphable
            && iters >= 2
            && plan.stream_per_run_s.is_some_and(|t| t < GRAPH_BELOW_S);
        if use_graph {
            let g = iters.min(GRAPH_LAUNCHES);
            if plan.graph.as_ref().is_none_or(|(n, _)| *n != g) {
                plan.graph = None;
                let graph = self.capture(plan, g)?;
                graph.upload().map_err(|e| driver_err("cuGraphUpload", e))?;
                plan.graph = Some((g, graph));
            }
        }
        let (start, end) = &self.events;
        start.record(&self.stream).map_err(|e| driver_err("cuEventRecord", e))?;
        let mut graph_used = false;
        match plan.graph.as_ref().filter(|_| use_graph) {
            Some((g, graph)) => {
                for _ in 0..iters / g {
                    graph.launch().map_err(|e| driver_err("cuGraphLaunch", e))?;
                }
                self.enqueue_plan(plan, iters % g)?;
                graph_used = true;
            }
            None => self.enqueue_plan(plan, iters)?,
        }
        end.record(&self.stream).map_err(|e| driver_err("cuEventRecord", e))?;
        let ms = ffi::elapsed_ms(start, end).map_err(BackendError::Other)?;
        // Errors of the kernels themselves (illegal address, ...) surface here.
        self.stream.synchronize().map_err(|e| driver_err("running the kernel", e))?;
        let seconds = f64::from(ms) / 1e3;
        let per_run = seconds / f64::from(iters);
        if graph_used {
            for &r in &plan.reports {
                self.reports[r].graph_s = Some(per_run);
            }
            if let Some(stream_s) = plan.stream_per_run_s {
                let label = plan.label.clone();
                self.note_once(
                    format!("graph {label}"),
                    format!(
                        "{label}: {} per run replayed from a CUDA graph, {} launched one by one \
                         (launch overhead about {} per run); the graph time is reported",
                        rooftop_core::units::si(per_run, "s"),
                        rooftop_core::units::si(stream_s, "s"),
                        rooftop_core::units::si((stream_s - per_run).max(0.0), "s")
                    ),
                );
            }
        } else {
            plan.stream_per_run_s = Some(per_run);
            for &r in &plan.reports {
                self.reports[r].stream_s = Some(per_run);
            }
        }
        for &r in &plan.reports.clone() {
            let rep = self.reports[r].clone();
            if let Some(pct) = rep.occupancy_pct {
                self.note_once(
                    format!("occ {}", rep.label),
                    format!(
                        "{}: {} registers/thread, {} B static shared memory, {} threads/block: \
                         theoretical occupancy {pct:.0}% ({} blocks/SM, limited by {})",
                        rep.label,
                        rep.regs_per_thread,
                        rep.static_smem_bytes,
                        rep.threads_per_block,
                        rep.blocks_per_sm.unwrap_or(0),
                        rep.limiter.as_deref().unwrap_or("?")
                    ),
                );
            }
        }
        Ok(seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_mismatch_is_one_sentence() {
        assert!(check_versions(13000, (13, 0)).is_ok());
        assert!(check_versions(12080, (12, 4)).is_ok());
        let e = check_versions(12040, (13, 0)).unwrap_err().to_string();
        assert!(e.contains("NVRTC 13.0 is newer than the CUDA driver (CUDA 12.4)"), "{e}");
        assert_eq!(version_label(12080), "12.8");
    }

    #[test]
    fn adapters_by_index_and_name() {
        let names = vec!["NVIDIA H100 80GB HBM3".to_string(), "NVIDIA L4".to_string()];
        assert_eq!(pick_device(&names, None).unwrap(), 0);
        assert_eq!(pick_device(&names, Some("1")).unwrap(), 1);
        assert_eq!(pick_device(&names, Some("l4")).unwrap(), 1);
        assert!(pick_device(&names, Some("2")).unwrap_err().to_string().contains("0..1"));
        assert!(pick_device(&names, Some("a100"))
            .unwrap_err()
            .to_string()
            .contains("0: NVIDIA H100"));
        assert!(pick_device(&[], None).is_err());
    }

    #[test]
    fn host_bytes_round_trip() {
        let cases = [
            (DType::F32, HostBuf::F32(vec![1.5, -2.0, f32::NAN])),
            (DType::F64, HostBuf::F64(vec![1e300, -0.0])),
            (DType::Bf16, HostBuf::U16(vec![0x3F80, 7])),
            (DType::U8, HostBuf::U8(vec![0, 255])),
            (DType::I8, HostBuf::I8(vec![-128, 127])),
            (DType::U32, HostBuf::U32(vec![u32::MAX, 1])),
        ];
        for (dt, h) in cases {
            let b = host_bytes(dt, &h).unwrap();
            assert_eq!(b.len(), h.len() * dt.size_bytes());
            let back = from_bytes(dt, &b);
            assert_eq!(format!("{back:?}"), format!("{h:?}"));
        }
        assert!(host_bytes(DType::F32, &HostBuf::F64(vec![1.0])).is_none());
    }

    #[test]
    fn h100_ceiling_options() {
        let a = info::h100_sxm_attributes();
        let spec = a.catalog_match(&rooftop_core::device::Catalog::builtin());
        let o = ceiling_options_for(&a, spec.as_ref(), true, false, TimingOptions::default());
        assert_eq!(o.cache_levels, vec![(MemLevel::L2, 50 << 20)]);
        // At least 4x L2 (DRAM points) and at least 1 GiB.
        assert_eq!(o.max_working_set, Some(1 << 30));
        let kinds: Vec<Precision> = o.matrix.iter().map(|m| m.precision).collect();
        assert_eq!(kinds, [Precision::Fp16, Precision::Bf16, Precision::Tf32, Precision::Fp8]);
        let bf16 = &o.matrix[1];
        assert_eq!(bf16.shape, (8192, 8192, 8192));
        assert!((bf16.theoretical_gflops.unwrap() - 989_400.0).abs() < 1.0);
        assert_eq!(o.theoretical.len(), 2);
        // A T4-like device (CC 7.5) gets fp16 only; without cuBLASLt none.
        let t4 = DeviceAttributes { compute_capability: (7, 5), ..a.clone() };
        assert_eq!(
            ceiling_options_for(&t4, None, true, true, TimingOptions::default()).matrix.len(),
            1
        );
        let o = ceiling_options_for(&a, None, false, true, TimingOptions::default());
        assert!(o.matrix.is_empty() && o.notes.iter().any(|n| n.contains("cuBLASLt")));
    }
}
