//! The CPU path of "bring your own kernel": kernels written as Rust closures over host
//! buffers, registered by name, timed with the wall clock around the run loop.
//!
//! A closure receives a [`HostCall`]: the case (sizes), the spec's scalars and the
//! buffers in spec order (outputs include the [`GUARD_ELEMENTS`](super::GUARD_ELEMENTS)
//! guard after their declared length: take lengths from the sizes, not from the
//! slices). It returns `Err(message)` to report a failure; a panic inside it is caught
//! and reported as a backend error rather than unwinding through the harness.

use crate::backend::{
    Backend, BackendInfo, BufId, DType, HostBuf, Implementation, KernelCall, Launch, Scalar,
};
use crate::case::{Case, KernelRef};
use crate::cpu::info::CpuInfo;
use crate::error::BackendError;
use std::collections::HashMap;
use std::time::Instant;

/// What a host kernel receives on each run.
#[derive(Debug)]
pub struct HostCall<'a> {
    pub case: &'a Case,
    pub scalars: &'a [Scalar],
    /// The buffers in spec order; match them with a slice pattern
    /// (`let [HostBuf::F32(a), HostBuf::F32(b), HostBuf::F32(c)] = &mut call.buffers[..]`).
    pub buffers: Vec<HostBuf>,
}

impl HostCall<'_> {
    /// The value of size variable `name` (0 when the case has none such).
    pub fn size(&self, name: &str) -> usize {
        self.case
            .sizes
            .iter()
            .find(|(k, _)| *k == name)
            .map_or(0, |(_, v)| usize::try_from(*v).unwrap_or(usize::MAX))
    }
}

/// A host kernel.
pub type HostFn = Box<dyn FnMut(&mut HostCall<'_>) -> Result<(), String> + Send>;

/// Runs registered Rust closures on host buffers.
pub struct HostBackend {
    info: BackendInfo,
    cpu: CpuInfo,
    buffers: Vec<Option<HostBuf>>,
    kernels: HashMap<String, HostFn>,
    flush: Vec<u8>,
}

impl std::fmt::Debug for HostBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.kernels.keys().collect();
        names.sort();
        f.debug_struct("HostBackend")
            .field("info", &self.info)
            .field("kernels", &names)
            .finish_non_exhaustive()
    }
}

impl Default for HostBackend {
    fn default() -> Self {
        HostBackend::new()
    }
}

impl HostBackend {
    pub fn new() -> HostBackend {
        let cpu = CpuInfo::detect();
        let info = BackendInfo {
            backend: "cpu".to_string(),
            device_name: cpu.display_name(),
            timer: "wall clock (std::time::Instant) around the run loop".to_string(),
            parallelism: cpu.logical_cpus,
            simulated: false,
            notes: vec!["user kernels: Rust closures on host buffers".to_string()],
        };
        HostBackend { info, cpu, buffers: Vec::new(), kernels: HashMap::new(), flush: Vec::new() }
    }

    /// What the CPU reports about itself (for [`CpuInfo::device_spec`]).
    pub fn cpu(&self) -> &CpuInfo {
        &self.cpu
    }

    /// Registers `f` as the implementation of the spec'd kernel `name`.
    pub fn register(
        &mut self,
        name: &str,
        f: impl FnMut(&mut HostCall<'_>) -> Result<(), String> + Send + 'static,
    ) {
        self.kernels.insert(name.to_string(), Box::new(f));
    }

    fn slot(&mut self, buf: BufId) -> Result<&mut Option<HostBuf>, BackendError> {
        self.buffers
            .get_mut(buf.0 as usize)
            .filter(|s| s.is_some())
            .ok_or(BackendError::BadBuffer(buf.0))
    }
}

impl Backend for HostBackend {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn alloc(&mut self, dtype: DType, len: usize) -> Result<BufId, BackendError> {
        let id = u32::try_from(self.buffers.len())
            .map_err(|_| BackendError::Other("too many buffers".to_string()))?;
        self.buffers.push(Some(HostBuf::zeros(dtype, len)));
        Ok(BufId(id))
    }

    fn upload(&mut self, buf: BufId, data: &HostBuf) -> Result<(), BackendError> {
        let slot = self.slot(buf)?;
        match slot {
            Some(b) if b.len() == data.len() && b.kind() == data.kind() => {
                b.assign(data);
                Ok(())
            }
            Some(b) => Err(BackendError::BufferMismatch {
                buffer: buf.0,
                expected: format!("{} {} elements", b.kind(), b.len()),
                got: format!("{} {} elements", data.kind(), data.len()),
            }),
            None => Err(BackendError::BadBuffer(buf.0)),
        }
    }

    fn download(&mut self, buf: BufId) -> Result<HostBuf, BackendError> {
        self.slot(buf)?.clone().ok_or(BackendError::BadBuffer(buf.0))
    }

