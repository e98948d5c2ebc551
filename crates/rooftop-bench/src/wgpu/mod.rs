//! The wgpu backend: the suite in WGSL on any GPU wgpu reaches (Vulkan, Metal, DX12), and
//! on software Vulkan drivers (Mesa's lavapipe) for plumbing tests.
//!
//! Buffers are wgpu storage buffers, their sizes rounded up to 4 bytes (WGSL has no
//! 8- or 16-bit storage types: the quantized kernels read packed bytes and fp16 scales
//! as `u32`s). Kernels are compiled in `prepare` (pipelines are cached by source,
//! entry point and constants), so no run ever includes shader compilation. Every
//! dispatch is its own compute pass, and a run is timed with GPU timestamps at pass
//! boundaries when the adapter has them, by a wall clock around submit and wait
//! otherwise ([`timing`]). Errors from wgpu are caught with error scopes and returned as
//! [`BackendError`]s; nothing here panics on a device error.
//!
//! Software adapters (`DeviceType::Cpu`: lavapipe, llvmpipe, WARP) run, but their
//! timings are CPU timings of a shader emulator: the device name and the notes say so.
//! `simulated` stays false, because the times are measured, not modelled (the reports
//! use `simulated` for "a model, not measurements").

pub mod adapter;
pub mod kernels;
mod source;
pub mod timing;

use crate::backend::{
    Backend, BackendInfo, BufId, DType, HostBuf, Implementation, KernelCall, Launch, Scalar,
    SourceKernel,
};
use crate::case::{Case, KernelRef};
use crate::ceilings::{CeilingOptions, Ceilings};
use crate::cpu::info::TheoreticalPeak;
use crate::error::BackendError;
use crate::harness::TimingOptions;
use crate::suite::KernelId;
use adapter::AdapterSummary;
use kernels::{DeviceLimits, Plan, Slot};
use rooftop_core::device::{Catalog, DeviceEntry, DeviceSpec, MemLevel};
use rooftop_core::units::{ExecUnit, Precision};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use timing::Timer;
use wgpu::util::DeviceExt as _;

/// Size of the buffer `flush_cache` writes (capped by the adapter's limits).
const FLUSH_BYTES: u64 = 512 << 20;

/// One device buffer.
#[derive(Debug)]
struct Buf {
    dtype: DType,
    len: usize,
    buffer: wgpu::Buffer,
}

/// One dispatch of a prepared call.
#[derive(Debug)]
struct PreparedStep {
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    workgroups: [u32; 3],
}

/// A call ready to run: its dispatches and the buffers they own.
#[derive(Debug)]
struct Prepared {
    steps: Vec<PreparedStep>,
    /// The call's buffer ids (to drop this entry when one is freed).
    uses: Vec<u32>,
    /// Scratch and uniform buffers, kept alive with the bind groups.
    _owned: Vec<wgpu::Buffer>,
}

/// Runs the suite on a GPU through wgpu.
#[derive(Debug)]
pub struct WgpuBackend {
    info: BackendInfo,
    summary: AdapterSummary,
    adapter_info: wgpu::AdapterInfo,
    device: wgpu::Device,
    queue: wgpu::Queue,
    limits: wgpu::Limits,
    timer: Timer,
    buffers: HashMap<u32, Buf>,
    next_id: u32,
    pipelines: HashMap<String, wgpu::ComputePipeline>,
    prepared: HashMap<String, Prepared>,
    sources: HashMap<String, source::UserKernel>,
    flush: Option<(wgpu::Buffer, wgpu::ComputePipeline, wgpu::BindGroup, [u32; 3])>,
    /// Errors wgpu reported outside an error scope (kept instead of panicking).
    uncaptured: Arc<Mutex<Vec<String>>>,
}

