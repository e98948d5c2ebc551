//! The built-in baselines: cuBLAS and cuBLASLt handles (created on first use) and the
//! cuBLASLt plan of a GEMM step.

use super::plan::LtKind;
use super::{ffi, CudaBackend};
use crate::error::BackendError;
use cudarc::driver::DevicePtr;

impl CudaBackend {
    pub(super) fn blas_handle(&mut self) -> Result<&ffi::BlasHandle, BackendError> {
        if !self.blas_present {
            return Err(BackendError::Other("cuBLAS is not loadable on this machine".to_string()));
        }
        if self.blas.is_none() {
            self.blas = Some(ffi::BlasHandle::new(&self.stream).map_err(BackendError::Other)?);
        }
        self.blas.as_ref().ok_or_else(|| BackendError::Other("no cuBLAS handle".to_string()))
    }

    pub(super) fn lt_handle(&mut self) -> Result<(), BackendError> {
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
}

/// The cuBLASLt plan of a step (layouts per `StepSpec::Lt`).
pub(super) fn lt_plan(
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
