//! Apple GPU occupancy: an *estimate* for Apple7/8 (M1, M2), no model for Apple9 (M3, M4).
//!
//! What Apple documents (the Metal feature set tables and `MTLComputeCommandEncoder`
//! docs): SIMD width 32, at most 1024 threads per threadgroup (a pipeline's
//! `maxTotalThreadsPerThreadgroup` can be lower when the kernel uses many registers), at
//! most 32 KiB of threadgroup memory per threadgroup, allocated in 16-byte multiples.
//! What Apple does not document: threadgroup memory per core and how many threadgroups
//! a core keeps resident. Third-party measurements on Apple7/8
//! (`philipturner/metal-benchmarks` on GitHub) give ~60 KiB of threadgroup memory and ~208 KB of
//! registers per core, and 384-3072 resident threads (12-96 SIMD-groups) per core
//! depending on register use. The estimate (docs/reference/occupancy.md#apple):
//!
//! ```text
//! tg_by_mem     = floor(60 KiB / roundup(tg_mem, 16))        (inf if tg_mem == 0)
//! tg_by_threads = floor(96 / ceil(threads / 32))             96 SIMD-groups at low register use
//! threadgroups  = min(tg_by_mem, tg_by_threads); occupancy = SIMD-groups / 96
//! ```
//!
//! Register use is not modelled (nothing public says how residency falls with it), so
//! the estimate is an upper bound for register-heavy kernels. Two simpler rules that
//! circulate are reported as labelled notes: "threads per threadgroup / max threads per
//! threadgroup" (a measure of threadgroup size, not residency) and "<= 8 KB -> 4,
//! <= 16 KB -> 2, <= 32 KB -> 1 threadgroups per core", which assumes 32 KB per core where
//! ~60 KB was measured: conservative, and no Apple document supports it.
//!
//! Apple9 (M3, M4) allocates registers and threadgroup memory dynamically ("Dynamic
//! Caching"), so no residency rule is computed: decision — rooftop checks the documented
//! per-threadgroup limits (an [`OccupancyError::Invalid`] names the one broken) and
//! otherwise returns [`OccupancyError::Unsupported`] with a sentence saying the
//! threadgroup is within them. Returning numbers there would print an occupancy nobody
//! can source; the Xcode GPU profiler's measured occupancy is the tool for M3/M4.

use super::{
    check_threads, div_ceil, fmt_bytes, pct, resolve, round_up, to_blocks, KernelResources,
    Limiter, Occupancy, OccupancyError, OccupancyOptions, Scope,
};
use crate::device::{ArchFamily, DeviceSpec};
use crate::units::Confidence;

const KIB: u64 = 1024;

/// Threadgroup memory is allocated in multiples of 16 bytes (Metal
/// `setThreadgroupMemoryLength`).
pub const TG_MEM_GRANULE_BYTES: u64 = 16;

/// Documented per-threadgroup maximum of threadgroup memory (Metal feature set tables).
pub const MAX_TG_MEM_PER_THREADGROUP: u64 = 32 * KIB;

/// Documented per-threadgroup maximum of threads (Metal feature set tables).
pub const MAX_THREADS_PER_THREADGROUP: u32 = 1024;

/// Threadgroup memory per core on Apple7/8, measured (metal-benchmarks), when the device
/// lacks it.
pub const APPLE78_TG_MEM_PER_CORE: u64 = 60 * KIB;

/// Resident SIMD-groups per core on Apple7/8 at low register use, measured (metal-benchmarks: 3072
/// threads), when the device lacks it.
pub const APPLE78_SIMDGROUPS_PER_CORE: u32 = 96;

/// SIMD width of every Apple GPU (Metal `threadExecutionWidth`).
pub const SIMD_WIDTH: u32 = 32;

/// The threadgroups-per-core rule of thumb in circulation (docs/reference/occupancy.md#apple):
/// conservative and unsourced (it assumes 32 KB of threadgroup memory per core). `None`
/// above 32 KB.
pub fn circulated_threadgroups_per_core(tg_mem_bytes: u64) -> Option<u32> {
    match tg_mem_bytes {
        0..=8192 => Some(4),
        8193..=16384 => Some(2),
        16385..=32768 => Some(1),
        _ => None,
    }
}