impl WgpuBackend {
    /// Opens an adapter: `adapter` is an index or a case-insensitive part of its name
    /// (see `rooftop devices --local`); `None` takes the high-performance one.
    pub fn open(adapter: Option<&str>) -> Result<WgpuBackend, BackendError> {
        let instance = adapter::instance();
        let (index, chosen) = adapter::select(adapter::enumerate(&instance), adapter)?;
        let catalog = Catalog::builtin();
        let summary = adapter::summarize(index, &chosen, catalog);
        let adapter_info = chosen.get_info();
        let limits = chosen.limits();
        let wanted = wgpu::Features::TIMESTAMP_QUERY
            | wgpu::Features::SHADER_F16
            | wgpu::Features::SHADER_F64;
        let features = chosen.features() & wanted;
        let (device, queue) = pollster::block_on(chosen.request_device(&wgpu::DeviceDescriptor {
            label: Some("rooftop"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| {
            BackendError::Other(format!("cannot open wgpu adapter `{}`: {e}", summary.name))
        })?;
        let uncaptured = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&uncaptured);
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Ok(mut v) = sink.lock() {
                v.push(e.to_string());
            }
        }));
        let timer = Timer::new(&device, &queue);
        let matched = catalog_match_spec(catalog, &adapter_info);
        let mut notes = Vec::new();
        let mut device_name =
            format!("{} ({} via wgpu, adapter {index})", summary.name, summary.backend);
        let parallelism = if summary.software {
            device_name = format!(
                "{} ({} software driver via wgpu: CPU timings, not a GPU)",
                summary.name, summary.backend
            );
            notes.push(format!(
                "adapter `{}` is a CPU software driver ({}): its timings measure a shader \
                 emulator on the CPU, not a GPU; use them to test the pipeline only",
                summary.name, summary.driver
            ));
            std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
        } else if let Some(d) = &matched {
            d.num_cu
        } else {
            notes.push(format!(
                "adapter `{}` is not in rooftop's catalog: its compute units and peaks are \
                 unknown (parallelism shows 1)",
                summary.name
            ));
            1
        };
        if matches!(timer, Timer::Wall) {
            notes.push(
                "no GPU timestamps: times include submission and synchronisation".to_string(),
            );
        }
        notes.push(if features.contains(wgpu::Features::SHADER_F64) {
            "fp32 kernels only (WGSL has no fp64), except the fma probe, which also runs in \
             fp64 (SHADER_F64)"
                .to_string()
        } else {
            "fp32 kernels only (WGSL has no fp64; the adapter lacks SHADER_F64)".to_string()
        });
        let info = BackendInfo {
            backend: "wgpu".to_string(),
            device_name,
            timer: timer.describe(),
            parallelism,
            simulated: false,
            notes,
        };
        Ok(WgpuBackend {
            info,
            summary,
            adapter_info,
            device,
            queue,
            limits,
            timer,
            buffers: HashMap::new(),
            next_id: 0,
            pipelines: HashMap::new(),
            prepared: HashMap::new(),
            sources: HashMap::new(),
            flush: None,
            uncaptured,
        })
    }

    /// Times with the wall clock even when the adapter has GPU timestamps (as
    /// `ROOFTOP_WGPU_TIMER=wall` does), to compare the two or to work around a driver
    /// with broken timestamps.
    pub fn use_wall_clock(&mut self) {
        self.timer = Timer::Wall;
        self.info.timer = self.timer.describe();
    }

    /// What `rooftop devices --local` shows about the opened adapter.
    pub fn adapter(&self) -> &AdapterSummary {
        &self.summary
    }

    fn device_limits(&self) -> DeviceLimits {
        DeviceLimits {
            max_wg: self
                .limits
                .max_compute_workgroup_size_x
                .min(self.limits.max_compute_invocations_per_workgroup),
            max_groups_per_dim: self.limits.max_compute_workgroups_per_dimension,
            workgroup_storage_bytes: self.limits.max_compute_workgroup_storage_size,
            shader_f64: self.device.features().contains(wgpu::Features::SHADER_F64),
            shader_f16: self.device.features().contains(wgpu::Features::SHADER_F16),
        }
    }

    /// The device's theoretical spec: the catalog entry the adapter matches; otherwise a
    /// spec built from the measured `ceilings` (DRAM bandwidth and FMA peak) with
    /// nothing invented; otherwise an error that says how to get one.
    pub fn device_spec(&self, ceilings: Option<&Ceilings>) -> Result<DeviceSpec, BackendError> {
        let catalog = Catalog::builtin();
        if let Some(d) = catalog_match_spec(catalog, &self.adapter_info) {
            return Ok(d);
        }
        let entry = self.device_entry(ceilings)?;
        catalog
            .resolve_entry(entry, "<local wgpu adapter>")
            .map_err(|e| BackendError::Other(e.to_string()))
    }

    /// The device-file entry behind [`WgpuBackend::device_spec`] for an adapter the
    /// catalog lacks: the figures measured by `ceilings` (`calibrated`), and what the
    /// adapter reports (`driver`).
    fn device_entry(&self, ceilings: Option<&Ceilings>) -> Result<DeviceEntry, BackendError> {
        use crate::ceilings::device_file::{best_bandwidth, slug};
        use rooftop_core::device::{unplaced, Figure};
        use rooftop_core::units::{Confidence, Provenance};
        let name = &self.summary.name;
        let why = if self.summary.software {
            "is a CPU software driver (no datasheet figures)"
        } else {
            "is not in rooftop's catalog and wgpu reports no peak figures"
        };
        let c = ceilings.ok_or_else(|| {
            BackendError::Other(format!(
                "adapter `{name}` {why}: measure it first (`rooftop ceilings --backend wgpu \
                 -o my-gpu.toml`, then pass `--device-file my-gpu.toml`), or name a catalog \
                 device with --device"
            ))
        })?;
        let dram = best_bandwidth(c, MemLevel::Dram).ok_or_else(|| {
            BackendError::Other(format!(
                "adapter `{name}` {why}, and the ceilings have no DRAM bandwidth"
            ))
        })?;
        let measured = |value: f64, what: String| {
            Figure::new(value)
                .with_source(format!("measured by rooftop ceilings ({}): {what}", c.method))
                .with_provenance(Provenance::Calibrated)
        };
        let mut e = DeviceEntry::new(&format!("wgpu-{}", slug(name)));
        e.name = Some(unplaced(self.info.device_name.clone()));
        e.aliases = Some(vec![name.clone()]);
        e.vendor = Some(unplaced(if self.summary.software { "cpu" } else { "other" }.to_string()));
        e.family = Some(unplaced("unknown".to_string()));
        e.set_defaults(
            &format!("wgpu adapter info ({} {})", self.summary.backend, self.summary.driver),
            Confidence::Low,
            Provenance::Driver,
        );
        let compute = e.compute_mut();
        // wgpu reports no compute-unit count: the backend's parallelism stands in for it.
        compute.num_cu = Some(unplaced(Figure::new(f64::from(self.info.parallelism.max(1)))));
        compute.cu_kind = Some("compute unit".to_string());
        compute.warp_size =
            Some(unplaced(Figure::new(f64::from(self.adapter_info.subgroup_min_size.max(1)))));
        if let Some(g) = c.vector_gflops(Precision::Fp32) {
            e.set_peak("fp32_vector", measured(g / 1e3, "fp32 FMA kernel".to_string()));
        }
        let what = format!("{} at {} bytes", dram.pattern.as_str(), dram.working_set_bytes);
        e.memory_mut().bandwidth_gbs = Some(unplaced(measured(dram.gbs, what)));
        Ok(e)
    }

    /// Ceilings options: the catalog's cache sizes and fp32 vector peak when the adapter
    /// is a catalog device, and a largest working set the adapter can bind.
    pub fn ceiling_options(&self, quick: bool, timing: TimingOptions) -> CeilingOptions {
        let mut o = CeilingOptions::new(quick, timing);
        let catalog = Catalog::builtin();
        if let Some(d) = catalog_match_spec(catalog, &self.adapter_info) {
            let mut levels = Vec::new();
            if let Some(l2) = d.l2_bytes {
                levels.push((MemLevel::L2, l2));
            }
            if let Some(llc) = d.llc_bytes {
                levels.push((MemLevel::Llc, llc));
            }
            o.cache_levels = levels;
            if let Some(p) = d.peak(Precision::Fp32, ExecUnit::Vector) {
                o.theoretical.push(TheoreticalPeak {
                    precision: Precision::Fp32,
                    variant: "vector",
                    gflops: p.tflops * 1e3,
                    formula: format!("catalog `{}`: {}", d.id, p.meta.source),
                });
            }
            o.notes.push(format!("adapter matched catalog device `{}`", d.id));
        } else if self.summary.software {
            let cpu = crate::cpu::info::CpuInfo::detect();
            o.cache_levels = cpu.cache_levels();
            o.notes.push(
                "software adapter: cache levels are the host CPU's; timings are CPU timings"
                    .to_string(),
            );
        }
        // The `read` kernel binds its whole working set as one array.
        let bind = self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size);
        let cap = if bind == 0 { 0 } else { 1u64 << bind.ilog2() };
        // What `measure` would pick (4x the last cache, at least 256 MiB), within it.
        let last = o.cache_levels.iter().map(|&(_, b)| b).max().unwrap_or(0);
        o.max_working_set = Some((4 * last).max(256 << 20).min(cap));
        o
    }

    /// Runs `f` inside validation, out-of-memory and internal error scopes.
    fn scoped<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T, BackendError> {
        let internal = self.device.push_error_scope(wgpu::ErrorFilter::Internal);
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = f();
        let errors = [
            pollster::block_on(validation.pop()),
            pollster::block_on(oom.pop()),
            pollster::block_on(internal.pop()),
        ];
        match errors.into_iter().flatten().next() {
            None => Ok(out),
            Some(wgpu::Error::OutOfMemory { .. }) => Err(BackendError::OutOfMemory {
                bytes: 0,
                reason: format!("{what}: the GPU is out of memory"),
            }),
            Some(e) => Err(BackendError::Other(format!("{what}: {e}"))),
        }
    }

    fn take_uncaptured(&self) -> Result<(), BackendError> {
        let mut v = self
            .uncaptured
            .lock()
            .map_err(|_| BackendError::Other("the wgpu error log is poisoned".to_string()))?;
        if v.is_empty() {
            Ok(())
        } else {
            let msg = v.join("; ");
            v.clear();
            Err(BackendError::Other(format!("wgpu: {msg}")))
        }
    }

    fn buf(&self, id: BufId) -> Result<&Buf, BackendError> {
        self.buffers.get(&id.0).ok_or(BackendError::BadBuffer(id.0))
    }

    fn create_buffer(
        &self,
        bytes: u64,
        usage: wgpu::BufferUsages,
        label: &str,
    ) -> Result<wgpu::Buffer, BackendError> {
        self.scoped(label, || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes,
                usage,
                mapped_at_creation: false,
            })
        })
    }

    /// The compute pipeline of `wgsl` / `entry`, compiled once per key.
    fn pipeline(
        &mut self,
        key: &str,
        wgsl: &str,
        entry: &str,
    ) -> Result<wgpu::ComputePipeline, BackendError> {
        if let Some(p) = self.pipelines.get(key) {
            return Ok(p.clone());
        }
        let module = self.scoped("compiling a built-in WGSL kernel", || {
            self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(entry),
                source: wgpu::ShaderSource::Wgsl(wgsl.into()),
            })
        })?;
        let pipeline = self.scoped("creating a compute pipeline", || {
            self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: None,
                module: &module,
                entry_point: Some(entry),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants: &[],
                    zero_initialize_workgroup_memory: false,
                },
                cache: None,
            })
        })?;
        self.pipelines.insert(key.to_string(), pipeline.clone());
        Ok(pipeline)
    }

    /// Checks the call's buffers against the suite's buffer list for the case.
    fn check_buffers(&self, call: &KernelCall<'_>) -> Result<(), BackendError> {
        let kernel = call.case.kernel.suite().ok_or_else(|| no_impl(call))?.def();
        let specs = kernel.buffers(call.case);
        if specs.len() != call.buffers.len() {
            return Err(BackendError::Other(format!(
                "{} {}: expected {} buffers, got {}",
                call.case.kernel,
                call.case.label(),
                specs.len(),
                call.buffers.len()
            )));
        }
        for (s, id) in specs.iter().zip(call.buffers) {
            let b = self.buf(*id)?;
            if b.dtype != s.dtype || b.len != s.len {
                return Err(BackendError::BufferMismatch {
                    buffer: id.0,
                    expected: format!("{} x {} ({})", s.len, s.dtype.as_str(), s.name),
                    got: format!("{} x {}", b.len, b.dtype.as_str()),
                });
            }
        }
        Ok(())
    }

    fn prepare_suite(&mut self, call: &KernelCall<'_>) -> Result<Prepared, BackendError> {
        if kernels::find(call.case.kernel).is_none() || call.implementation != "rooftop" {
            return Err(no_impl(call));
        }
        self.check_buffers(call)?;
        let Plan { steps, scratch_bytes } =
            kernels::plan(call.case, call.launch, &self.device_limits())?;
        let mut owned = Vec::new();
        let storage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST;
        let mut scratch = Vec::new();
        for bytes in scratch_bytes {
            scratch.push(self.create_buffer(bytes.max(4), storage, "rooftop scratch")?);
        }
        let mut out = Vec::new();
        for step in &steps {
            let pipeline = self.pipeline(&step.key(), &step.wgsl(), step.entry)?;
            let params_bytes: Vec<u8> = step.params.iter().flat_map(|w| w.to_le_bytes()).collect();
            let params = self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("rooftop params"),
                contents: &params_bytes,
                usage: wgpu::BufferUsages::UNIFORM,
            });
            let mut entries = Vec::new();
            for (i, slot) in step.slots.iter().enumerate() {
                let buffer = match slot {
                    Slot::Call(j) => {
                        let id = call.buffers.get(*j).ok_or_else(|| no_impl(call))?;
                        &self.buf(*id)?.buffer
                    }
                    Slot::Scratch(j) => scratch.get(*j).ok_or_else(|| no_impl(call))?,
                    Slot::Params => &params,
                };
                entries.push(wgpu::BindGroupEntry {
                    binding: i as u32,
                    resource: buffer.as_entire_binding(),
                });
            }
            let layout = pipeline.get_bind_group_layout(0);
            let bind_group = self.scoped("binding the kernel's buffers", || {
                self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(step.entry),
                    layout: &layout,
                    entries: &entries,
                })
            })?;
            out.push(PreparedStep { pipeline, bind_group, workgroups: step.workgroups });
            owned.push(params);
        }
        owned.extend(scratch);
        Ok(Prepared { steps: out, uses: call.buffers.iter().map(|b| b.0).collect(), _owned: owned })
    }

    /// Records `runs` runs of `steps` and returns the seconds they took.
    fn time_runs(&self, steps: &[PreparedStep], runs: u32) -> Result<f64, BackendError> {
        let per_run = steps.len() as u32;
        if per_run == 0 || runs == 0 {
            return Ok(0.0);
        }
        let total = u64::from(per_run) * u64::from(runs);
        let mut done = 0u64;
        let mut seconds = 0.0;
        while done < total {
            let batch = (total - done).min(u64::from(timing::MAX_PASSES.max(per_run)));
            let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("rooftop run"),
            });
            for p in 0..batch {
                let step = &steps[((done + p) % u64::from(per_run)) as usize];
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: None,
                    timestamp_writes: self.timer.writes(p == 0, p + 1 == batch),
                });
                pass.set_pipeline(&step.pipeline);
                pass.set_bind_group(0, &step.bind_group, &[]);
                let [x, y, z] = step.workgroups;
                pass.dispatch_workgroups(x, y, z);
            }
            seconds += self.scoped("running the kernel", || {
                self.timer.submit(&self.device, &self.queue, encoder)
            })??;
            done += batch;
        }
        self.take_uncaptured()?;
        Ok(seconds)
    }

    fn call_key(call: &KernelCall<'_>) -> String {
        format!(
            "{}|{}|{:?}|{:?}|{:?}|{:?}",
            call.case.kernel,
            call.implementation,
            call.case,
            call.buffers,
            call.launch,
            call.scalars
        )
    }
}

