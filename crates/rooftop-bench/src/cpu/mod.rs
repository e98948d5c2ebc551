//! The CPU backend: host buffers, kernels in Rust (rayon, vectorised), a rayon pool per
//! thread count, wall-clock timing.

pub mod info;
pub mod kernels;
pub(crate) mod simd;

use crate::backend::{
    Backend, BackendInfo, BufId, DType, HostBuf, Implementation, KernelCall, Launch,
};
use crate::case::{Case, KernelRef};
use crate::error::BackendError;
use info::CpuInfo;
use std::collections::HashMap;
use std::time::Instant;

/// Runs the suite on this machine's CPU cores.
#[derive(Debug)]
pub struct CpuBackend {
    info: BackendInfo,
    cpu: CpuInfo,
    buffers: Vec<Option<(DType, HostBuf)>>,
    pools: HashMap<u32, rayon::ThreadPool>,
    /// Written between runs by `flush_cache` (2x the last-level cache, at least 64 MiB).
    flush: Vec<u8>,
}

impl CpuBackend {
    pub fn new() -> CpuBackend {
        let cpu = CpuInfo::detect();
        let info = BackendInfo {
            backend: "cpu".to_string(),
            device_name: cpu.display_name(),
            timer: "wall clock (std::time::Instant) around the run loop".to_string(),
            parallelism: cpu.logical_cpus,
            simulated: false,
            notes: Vec::new(),
        };
        CpuBackend { info, cpu, buffers: Vec::new(), pools: HashMap::new(), flush: Vec::new() }
    }

    /// What the CPU reports about itself.
    pub fn cpu(&self) -> &CpuInfo {
        &self.cpu
    }

    fn slot(&mut self, buf: BufId) -> Result<&mut (DType, HostBuf), BackendError> {
        self.buffers
            .get_mut(buf.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(BackendError::BadBuffer(buf.0))
    }

    fn pool(&mut self, threads: u32) -> Result<&rayon::ThreadPool, BackendError> {
        if let std::collections::hash_map::Entry::Vacant(e) = self.pools.entry(threads) {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads as usize)
                .thread_name(|i| format!("rooftop-cpu-{i}"))
                .build()
                .map_err(|e| BackendError::Other(format!("cannot start {threads} threads: {e}")))?;
            e.insert(pool);
        }
        Ok(&self.pools[&threads])
    }
}

impl Default for CpuBackend {
    fn default() -> Self {
        CpuBackend::new()
    }
}

impl Backend for CpuBackend {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn alloc(&mut self, dtype: DType, len: usize) -> Result<BufId, BackendError> {
        let bytes = (len as u64).saturating_mul(dtype.size_bytes() as u64);
        if let Some(avail) = self.available_memory_bytes() {
            if bytes > avail {
                return Err(BackendError::OutOfMemory {
                    bytes,
                    reason: format!("the machine has {avail} bytes available"),
                });
            }
        }
        let id = u32::try_from(self.buffers.len())
            .map_err(|_| BackendError::Other("too many buffers".to_string()))?;
        self.buffers.push(Some((dtype, HostBuf::zeros(dtype, len))));
        Ok(BufId(id))
    }

    fn upload(&mut self, buf: BufId, data: &HostBuf) -> Result<(), BackendError> {
        let slot = self.slot(buf)?;
        slot.1.check_replacement(buf, slot.0, data)?;
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
        while matches!(self.buffers.last(), Some(None)) {
            self.buffers.pop();
        }
    }

    fn implementations(&self, kernel: KernelRef) -> Vec<Implementation> {
        let mut v: Vec<Implementation> = kernels::all()
            .filter(|k| kernel == k.kernel)
            .map(|k| Implementation {
                id: k.implementation.to_string(),
                builtin: k.builtin,
                label: k.label.to_string(),
            })
            .collect();
        v.sort_by_key(|i| i.builtin);
        v
    }

    fn prepare(&mut self, call: &KernelCall<'_>) -> Result<(), BackendError> {
        find(call).map(|_| ())
    }

    fn run(&mut self, call: &KernelCall<'_>, iters: u32) -> Result<f64, BackendError> {
        let k = find(call)?;
        let threads = call.launch.threads.unwrap_or(self.info.parallelism).max(1);
        // Take the buffers out of the arena for the duration of the run.
        let mut bufs = Vec::with_capacity(call.buffers.len());
        for id in call.buffers {
            let slot = self.slot(*id)?;
            bufs.push(std::mem::replace(&mut slot.1, HostBuf::U8(Vec::new())));
        }
        let launch = *call.launch;
        let case = call.case;
        let result = self.pool(threads).map(|pool| {
            pool.install(|| {
                let start = Instant::now();
                for _ in 0..iters {
                    (k.run)(case, &mut bufs, &launch)?;
                }
                Ok(start.elapsed().as_secs_f64())
            })
        });
        for (id, b) in call.buffers.iter().zip(bufs) {
            if let Ok(slot) = self.slot(*id) {
                slot.1 = b;
            }
        }
        result?
    }

    fn flush_cache(&mut self) -> Result<(), BackendError> {
        if self.flush.is_empty() {
            let llc = self.cpu.l3_bytes.or(self.cpu.l2_bytes).unwrap_or(32 << 20);
            self.flush = vec![0u8; (2 * llc as usize).max(64 << 20)];
        }
        // Write every cache line so that it evicts both clean and dirty lines of the
        // kernel's buffers; the black_box keeps the stores.
        for (i, b) in self.flush.iter_mut().step_by(64).enumerate() {
            *b = b.wrapping_add(i as u8);
        }
        std::hint::black_box(&self.flush);
        Ok(())
    }

    fn launch_space(&self, call: &KernelCall<'_>) -> Vec<Launch> {
        let tiles: &[u32] = find(call).map_or(&[], |k| k.tiles);
        let mut threads: Vec<u32> = Vec::new();
        let mut t = 1;
        while t < self.info.parallelism {
            threads.push(t);
            t *= 2;
        }
        threads.push(self.info.parallelism);
        let mut v = Vec::new();
        for &th in &threads {
            if tiles.is_empty() {
                v.push(Launch { threads: Some(th), ..Launch::default() });
            }
            for &tile in tiles {
                v.push(Launch { threads: Some(th), tile: Some(tile), ..Launch::default() });
            }
        }
        v
    }

    fn default_launch(&self, _case: &Case) -> Launch {
        Launch { threads: Some(self.info.parallelism), ..Launch::default() }
    }

    fn available_memory_bytes(&self) -> Option<u64> {
        self.cpu.mem_available_bytes
    }
}

/// The CPU implementation a call names (a suite kernel's), or why there is none.
fn find(call: &KernelCall<'_>) -> Result<&'static kernels::CpuKernel, BackendError> {
    call.case.kernel.suite().and_then(|id| kernels::find(id, call.implementation)).ok_or_else(
        || BackendError::NoImplementation {
            backend: "cpu".to_string(),
            kernel: call.case.kernel.to_string(),
            implementation: call.implementation.to_string(),
        },
    )
}