/// Occupancy on an Apple GPU: an estimate on Apple7/8, limit checks only on Apple9.
pub fn occupancy(
    device: &DeviceSpec,
    res: &KernelResources,
    opts: &OccupancyOptions,
) -> Result<Occupancy, OccupancyError> {
    let l = &device.limits;
    let max_threads =
        l.max_threads_per_block.filter(|t| *t > 0).unwrap_or(MAX_THREADS_PER_THREADGROUP);
    check_threads(device, res, opts, max_threads, "threadgroup")?;
    let tg_max =
        l.smem_bytes_per_block_max.filter(|b| *b > 0).unwrap_or(MAX_TG_MEM_PER_THREADGROUP);
    let tg_mem = res.smem_bytes;
    if tg_mem > tg_max {
        return Err(OccupancyError::Invalid(format!(
            "{} of threadgroup memory exceed the {} maximum per threadgroup on {}",
            fmt_bytes(tg_mem),
            fmt_bytes(tg_max),
            device.name
        )));
    }
    if device.family == ArchFamily::Apple9 {
        return Err(OccupancyError::Unsupported(format!(
            "{} is an Apple9 GPU: it allocates registers and threadgroup memory dynamically \
             (Dynamic Caching) and Apple publishes no residency rules, so rooftop computes no \
             occupancy; the threadgroup ({} threads, {} of threadgroup memory) is within the \
             documented limits ({max_threads} threads, {}); use the Xcode GPU profiler's \
             measured occupancy",
            device.name,
            res.threads_per_block,
            fmt_bytes(tg_mem),
            fmt_bytes(tg_max)
        )));
    }

    let mut notes = Vec::new();
    let pool = l.smem_bytes_per_cu.filter(|b| *b > 0).unwrap_or(APPLE78_TG_MEM_PER_CORE);
    let max_sg =
        u64::from(l.max_warps_per_cu.filter(|w| *w > 0).unwrap_or(APPLE78_SIMDGROUPS_PER_CORE));
    let width = u64::from(if device.warp_size > 0 { device.warp_size } else { SIMD_WIDTH });
    let t = u64::from(res.threads_per_block);
    let simdgroups = div_ceil(t, width);
    let alloc = round_up(tg_mem, TG_MEM_GRANULE_BYTES);
    let limits = vec![
        (Limiter::Warps, Some(to_blocks(max_sg / simdgroups))),
        (Limiter::SharedMemory, (alloc > 0).then(|| to_blocks(pool / alloc))),
    ];
    let (tgs, limiter, tie) = resolve(&limits);
    notes.push(format!(
        "estimate: Apple publishes no residency rules; uses the ~{} of threadgroup memory and \
         {max_sg} resident SIMD-groups per core measured on Apple7/8 by metal-benchmarks",
        fmt_bytes(pool)
    ));
    if res.regs_per_thread.is_some_and(|r| r > 0) {
        notes.push(
            "register use is not modelled on Apple GPUs: with many registers fewer SIMD-groups \
             stay resident (down to ~12 per core), so this is an upper bound"
                .to_string(),
        );
    }
    notes.extend(tie);

    // The two rules in circulation, labelled (docs/reference/occupancy.md#apple).
    let kernel_max = opts
        .kernel_max_threads_per_block
        .filter(|k| *k > 0)
        .map_or(max_threads, |k| k.min(max_threads));
    notes.push(format!(
        "a common rule, threads per threadgroup / max threads per threadgroup: {t} / {kernel_max} \
         = {:.1}% (measures threadgroup size, not residency)",
        pct(t, u64::from(kernel_max))
    ));
    if let Some(n) = circulated_threadgroups_per_core(tg_mem) {
        notes.push(format!(
            "a common rule of thumb (<= 8 KB -> 4, <= 16 KB -> 2, <= 32 KB -> 1 threadgroups \
             per core): {n} threadgroup{} per core; conservative and unsourced, it assumes \
             32 KB of threadgroup memory per core where ~60 KB was measured",
            if n == 1 { "" } else { "s" }
        ));
    }

    let active = u64::from(tgs) * simdgroups;
    Ok(Occupancy {
        blocks_per_cu: tgs,
        active_warps_per_cu: to_blocks(active),
        max_warps_per_cu: to_blocks(max_sg),
        occupancy_pct: pct(active, max_sg),
        limiter,
        limits,
        estimate: true,
        notes,
        scope: Scope::Core,
        waves_per_simd: None,
        confidence: Confidence::Low,
    })
}