fn no_impl(call: &KernelCall<'_>) -> BackendError {
    BackendError::NoImplementation {
        backend: "wgpu".to_string(),
        kernel: call.case.kernel.to_string(),
        implementation: call.implementation.to_string(),
    }
}

/// The catalog device of an adapter, cloned.
fn catalog_match_spec(catalog: &Catalog, info: &wgpu::AdapterInfo) -> Option<DeviceSpec> {
    adapter::catalog_match(catalog, info).cloned()
}

/// Little-endian bytes of a host buffer, padded with zeros to a multiple of 4.
fn to_bytes(data: &HostBuf) -> Vec<u8> {
    let mut v: Vec<u8> = match data {
        HostBuf::F32(x) => x.iter().flat_map(|e| e.to_le_bytes()).collect(),
        HostBuf::F64(x) => x.iter().flat_map(|e| e.to_le_bytes()).collect(),
        HostBuf::U16(x) => x.iter().flat_map(|e| e.to_le_bytes()).collect(),
        HostBuf::U8(x) => x.clone(),
        HostBuf::I8(x) => x.iter().map(|&e| e as u8).collect(),
        HostBuf::U32(x) => x.iter().flat_map(|e| e.to_le_bytes()).collect(),
    };
    v.resize(v.len().next_multiple_of(4).max(4), 0);
    v
}

