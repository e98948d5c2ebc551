//! A deterministic backend for tests of the whole pipeline (as hyperfine's
//! `MockExecutor`): buffers live in memory, a "run" writes the reference outputs and
//! returns a simulated time from the kernel's work on a fictional device (100 GB/s,
//! 1 TFLOP/s fp32, 0.5 TFLOP/s fp64, 2 µs launch cost) with a fixed ±2% jitter pattern.
//! Selected by the hidden `--backend mock`; never presented as a measurement.
//!
//! User kernels (`rooftop bench --spec`): [`Backend::load_source`] accepts any language
//! without compiling anything, and a run of a loaded kernel writes the outputs of that
//! kernel's reference (computed as the harness computes it, through the kernel given to
//! [`MockBackend::add_kernel`]) and returns a simulated time from its work model. It
//! exercises the spec machinery (parsing, buffers, scalars, checks, exports), never the
//! user's code.

use crate::backend::{
    Backend, BackendInfo, BufId, DType, HostBuf, Implementation, KernelCall, Launch, SourceKernel,
};
use crate::case::{Case, KernelRef};
use crate::error::BackendError;
use crate::suite;
use rooftop_core::units::Precision;

/// Mock device bandwidth, bytes/s.
pub const MOCK_BW: f64 = 100e9;
/// Mock fp32 peak, FLOP/s.
pub const MOCK_FP32: f64 = 1e12;
/// Mock launch cost, seconds.
pub const MOCK_LAUNCH_S: f64 = 2e-6;
const JITTER: [f64; 5] = [1.0, 1.01, 0.99, 1.02, 0.98];

/// Knobs of the mock backend.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MockConfig {
    /// Kernels whose outputs are deliberately wrong (to test failed checks).
    pub wrong_results: Vec<String>,
    /// Bytes available for buffers (`None`: unlimited).
    pub memory_bytes: Option<u64>,
}

impl MockConfig {
    /// From the environment: `ROOFTOP_MOCK_WRONG=k1,k2`, `ROOFTOP_MOCK_MEMORY=bytes`.
    pub fn from_env() -> MockConfig {
        MockConfig {
            wrong_results: std::env::var("ROOFTOP_MOCK_WRONG")
                .map(|s| s.split(',').map(str::to_string).collect())
                .unwrap_or_default(),
            memory_bytes: std::env::var("ROOFTOP_MOCK_MEMORY").ok().and_then(|s| s.parse().ok()),
        }
    }
}

/// The mock backend.
#[derive(Debug)]
pub struct MockBackend {
    info: BackendInfo,
    config: MockConfig,
    buffers: Vec<Option<(DType, HostBuf)>>,
    runs: u64,
    pending: bool,
    /// Spec'd kernels (boxed: the CLI keeps backends in an enum of similar sizes).
    user: Box<UserKernels>,
}

/// What the mock knows of user (spec'd) kernels.
#[derive(Debug, Default)]
struct UserKernels {
    /// Kernels outside the suite the mock can simulate.
    extra: Vec<&'static dyn suite::Kernel>,
    /// Loaded user sources: (implementation id, label).
    sources: Vec<(String, String)>,
    /// Kernels whose run also changes the last element of every output buffer as
    /// allocated (for spec'd kernels: inside the guard, i.e. an out-of-bounds write).
    write_past_end: Vec<String>,
}

impl MockBackend {
    pub fn new(config: MockConfig) -> MockBackend {
        MockBackend {
            info: BackendInfo {
                backend: "mock".to_string(),
                device_name: "mock device (simulated: 100 GB/s, 1 TFLOP/s fp32)".to_string(),
                timer: "simulated from the work model (no kernel runs)".to_string(),
                parallelism: 4,
                simulated: true,
                notes: vec!["mock backend: every time is simulated, not measured".to_string()],
            },
            config,
            buffers: Vec::new(),
            runs: 0,
            pending: true,
            user: Box::default(),
        }
    }

