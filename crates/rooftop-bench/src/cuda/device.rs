//! Finding the GPU: the libraries probed before any other cudarc call, the driver and
//! NVRTC versions checked against each other, the devices listed and one picked by
//! `--adapter`, its attributes queried from the driver.

use super::info::DeviceAttributes;
use super::{driver_err, ffi, CudaDeviceSummary};
use crate::error::BackendError;
use cudarc::driver::{sys, CudaContext};
use std::sync::Arc;

/// The libraries, checked before any other cudarc call; a missing driver or NVRTC is an
/// error, missing cuBLAS / cuBLASLt only removes the built-in GEMMs (the bool).
pub(super) fn probe() -> Result<(bool, i32, (i32, i32)), BackendError> {
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
pub(super) fn query(ctx: &Arc<CudaContext>) -> Result<DeviceAttributes, BackendError> {
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
pub(super) fn device_names() -> Result<Vec<String>, BackendError> {
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
            catalog_id: attrs.catalog_match(rooftop_core::device::Catalog::builtin()).map(|d| d.id),
            attributes: attrs,
            driver_version: version_label(driver),
        });
    }
    Ok(out)
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
}