/// A host buffer of `len` elements of `dtype` from little-endian bytes.
fn from_bytes(dtype: DType, len: usize, b: &[u8]) -> HostBuf {
    match dtype {
        DType::F32 => HostBuf::F32(
            b.chunks_exact(4)
                .take(len)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        ),
        DType::F64 => HostBuf::F64(
            b.chunks_exact(8)
                .take(len)
                .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
        ),
        DType::F16 | DType::Bf16 => HostBuf::U16(
            b.chunks_exact(2).take(len).map(|c| u16::from_le_bytes([c[0], c[1]])).collect(),
        ),
        DType::U8 => HostBuf::U8(b.iter().take(len).copied().collect()),
        DType::I8 => HostBuf::I8(b.iter().take(len).map(|&x| x.cast_signed()).collect()),
        DType::U32 => HostBuf::U32(
            b.chunks_exact(4)
                .take(len)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        ),
    }
}

fn buffer_bytes(dtype: DType, len: usize) -> u64 {
    ((len as u64).saturating_mul(dtype.size_bytes() as u64)).next_multiple_of(4).max(4)
}

impl Backend for WgpuBackend {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn alloc(&mut self, dtype: DType, len: usize) -> Result<BufId, BackendError> {
        let bytes = buffer_bytes(dtype, len);
        let bind = self.limits.max_storage_buffer_binding_size;
        let max = self.limits.max_buffer_size;
        if bytes > bind || bytes > max {
            return Err(BackendError::OutOfMemory {
                bytes,
                reason: format!(
                    "adapter `{}` binds at most {} bytes per storage buffer (max buffer {} bytes)",
                    self.summary.name, bind, max
                ),
            });
        }
        let usage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST;
        let buffer = self.create_buffer(bytes, usage, "rooftop buffer").map_err(|e| match e {
            BackendError::OutOfMemory { reason, .. } => BackendError::OutOfMemory { bytes, reason },
            e => e,
        })?;
        let id = self.next_id;
        self.next_id = self
            .next_id
            .checked_add(1)
            .ok_or_else(|| BackendError::Other("too many buffers".to_string()))?;
        self.buffers.insert(id, Buf { dtype, len, buffer });
        Ok(BufId(id))
    }