    /// Makes the runs of `kernels` write one element past the end of their outputs (to
    /// test the out-of-bounds detection of spec'd kernels).
    pub fn set_write_past_end(&mut self, kernels: Vec<String>) {
        self.user.write_past_end = kernels;
    }

    /// Lets the mock simulate `kernel` (a spec'd kernel): its runs write the kernel's
    /// reference outputs and take the time of its work model.
    pub fn add_kernel(&mut self, kernel: &'static dyn suite::Kernel) {
        self.user.extra.retain(|k| k.id() != kernel.id());
        self.user.extra.push(kernel);
    }

    /// The definition of a suite kernel, or of a spec'd kernel given to `add_kernel`.
    fn kernel(&self, kernel: KernelRef) -> Option<&'static dyn suite::Kernel> {
        match kernel {
            KernelRef::Suite(id) => Some(id.def()),
            KernelRef::Spec(_) => self.user.extra.iter().copied().find(|k| k.id() == kernel),
        }
    }

    fn time_of(&self, case: &Case) -> f64 {
        self.kernel(case.kernel).map_or(MOCK_LAUNCH_S, |k| simulated_time_of(k, case))
    }

    fn slot(&mut self, buf: BufId) -> Result<&mut (DType, HostBuf), BackendError> {
        self.buffers
            .get_mut(buf.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(BackendError::BadBuffer(buf.0))
    }

    /// Simulated seconds of one run of `case` (a suite kernel's).
    pub fn simulated_time(case: &Case) -> f64 {
        case.kernel.suite().map_or(MOCK_LAUNCH_S, |id| simulated_time_of(id.def(), case))
    }
}

/// The mock device's time for `case` of `kernel`: its work at 100 GB/s or 1 TFLOP/s
/// (0.5 in fp64), whichever takes longer, plus the launch cost.
fn simulated_time_of(kernel: &dyn suite::Kernel, case: &Case) -> f64 {
    let Ok(work) = kernel.work(case) else { return MOCK_LAUNCH_S };
    let peak = match work.precision {
        Precision::Fp64 => MOCK_FP32 / 2.0,
        _ => MOCK_FP32,
    };
    (work.bytes() / MOCK_BW).max(work.flops / peak) + MOCK_LAUNCH_S
}

impl Backend for MockBackend {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn alloc(&mut self, dtype: DType, len: usize) -> Result<BufId, BackendError> {
        let id = self.buffers.len() as u32;
        self.buffers.push(Some((dtype, HostBuf::zeros(dtype, len))));
        Ok(BufId(id))
    }

    fn upload(&mut self, buf: BufId, data: &HostBuf) -> Result<(), BackendError> {
        let slot = self.slot(buf)?;
        if slot.1.len() != data.len() {
            return Err(BackendError::BufferMismatch {
                buffer: buf.0,
                expected: format!("{} elements", slot.1.len()),
                got: format!("{} elements", data.len()),
            });
        }
        slot.1.assign(data);
        Ok(())
    }

    fn download(&mut self, buf: BufId) -> Result<HostBuf, BackendError> {
        Ok(self.slot(buf)?.1.clone())
    }

    fn download_into(&mut self, buf: BufId, out: &mut HostBuf) -> Result<(), BackendError> {
        out.assign(&self.slot(buf)?.1);
        Ok(())
    }

    fn host_buffer(&self, buf: BufId) -> Option<&HostBuf> {
        self.buffers.get(buf.0 as usize).and_then(Option::as_ref).map(|(_, b)| b)
    }

    fn upload_owned(&mut self, buf: BufId, data: HostBuf) -> Result<Option<HostBuf>, BackendError> {
        let slot = self.slot(buf)?;
        slot.1.check_replacement(buf, slot.0, &data)?;
        slot.1 = data;
        Ok(None)
    }

    fn take_host(&mut self, buf: BufId) -> Option<HostBuf> {
        let slot = self.slot(buf).ok()?;
        Some(std::mem::replace(&mut slot.1, HostBuf::U8(Vec::new())))
    }