#[cfg(test)]
// Tests state their expectation with unwrap: a failure is the test's message.
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::test_devices as dev;
    use super::super::{
        occupancy, occupancy_with, KernelResources, Limiter, OccupancyError, OccupancyOptions,
        Scope,
    };
    use super::*;

    fn res(threads: u32, tg_mem: u64) -> KernelResources {
        KernelResources {
            threads_per_block: threads,
            smem_bytes: tg_mem,
            ..KernelResources::default()
        }
    }

    #[test]
    fn m1_estimate_memory_bound() {
        // 256 threads = 8 SIMD-groups; 96 / 8 = 12 by threads. 16 KiB: 60 / 16 = 3 by
        // memory. 3 TGs x 8 = 24 SIMD-groups / 96 = 25 %.
        let o = occupancy(&dev::m1(), &res(256, 16 * KIB)).unwrap();
        assert!(o.estimate);
        assert_eq!(o.scope, Scope::Core);
        assert_eq!(o.limits, vec![(Limiter::Warps, Some(12)), (Limiter::SharedMemory, Some(3))]);
        assert_eq!(o.blocks_per_cu, 3);
        assert_eq!(o.active_warps_per_cu, 24);
        assert_eq!(o.max_warps_per_cu, 96);
        assert_eq!(o.occupancy_pct, 25.0);
        assert_eq!(o.limiter, Limiter::SharedMemory);
        assert_eq!(o.confidence, Confidence::Low);
        // The two rules in circulation: 256 / 1024 = 25 %; 16 KB -> 2 threadgroups per core.
        assert!(o.notes.iter().any(|n| n.contains("256 / 1024 = 25.0%")), "{:?}", o.notes);
        assert!(o.notes.iter().any(|n| n.contains("2 threadgroups per core")), "{:?}", o.notes);
    }

    #[test]
    fn m1_estimate_thread_bound_and_granule() {
        // 1024 threads = 32 SIMD-groups -> 3 TGs by threads; 1 B rounds to 16 B ->
        // 3840 by memory. 96 / 96 = 100 %.
        let o = occupancy(&dev::m1(), &res(1024, 1)).unwrap();
        assert_eq!(o.limits[1], (Limiter::SharedMemory, Some(3840)));
        assert_eq!(o.blocks_per_cu, 3);
        assert_eq!(o.occupancy_pct, 100.0);
        assert_eq!(o.limiter, Limiter::Warps);
        // 8 KB -> 7 by the measured pool where the rule of thumb says 4.
        let o = occupancy(&dev::m1(), &res(64, 8 * KIB)).unwrap();
        assert_eq!(o.blocks_per_cu, 7);
        assert!(o.notes.iter().any(|n| n.contains("4 threadgroups per core")));
    }

    #[test]
    fn m1_zero_memory_and_kernel_limit() {
        let o = occupancy(&dev::m1(), &res(96, 0)).unwrap();
        assert_eq!(o.limits[1], (Limiter::SharedMemory, None));
        assert_eq!(o.blocks_per_cu, 32);
        // The threads-per-threadgroup rule uses the pipeline's own maximum when given.
        let pipeline_512 =
            OccupancyOptions { kernel_max_threads_per_block: Some(512), ..Default::default() };
        let o = occupancy_with(&dev::m1(), &res(256, 0), &pipeline_512).unwrap();
        assert!(o.notes.iter().any(|n| n.contains("256 / 512 = 50.0%")), "{:?}", o.notes);
        assert!(matches!(
            occupancy_with(&dev::m1(), &res(768, 0), &pipeline_512),
            Err(OccupancyError::Invalid(_))
        ));
    }

    #[test]
    fn documented_limits_are_enforced() {
        for d in [dev::m1(), dev::m3_max()] {
            assert!(matches!(occupancy(&d, &res(0, 0)), Err(OccupancyError::Invalid(_))));
            assert!(matches!(occupancy(&d, &res(1025, 0)), Err(OccupancyError::Invalid(_))));
            let e = occupancy(&d, &res(256, 32 * KIB + 16)).unwrap_err();
            assert!(matches!(&e, OccupancyError::Invalid(m) if m.contains("32 KiB")), "{e}");
        }
        assert!(occupancy(&dev::m1(), &res(256, 32 * KIB)).is_ok());
    }

    #[test]
    fn apple9_is_unsupported_after_the_limit_checks() {
        let e = occupancy(&dev::m3_max(), &res(256, 16 * KIB)).unwrap_err();
        match e {
            OccupancyError::Unsupported(m) => {
                assert!(
                    m.contains("Dynamic Caching") && m.contains("within the documented"),
                    "{m}"
                );
            }
            other @ OccupancyError::Invalid(_) => panic!("expected Unsupported, got {other}"),
        }
    }

    #[test]
    fn rule_of_thumb_table() {
        assert_eq!(circulated_threadgroups_per_core(0), Some(4));
        assert_eq!(circulated_threadgroups_per_core(8192), Some(4));
        assert_eq!(circulated_threadgroups_per_core(8193), Some(2));
        assert_eq!(circulated_threadgroups_per_core(32768), Some(1));
        assert_eq!(circulated_threadgroups_per_core(32769), None);
    }
}