    fn upload(&mut self, buf: BufId, data: &HostBuf) -> Result<(), BackendError> {
        let b = self.buf(buf)?;
        let want = HostBuf::zeros(b.dtype, 0);
        if std::mem::discriminant(&want) != std::mem::discriminant(data) || b.len != data.len() {
            return Err(BackendError::BufferMismatch {
                buffer: buf.0,
                expected: format!("{} x {}", b.len, b.dtype.as_str()),
                got: format!("{} x {}", data.len(), data.kind()),
            });
        }
        let bytes = to_bytes(data);
        self.scoped("uploading a buffer", || self.queue.write_buffer(&b.buffer, 0, &bytes))?;
        Ok(())
    }

    fn download(&mut self, buf: BufId) -> Result<HostBuf, BackendError> {
        let b = self.buf(buf)?;
        let size = b.buffer.size();
        let staging = self.create_buffer(
            size,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            "rooftop readback",
        )?;
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("download") });
        encoder.copy_buffer_to_buffer(&b.buffer, 0, &staging, 0, size);
        self.scoped("downloading a buffer", || self.queue.submit([encoder.finish()]))?;
        let bytes = timing::read_bytes(&self.device, &staging)?;
        self.take_uncaptured()?;
        Ok(from_bytes(b.dtype, b.len, &bytes))
    }

    fn free(&mut self, buf: BufId) {
        self.prepared.retain(|_, p| !p.uses.contains(&buf.0));
        if let Some(b) = self.buffers.remove(&buf.0) {
            b.buffer.destroy();
        }
    }

    fn implementations(&self, kernel: KernelRef) -> Vec<Implementation> {
        let f16 = self.device_limits().shader_f16;
        let mut v: Vec<Implementation> = kernels::find(kernel)
            .filter(|k| f16 || !matches!(k.dispatch, kernels::Dispatch::Gemm { f16: true }))
            .map(|k| Implementation {
                id: "rooftop".to_string(),
                builtin: false,
                label: k.label.to_string(),
            })
            .into_iter()
            .collect();
        if let Some(u) = self.sources.get(kernel.name()) {
            v.push(u.implementation());
        }
        v
    }

    fn prepare(&mut self, call: &KernelCall<'_>) -> Result<(), BackendError> {
        let key = Self::call_key(call);
        if self.prepared.contains_key(&key) {
            return Ok(());
        }
        let prepared = if self.sources.contains_key(call.implementation) {
            self.prepare_source(call)?
        } else {
            self.prepare_suite(call)?
        };
        self.prepared.insert(key, prepared);
        Ok(())
    }

    fn run(&mut self, call: &KernelCall<'_>, iters: u32) -> Result<f64, BackendError> {
        let key = Self::call_key(call);
        if !self.prepared.contains_key(&key) {
            self.prepare(call)?;
        }
        let p = self.prepared.get(&key).ok_or_else(|| no_impl(call))?;
        self.time_runs(&p.steps, iters)
    }

    fn flush_cache(&mut self) -> Result<(), BackendError> {
        if self.flush.is_none() {
            let bind = self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size);
            let bytes = FLUSH_BYTES.min(bind) / 4 * 4;
            let n = (bytes / 4).min(u64::from(u32::MAX));
            let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
            let buffer = self.create_buffer(bytes, usage, "rooftop cache flush")?;
            let case = Case {
                kernel: KernelRef::Suite(KernelId::Write),
                sizes: vec![("n", n)],
                dtype: Precision::Fp32,
                weights: None,
                variant: None,
            };
            let plan = kernels::plan(&case, &Launch::default(), &self.device_limits())?;
            let step = plan.steps.first().ok_or_else(|| {
                BackendError::Other("the flush kernel has no dispatch".to_string())
            })?;
            let pipeline = self.pipeline(&step.key(), &step.wgsl(), step.entry)?;
            let params: Vec<u8> = step.params.iter().flat_map(|w| w.to_le_bytes()).collect();
            let params = self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("rooftop flush params"),
                contents: &params,
                usage: wgpu::BufferUsages::UNIFORM,
            });
            let layout = pipeline.get_bind_group_layout(0);
            let bind_group = self.scoped("binding the cache flush buffer", || {
                self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("rooftop flush"),
                    layout: &layout,
                    entries: &[
                        wgpu::BindGroupEntry { binding: 0, resource: buffer.as_entire_binding() },
                        wgpu::BindGroupEntry { binding: 1, resource: params.as_entire_binding() },
                    ],
                })
            })?;
            self.flush = Some((buffer, pipeline, bind_group, step.workgroups));
        }
        let Some((_, pipeline, bind_group, [x, y, z])) = &self.flush else {
            return Ok(());
        };
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("flush") });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, bind_group, &[]);
            pass.dispatch_workgroups(*x, *y, *z);
        }
        self.scoped("flushing the caches", || self.queue.submit([encoder.finish()]))?;
        timing::wait(&self.device)?;
        self.take_uncaptured()
    }

    fn launch_space(&self, call: &KernelCall<'_>) -> Vec<Launch> {
        if let Some(u) = self.sources.get(call.implementation) {
            return vec![u.default_launch(call.launch)];
        }
        let tunable = kernels::find(call.case.kernel).is_some_and(|k| k.tunable);
        if !tunable {
            return vec![self.default_launch(call.case)];
        }
        let v: Vec<Launch> = kernels::workgroup_sizes(&self.device_limits())
            .into_iter()
            .map(|wg| Launch { block: Some([wg, 1, 1]), ..Launch::default() })
            .collect();
        if v.is_empty() {
            vec![self.default_launch(call.case)]
        } else {
            v
        }
    }

    fn default_launch(&self, case: &Case) -> Launch {
        let gemm = kernels::find(case.kernel)
            .is_some_and(|k| matches!(k.dispatch, kernels::Dispatch::Gemm { .. }));
        let block = if gemm {
            kernels::GEMM_BLOCK
        } else {
            [kernels::DEFAULT_WG.min(self.device_limits().max_wg), 1, 1]
        };
        Launch { block: Some(block), ..Launch::default() }
    }

    fn available_memory_bytes(&self) -> Option<u64> {
        // wgpu does not report device memory. A software adapter's buffers live in host
        // memory, which the kernel does report.
        if self.summary.software {
            crate::cpu::info::HostMemory::now().available_bytes
        } else {
            None
        }
    }

    fn load_source(&mut self, kernel: &SourceKernel) -> Result<(), BackendError> {
        let user = source::UserKernel::load(kernel, self)?;
        self.prepared.retain(|k, _| k.split('|').nth(1).is_none_or(|i| i != kernel.name));
        self.sources.insert(kernel.name.clone(), user);
        Ok(())
    }
}

