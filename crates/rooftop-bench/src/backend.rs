//! The backend interface every device implements (CPU, mock, CUDA, wgpu, and the
//! wrappers of spec'd kernels).

use crate::case::{Case, KernelRef};
use crate::error::BackendError;
/// The backend records that results carry (`rooftop_core::schema::bench`).
pub use rooftop_core::schema::bench::{BackendInfo, Implementation, Launch, LaunchInfo};
use serde::Serialize;

/// Element type of a device buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    F32,
    F64,
    /// IEEE half, stored as raw bits.
    F16,
    /// bfloat16, stored as raw bits.
    Bf16,
    U8,
    I8,
    U32,
}

impl DType {
    pub fn size_bytes(self) -> usize {
        match self {
            DType::F32 | DType::U32 => 4,
            DType::F64 => 8,
            DType::F16 | DType::Bf16 => 2,
            DType::U8 | DType::I8 => 1,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16 => "f16",
            DType::Bf16 => "bf16",
            DType::U8 => "u8",
            DType::I8 => "i8",
            DType::U32 => "u32",
        }
    }
}

/// Host-side contents of a buffer.
#[derive(Debug, Clone, PartialEq)]
pub enum HostBuf {
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// F16 or BF16 bits (the [`DType`] of the buffer says which).
    U16(Vec<u16>),
    U8(Vec<u8>),
    I8(Vec<i8>),
    U32(Vec<u32>),
}

impl HostBuf {
    /// A zero-filled buffer of `len` elements of `dtype`.
    pub fn zeros(dtype: DType, len: usize) -> HostBuf {
        match dtype {
            DType::F32 => HostBuf::F32(vec![0.0; len]),
            DType::F64 => HostBuf::F64(vec![0.0; len]),
            DType::F16 | DType::Bf16 => HostBuf::U16(vec![0; len]),
            DType::U8 => HostBuf::U8(vec![0; len]),
            DType::I8 => HostBuf::I8(vec![0; len]),
            DType::U32 => HostBuf::U32(vec![0; len]),
        }
    }

    /// Makes `self` a copy of `src`, reusing `self`'s allocation when both hold the same
    /// element type (the derived `clone_from` of an enum allocates anew: for a 128 MiB
    /// buffer that is 32 Ki page faults per copy).
    /// `Ok` when `data` can replace `self`, the contents of buffer `buf` of `dtype`: the
    /// same element type and length; else the mismatch, in the backend's error.
    pub(crate) fn check_replacement(
        &self,
        buf: BufId,
        dtype: DType,
        data: &HostBuf,
    ) -> Result<(), BackendError> {
        let want = HostBuf::zeros(dtype, 0);
        if std::mem::discriminant(&want) != std::mem::discriminant(data) || self.len() != data.len()
        {
            return Err(BackendError::BufferMismatch {
                buffer: buf.0,
                expected: format!("{} x {}", self.len(), dtype.as_str()),
                got: format!("{} x {}", data.len(), data.kind()),
            });
        }
        Ok(())
    }