    fn put_host(&mut self, buf: BufId, data: HostBuf) {
        if let Ok(slot) = self.slot(buf) {
            slot.1 = data;
        }
    }

    fn free(&mut self, buf: BufId) {
        if let Some(s) = self.buffers.get_mut(buf.0 as usize) {
            *s = None;
        }
    }

    fn implementations(&self, kernel: KernelRef) -> Vec<Implementation> {
        if let Some((id, label)) = self.user.sources.iter().find(|(id, _)| id == kernel.name()) {
            return vec![Implementation { id: id.clone(), builtin: false, label: label.clone() }];
        }
        if kernel.suite().is_none() {
            return Vec::new();
        }
        vec![Implementation {
            id: "rooftop".to_string(),
            builtin: false,
            label: "mock (reference outputs, simulated time)".to_string(),
        }]
    }

    fn prepare(&mut self, _call: &KernelCall<'_>) -> Result<(), BackendError> {
        self.pending = true;
        Ok(())
    }

    fn run(&mut self, call: &KernelCall<'_>, iters: u32) -> Result<f64, BackendError> {
        if self.pending {
            let kernel = self.kernel(call.case.kernel).ok_or_else(|| {
                BackendError::Other(format!(
                    "mock: kernel `{}` is neither a suite kernel nor added with add_kernel",
                    call.case.kernel
                ))
            })?;
            let specs = kernel.buffers(call.case);
            // The buffers are taken out of their slots for the reference (no copies).
            let mut inputs = Vec::with_capacity(call.buffers.len());
            for id in call.buffers {
                inputs.push(std::mem::replace(&mut self.slot(*id)?.1, HostBuf::U8(Vec::new())));
            }
            let outs = kernel.reference(call.case, &inputs);
            for (id, b) in call.buffers.iter().zip(inputs) {
                self.slot(*id)?.1 = b;
            }
            let mut outs = outs.into_iter();
            let name = call.case.kernel.name();
            let wrong = self.config.wrong_results.iter().any(|k| k == name);
            let is_suite = call.case.kernel.suite().is_some();
            let past_end = self.user.write_past_end.iter().any(|k| k == name);
            for (s, id) in specs.iter().zip(call.buffers) {
                if s.output {
                    let mut o = outs.next().ok_or_else(|| {
                        BackendError::Other("reference returned too few outputs".to_string())
                    })?;
                    if wrong && is_suite {
                        corrupt(&mut o);
                    } else if wrong {
                        // Spec'd kernels' outputs end in a guard that must stay intact
                        // (else this reads as an out-of-bounds write): corrupt the first
                        // element only.
                        corrupt_first(&mut o);
                    }
                    if past_end {
                        corrupt_last(&mut o);
                    }
                    self.slot(*id)?.1 = o;
                }
            }
            self.pending = false;
        }
        let t = self.time_of(call.case);
        let mut total = 0.0;
        for _ in 0..iters {
            total += t * JITTER[(self.runs % JITTER.len() as u64) as usize];
            self.runs += 1;
        }
        Ok(total)
    }

    fn flush_cache(&mut self) -> Result<(), BackendError> {
        Ok(())
    }

    fn launch_space(&self, _call: &KernelCall<'_>) -> Vec<Launch> {
        [64, 128, 256]
            .iter()
            .map(|&b| Launch { block: Some([b, 1, 1]), ..Launch::default() })
            .collect()
    }

    fn default_launch(&self, _case: &Case) -> Launch {
        Launch { block: Some([256, 1, 1]), ..Launch::default() }
    }

    fn available_memory_bytes(&self) -> Option<u64> {
        // The mock keeps its buffers in host memory.
        self.config.memory_bytes.or_else(host_available_memory)
    }

    fn load_source(&mut self, kernel: &SourceKernel) -> Result<(), BackendError> {
        let label = format!(
            "mock of {} ({}, entry {}): reference outputs, simulated time",
            kernel.path.display(),
            kernel.lang.as_str(),
            kernel.entry
        );
        self.user.sources.retain(|(id, _)| *id != kernel.name);
        self.user.sources.push((kernel.name.clone(), label));
        Ok(())
    }
}