/// Scalars as the 32-bit words of a uniform buffer, padded to 16 bytes.
fn scalar_bytes(scalars: &[Scalar]) -> Vec<u8> {
    let mut v: Vec<u8> = scalars
        .iter()
        .flat_map(|s| match *s {
            Scalar::U32(x) => x.to_le_bytes(),
            Scalar::I32(x) => x.to_le_bytes(),
            Scalar::F32(x) => x.to_le_bytes(),
        })
        .collect();
    v.resize(v.len().next_multiple_of(16).max(16), 0);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_with_padding() {
        let h = HostBuf::U16(vec![1, 2, 3]);
        let b = to_bytes(&h);
        assert_eq!(b.len(), 8);
        assert_eq!(from_bytes(DType::F16, 3, &b), h);
        let h = HostBuf::I8(vec![-1, 2, -3, 4, 5]);
        assert_eq!(from_bytes(DType::I8, 5, &to_bytes(&h)), h);
        let h = HostBuf::F32(vec![1.5, -2.25]);
        assert_eq!(from_bytes(DType::F32, 2, &to_bytes(&h)), h);
        assert_eq!(buffer_bytes(DType::U8, 0), 4);
        assert_eq!(buffer_bytes(DType::F16, 3), 8);
    }

    #[test]
    fn scalars_pack_as_words() {
        let b = scalar_bytes(&[Scalar::U32(7), Scalar::F32(1.0), Scalar::I32(-1)]);
        assert_eq!(b.len(), 16);
        assert_eq!(&b[0..4], &7u32.to_le_bytes());
        assert_eq!(&b[4..8], &1.0f32.to_le_bytes());
        assert_eq!(&b[8..12], &(-1i32).to_le_bytes());
        assert_eq!(scalar_bytes(&[]).len(), 16);
    }
}
