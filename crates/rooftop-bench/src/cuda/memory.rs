//! Device memory: buffers, host bytes in and out, raw allocations, and the buffer the
//! L2 flush kernel sweeps.

use super::CudaBackend;
use crate::backend::{BufId, DType, HostBuf};
use crate::error::BackendError;
use cudarc::driver::{CudaSlice, DevicePtr};

/// A device buffer.
#[derive(Debug)]
pub(super) struct DevBuf {
    pub(super) dtype: DType,
    pub(super) len: usize,
    pub(super) ptr: u64,
    pub(super) mem: CudaSlice<u8>,
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
    pub(super) fn buf(&self, id: BufId) -> Result<&DevBuf, BackendError> {
        self.buffers
            .get(id.0 as usize)
            .and_then(Option::as_ref)
            .ok_or(BackendError::BadBuffer(id.0))
    }

    pub(super) fn alloc_bytes(&self, bytes: usize) -> Result<CudaSlice<u8>, BackendError> {
        self.stream.alloc_zeros::<u8>(bytes.max(1)).map_err(|e| BackendError::OutOfMemory {
            bytes: bytes as u64,
            reason: format!("cuMemAlloc: {e:?}"),
        })
    }

    pub(super) fn ensure_flush(&mut self) -> Result<(), BackendError> {
        if self.flush.is_none() {
            let bytes = (2 * self.attrs.l2_bytes).max(64 << 20);
            let mem = self.alloc_bytes(bytes as usize)?;
            let (p, _) = mem.device_ptr(&self.stream);
            self.flush = Some((mem, p, bytes / 4));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