    fn host_buffer(&self, buf: BufId) -> Option<&HostBuf> {
        self.buffers.get(buf.0 as usize).and_then(Option::as_ref)
    }

    fn upload_owned(&mut self, buf: BufId, data: HostBuf) -> Result<Option<HostBuf>, BackendError> {
        let slot = self.slot(buf)?;
        match slot {
            Some(b) if b.len() == data.len() && b.kind() == data.kind() => {
                *b = data;
                Ok(None)
            }
            Some(b) => Err(BackendError::BufferMismatch {
                buffer: buf.0,
                expected: format!("{} {} elements", b.kind(), b.len()),
                got: format!("{} {} elements", data.kind(), data.len()),
            }),
            None => Err(BackendError::BadBuffer(buf.0)),
        }
    }

    fn take_host(&mut self, buf: BufId) -> Option<HostBuf> {
        let b = self.slot(buf).ok()?.as_mut()?;
        Some(std::mem::replace(b, HostBuf::U8(Vec::new())))
    }

    fn put_host(&mut self, buf: BufId, data: HostBuf) {
        if let Ok(Some(b)) = self.slot(buf) {
            *b = data;
        }
    }

    fn free(&mut self, buf: BufId) {
        if let Some(s) = self.buffers.get_mut(buf.0 as usize) {
            *s = None;
        }
    }

    fn implementations(&self, kernel: KernelRef) -> Vec<Implementation> {
        if self.kernels.contains_key(kernel.name()) {
            vec![Implementation {
                id: kernel.name().to_string(),
                builtin: false,
                label: "Rust closure".to_string(),
            }]
        } else {
            Vec::new()
        }
    }

    fn prepare(&mut self, call: &KernelCall<'_>) -> Result<(), BackendError> {
        if self.kernels.contains_key(call.implementation) {
            Ok(())
        } else {
            Err(BackendError::NoImplementation {
                backend: "cpu".to_string(),
                kernel: call.case.kernel.to_string(),
                implementation: call.implementation.to_string(),
            })
        }
    }

    fn run(&mut self, call: &KernelCall<'_>, iters: u32) -> Result<f64, BackendError> {
        let mut bufs = Vec::with_capacity(call.buffers.len());
        for (i, id) in call.buffers.iter().enumerate() {
            let taken = self.slot(*id).map(Option::take);
            if let Ok(Some(b)) = taken {
                bufs.push(b);
            } else {
                // Put back what was taken (a repeated or missing id).
                for (b, id) in bufs.into_iter().zip(call.buffers) {
                    self.buffers[id.0 as usize] = Some(b);
                }
                return Err(BackendError::Other(format!(
                    "buffer {i} (id {}) is missing or passed twice",
                    id.0
                )));
            }
        }
        let mut hc = HostCall { case: call.case, scalars: call.scalars, buffers: bufs };
        let result = match self.kernels.get_mut(call.implementation) {
            None => Err(BackendError::NoImplementation {
                backend: "cpu".to_string(),
                kernel: call.case.kernel.to_string(),
                implementation: call.implementation.to_string(),
            }),
            Some(f) => {
                let start = Instant::now();
                let mut r = Ok(());
                for _ in 0..iters {
                    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut hc)));
                    match out {
                        Ok(Ok(())) => {}
                        Ok(Err(m)) => {
                            r = Err(BackendError::Other(format!(
                                "kernel `{}`: {m}",
                                call.implementation
                            )));
                            break;
                        }
                        Err(p) => {
                            let what = p
                                .downcast_ref::<&str>()
                                .map(|s| (*s).to_string())
                                .or_else(|| p.downcast_ref::<String>().cloned())
                                .unwrap_or_else(|| "unknown panic".to_string());
                            r = Err(BackendError::Other(format!(
                                "kernel `{}` panicked: {what}",
                                call.implementation
                            )));
                            break;
                        }
                    }
                }
                r.map(|()| start.elapsed().as_secs_f64())
            }
        };
        for (b, id) in hc.buffers.into_iter().zip(call.buffers) {
            self.buffers[id.0 as usize] = Some(b);
        }
        result
    }

    fn flush_cache(&mut self) -> Result<(), BackendError> {
        if self.flush.is_empty() {
            let llc = self.cpu.l3_bytes.or(self.cpu.l2_bytes).unwrap_or(32 << 20);
            self.flush = vec![0u8; (2 * llc as usize).max(64 << 20)];
        }
        for (i, b) in self.flush.iter_mut().step_by(64).enumerate() {
            *b = b.wrapping_add(i as u8);
        }
        std::hint::black_box(&self.flush);
        Ok(())
    }

    fn launch_space(&self, _call: &KernelCall<'_>) -> Vec<Launch> {
        vec![Launch::default()]
    }

    fn default_launch(&self, _case: &Case) -> Launch {
        Launch::default()
    }

    fn available_memory_bytes(&self) -> Option<u64> {
        crate::cpu::info::HostMemory::now().available_bytes
    }
}