    /// Large copies run on every core: the first touch of a fresh allocation faults its
    /// pages in, and the kernel clears them on the faulting core.
    pub fn assign(&mut self, src: &HostBuf) {
        match (self, src) {
            (HostBuf::F32(a), HostBuf::F32(b)) => copy_into(a, b),
            (HostBuf::F64(a), HostBuf::F64(b)) => copy_into(a, b),
            (HostBuf::U16(a), HostBuf::U16(b)) => copy_into(a, b),
            (HostBuf::U8(a), HostBuf::U8(b)) => copy_into(a, b),
            (HostBuf::I8(a), HostBuf::I8(b)) => copy_into(a, b),
            (HostBuf::U32(a), HostBuf::U32(b)) => copy_into(a, b),
            (a, b) => *a = b.clone(),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            HostBuf::F32(v) => v.len(),
            HostBuf::F64(v) => v.len(),
            HostBuf::U16(v) => v.len(),
            HostBuf::U8(v) => v.len(),
            HostBuf::I8(v) => v.len(),
            HostBuf::U32(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The variant's name, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            HostBuf::F32(_) => "f32",
            HostBuf::F64(_) => "f64",
            HostBuf::U16(_) => "u16 (f16/bf16 bits)",
            HostBuf::U8(_) => "u8",
            HostBuf::I8(_) => "i8",
            HostBuf::U32(_) => "u32",
        }
    }

    pub fn as_f32(&self) -> Option<&[f32]> {
        if let HostBuf::F32(v) = self {
            Some(v)
        } else {
            None
        }
    }

    pub fn as_f64(&self) -> Option<&[f64]> {
        if let HostBuf::F64(v) = self {
            Some(v)
        } else {
            None
        }
    }

    pub fn as_u32(&self) -> Option<&[u32]> {
        if let HostBuf::U32(v) = self {
            Some(v)
        } else {
            None
        }
    }

    pub fn as_u16(&self) -> Option<&[u16]> {
        if let HostBuf::U16(v) = self {
            Some(v)
        } else {
            None
        }
    }

    pub fn as_u8(&self) -> Option<&[u8]> {
        if let HostBuf::U8(v) = self {
            Some(v)
        } else {
            None
        }
    }

    pub fn as_i8(&self) -> Option<&[i8]> {
        if let HostBuf::I8(v) = self {
            Some(v)
        } else {
            None
        }
    }

    /// Every element widened to f64 (f16/bf16 bits are NOT decoded: use the typed
    /// accessors for those).
    pub fn to_f64_lossy(&self) -> Vec<f64> {
        match self {
            HostBuf::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            HostBuf::F64(v) => v.clone(),
            HostBuf::U16(v) => v.iter().map(|&x| f64::from(x)).collect(),
            HostBuf::U8(v) => v.iter().map(|&x| f64::from(x)).collect(),
            HostBuf::I8(v) => v.iter().map(|&x| f64::from(x)).collect(),
            HostBuf::U32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        }
    }
}

/// Handle of a device buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct BufId(pub u32);

/// A scalar kernel argument (user kernels from `--spec` take the sizes as scalars).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Scalar {
    U32(u32),
    I32(i32),
    F32(f32),
}

/// What one run of a kernel needs: the case (sizes, dtype, options), which
/// implementation, the buffers in the order the suite's `buffers()` lists them, the
/// launch parameters, and scalar arguments (after the buffers; empty for the built-in
/// suite, whose kernels take their sizes from the case).
#[derive(Debug, Clone, Copy)]
pub struct KernelCall<'a> {
    pub case: &'a Case,
    pub implementation: &'a str,
    pub buffers: &'a [BufId],
    pub launch: &'a Launch,
    pub scalars: &'a [Scalar],
}

/// Language of a user kernel's source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceLang {
    /// CUDA C++, compiled by NVRTC.
    Cuda,
    Wgsl,
    /// Metal Shading Language (wgpu passthrough on macOS).
    Metal,
    /// SPIR-V binary.
    Spirv,
}

impl SourceLang {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceLang::Cuda => "CUDA",
            SourceLang::Wgsl => "WGSL",
            SourceLang::Metal => "Metal",
            SourceLang::Spirv => "SPIR-V",
        }
    }

    /// The language a file extension names (`cu`, `wgsl`, `metal`, `spv`).
    pub fn from_extension(ext: &str) -> Option<SourceLang> {
        match ext.to_ascii_lowercase().as_str() {
            "cu" | "cuh" => Some(SourceLang::Cuda),
            "wgsl" => Some(SourceLang::Wgsl),
            "metal" => Some(SourceLang::Metal),
            "spv" => Some(SourceLang::Spirv),
            _ => None,
        }
    }
}

/// A user kernel given as source, for backends that compile kernels at run time. After
/// [`Backend::load_source`], calls whose `implementation` is `name` run it with the
/// call's buffers (in order), then its scalars, on the call's `grid` × `block`.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceKernel {
    /// Implementation id the calls will use.
    pub name: String,
    pub lang: SourceLang,
    /// Where the source came from (for compiler messages).
    pub path: std::path::PathBuf,
    /// The source text (UTF-8), or the SPIR-V binary.
    pub code: Vec<u8>,
    /// Entry point (kernel function) name.
    pub entry: String,
}

/// A device that can run the kernel suite.
///
/// Buffers are created by [`Backend::alloc`] and filled by [`Backend::upload`]; a kernel
/// run names them in [`KernelCall::buffers`]. [`Backend::run`] must not return before the
/// device has finished (synchronise, or use device timestamps) and returns the elapsed
/// seconds of `iters` back-to-back runs.
pub trait Backend {
    fn info(&self) -> &BackendInfo;