/// Changes the first element of `b`.
fn corrupt_first(b: &mut HostBuf) {
    match b {
        HostBuf::F32(v) => v.iter_mut().take(1).for_each(|x| *x = *x * 1.5 + 1.0),
        HostBuf::F64(v) => v.iter_mut().take(1).for_each(|x| *x = *x * 1.5 + 1.0),
        HostBuf::U16(v) => v.iter_mut().take(1).for_each(|x| *x ^= 0x4000),
        HostBuf::U8(v) => v.iter_mut().take(1).for_each(|x| *x ^= 0xFF),
        HostBuf::I8(v) => v.iter_mut().take(1).for_each(|x| *x = x.wrapping_add(1)),
        HostBuf::U32(v) => v.iter_mut().take(1).for_each(|x| *x = x.wrapping_add(1)),
    }
}

/// Changes the last element of `b` (see [`MockBackend::set_write_past_end`]).
fn corrupt_last(b: &mut HostBuf) {
    match b {
        HostBuf::F32(v) => v.iter_mut().last().into_iter().for_each(|x| *x += 1.0),
        HostBuf::F64(v) => v.iter_mut().last().into_iter().for_each(|x| *x += 1.0),
        HostBuf::U16(v) => v.iter_mut().last().into_iter().for_each(|x| *x ^= 0x4000),
        HostBuf::U8(v) => v.iter_mut().last().into_iter().for_each(|x| *x ^= 0xFF),
        HostBuf::I8(v) => v.iter_mut().last().into_iter().for_each(|x| *x = x.wrapping_add(1)),
        HostBuf::U32(v) => v.iter_mut().last().into_iter().for_each(|x| *x = x.wrapping_add(1)),
    }
}

/// `MemAvailable` of `/proc/meminfo`, bytes (Linux; `None` elsewhere).
fn host_available_memory() -> Option<u64> {
    crate::cpu::info::HostMemory::now().available_bytes
}

fn corrupt(b: &mut HostBuf) {
    match b {
        HostBuf::F32(v) => v.iter_mut().for_each(|x| *x = *x * 1.5 + 1.0),
        HostBuf::F64(v) => v.iter_mut().for_each(|x| *x = *x * 1.5 + 1.0),
        HostBuf::U16(v) => v.iter_mut().for_each(|x| *x ^= 0x4000),
        HostBuf::U8(v) => v.iter_mut().for_each(|x| *x ^= 0xFF),
        HostBuf::I8(v) => v.iter_mut().for_each(|x| *x = x.wrapping_add(1)),
        HostBuf::U32(v) => v.iter_mut().for_each(|x| *x = x.wrapping_add(1)),
    }
}

/// The fictional device of the mock backend, as a device file.
const MOCK_DEVICE: &str = r#"
schema_version = 1
[[device]]
id = "mock"
name = "mock device (simulated)"
vendor = "other"
family = "unknown"
source = "rooftop mock backend (fictional figures)"
confidence = "high"
provenance = "catalog"
[device.compute]
num_cu = 4
cu_kind = "core"
warp_size = 1
[device.peak_tflops]
fp32_vector = 1.0
fp64_vector = 0.5
[device.memory]
bandwidth_gbs = 100
"#;

/// The mock device's spec (100 GB/s, 1 TFLOP/s fp32, 0.5 TFLOP/s fp64).
pub fn device_spec() -> rooftop_core::device::DeviceSpec {
    rooftop_core::device::parse_device_file(MOCK_DEVICE, "mock")
        .ok()
        .and_then(|mut v| v.pop())
        .expect("the embedded mock device file parses")
}

#[cfg(test)]
mod tests {
    #[test]
    fn mock_device_parses() {
        let d = super::device_spec();
        assert_eq!(d.peak_bw_gbs, 100.0);
    }
}