    fn alloc(&mut self, dtype: DType, len: usize) -> Result<BufId, BackendError>;
    fn upload(&mut self, buf: BufId, data: &HostBuf) -> Result<(), BackendError>;
    fn download(&mut self, buf: BufId) -> Result<HostBuf, BackendError>;
    fn free(&mut self, buf: BufId);

    /// Downloads `buf` into `out`, reusing `out`'s allocation where the backend can (the
    /// harness downloads every checked output into the same host buffer case after case).
    fn download_into(&mut self, buf: BufId, out: &mut HostBuf) -> Result<(), BackendError> {
        *out = self.download(buf)?;
        Ok(())
    }

    /// The contents of `buf` in place, for backends whose buffers live in host memory
    /// (CPU, mock): the harness then checks outputs without copying them. `None`: use
    /// [`Backend::download_into`].
    fn host_buffer(&self, _buf: BufId) -> Option<&HostBuf> {
        None
    }

    /// Uploads `data`, taking it as the buffer's contents where the backend's buffers
    /// are host memory (no copy: returns `None`), else copying it (returns it back).
    fn upload_owned(&mut self, buf: BufId, data: HostBuf) -> Result<Option<HostBuf>, BackendError> {
        self.upload(buf, &data)?;
        Ok(Some(data))
    }

    /// Moves the contents of a host-memory buffer out (the buffer is then empty until
    /// [`Backend::put_host`]; no kernel may run with it meanwhile). `None` where buffers
    /// are not host memory.
    fn take_host(&mut self, _buf: BufId) -> Option<HostBuf> {
        None
    }

    /// Puts back what [`Backend::take_host`] took.
    fn put_host(&mut self, _buf: BufId, _data: HostBuf) {}

    /// The implementations this backend has for `kernel` (ours first), empty when the
    /// backend cannot run it.
    fn implementations(&self, kernel: KernelRef) -> Vec<Implementation>;

    /// Compiles or otherwise readies a call; never timed.
    fn prepare(&mut self, call: &KernelCall<'_>) -> Result<(), BackendError>;

    /// Runs the call `iters` times back to back and returns the elapsed seconds.
    fn run(&mut self, call: &KernelCall<'_>, iters: u32) -> Result<f64, BackendError>;

    /// Evicts the caches so that the next run starts cold (for `--flush-cache`).
    fn flush_cache(&mut self) -> Result<(), BackendError>;

    /// Launch configurations `--autotune` sweeps for this call (at least one).
    fn launch_space(&self, call: &KernelCall<'_>) -> Vec<Launch>;

    /// The launch used when none is given.
    fn default_launch(&self, case: &Case) -> Launch;

    /// Memory available for buffers, when known (to refuse impossible sizes up front).
    fn available_memory_bytes(&self) -> Option<u64>;

    /// The launches a prepared call makes, with their resources and theoretical occupancy
    /// (empty when the backend does not know them: CPU, mock, wgpu).
    fn launch_info(&self, _call: &KernelCall<'_>) -> Vec<LaunchInfo> {
        Vec::new()
    }

    /// Compiles a user kernel from source (`rooftop bench --spec`); a compile error is
    /// `BackendError::Other` carrying the compiler's log. Backends without run-time
    /// compilation refuse.
    fn load_source(&mut self, kernel: &SourceKernel) -> Result<(), BackendError> {
        Err(BackendError::Other(format!(
            "the {} backend cannot run {} kernels from source ({})",
            self.info().backend,
            kernel.lang.as_str(),
            kernel.path.display()
        )))
    }
}

/// `dst` made a copy of `src`, in parallel chunks when both are large and the same length.
fn copy_into<T: Copy + Send + Sync>(dst: &mut Vec<T>, src: &[T]) {
    use rayon::prelude::*;
    /// Elements per parallel chunk, and the size under which one thread copies.
    const CHUNK: usize = 1 << 18;
    if dst.len() == src.len() && src.len() > CHUNK {
        dst.par_chunks_mut(CHUNK).zip(src.par_chunks(CHUNK)).for_each(|(d, s)| {
            d.copy_from_slice(s);
        });
    } else {
        dst.clear();
        dst.extend_from_slice(src);
    }
}
