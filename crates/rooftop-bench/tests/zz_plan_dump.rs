//! Temporary: dumps every CUDA and wgpu plan of the suite into `$PLAN_DUMP` so that a
//! refactor of the planners can be compared before/after. Not an oracle.
#![cfg(all(feature = "cuda", feature = "wgpu"))]
#![allow(clippy::pedantic, clippy::unwrap_used)]

use rooftop_bench::backend::{DType, Launch};
use rooftop_bench::cuda::info::{h100_sxm_attributes, DeviceAttributes};
use rooftop_bench::cuda::plan as cp;
use rooftop_bench::suite;
use rooftop_bench::wgpu::kernels as wk;
use rooftop_bench::{Case, Selection};
use rooftop_core::units::Precision;
use std::fmt::Write as _;

fn selections() -> Vec<Selection> {
    let mut v = Vec::new();
    let dtypes = [
        None,
        Some(Precision::Fp32),
        Some(Precision::Fp64),
        Some(Precision::Fp16),
        Some(Precision::Bf16),
        Some(Precision::Tf32),
        Some(Precision::Fp8),
    ];
    let sizes: [Option<Vec<u64>>; 3] = [None, Some(vec![1000, 12_345]), Some(vec![1 << 20, 3])];
    let singles: [Option<Vec<u64>>; 7] = [
        None,
        Some(vec![1000]),
        Some(vec![100, 128]),
        Some(vec![3, 100, 64]),
        Some(vec![1000, 300, 70]),
        Some(vec![64, 64, 64]),
        Some(vec![17, 33, 4096]),
    ];
    for dtype in dtypes {
        for s in &sizes {
            v.push(Selection { dtype, sizes: s.clone(), ..Selection::default() });
        }
        for c in &singles[1..] {
            v.push(Selection { dtype, single_config: c.clone(), ..Selection::default() });
        }
    }
    for variant in ["scalar", "vector"] {
        for dtype in [None, Some(Precision::Fp64)] {
            v.push(Selection { dtype, variant: Some(variant.into()), ..Selection::default() });
        }
    }
    for wformat in [None, Some("q4_0"), Some("q8_0"), Some("affine")] {
        for bits in [None, Some(4), Some(8), Some(3)] {
            for group_size in [None, Some(32), Some(64), Some(128)] {
                for single in [None, Some(vec![100, 128]), Some(vec![3, 100, 64])] {
                    v.push(Selection {
                        wformat: wformat.map(str::to_string),
                        bits,
                        group_size,
                        single_config: single,
                        ..Selection::default()
                    });
                }
            }
        }
    }
    v
}

fn cases() -> Vec<Case> {
    let mut out: Vec<Case> = Vec::new();
    for k in suite::all() {
        for sel in selections() {
            if let Ok(cs) = k.cases(&sel) {
                for c in cs {
                    if !out.contains(&c) {
                        out.push(c);
                    }
                }
            }
        }
    }
    for dtype in [Precision::Fp32, Precision::Fp64] {
        for scalar in [false, true] {
            out.push(suite::fma::ceiling_case(dtype, scalar));
        }
    }
    out
}

fn case_line(c: &Case) -> String {
    format!("{} [{}]", c.kernel, c.label())
}

fn bufs_of(case: &Case) -> Vec<(DType, usize)> {
    suite::find(&case.kernel.to_string())
        .unwrap()
        .buffers(case)
        .iter()
        .map(|s| (s.dtype, s.len))
        .collect()
}

fn launch_str(l: &Launch) -> String {
    format!("block={:?} grid={:?} tile={:?} threads={:?}", l.block, l.grid, l.tile, l.threads)
}

fn cuda_dump(out: &mut String, cases: &[Case]) {
    let h100 = h100_sxm_attributes();
    let a100 = DeviceAttributes { compute_capability: (8, 0), ..h100.clone() };
    let v100 = DeviceAttributes {
        compute_capability: (7, 0),
        max_threads_per_block: 512,
        sm_count: 80,
        max_threads_per_sm: 2048,
        ..h100.clone()
    };
    let extra = [
        Launch::default(),
        Launch { block: Some([48, 1, 1]), ..Launch::default() },
        Launch { block: Some([2048, 1, 1]), ..Launch::default() },
        Launch { block: Some([32, 8, 1]), ..Launch::default() },
        Launch { block: Some([128, 1, 1]), grid: Some([7, 1, 1]), ..Launch::default() },
        Launch { grid: Some([2, 2, 1]), ..Launch::default() },
        Launch { tile: Some(48), ..Launch::default() },
        Launch { tile: Some(128), ..Launch::default() },
        Launch { block: Some([128, 1, 1]), tile: Some(64), ..Launch::default() },
    ];
    for case in cases {
        let bufs = bufs_of(case);
        let _ = writeln!(out, "CASE {}", case_line(case));
        let _ = writeln!(out, "  default {}", launch_str(&cp::default_launch(case)));
        let imps: Vec<String> =
            cp::implementations(case.kernel, true).into_iter().map(|i| i.id).collect();
        let mut imps_all = imps.clone();
        imps_all.push("nope".into());
        for i in cp::implementations(case.kernel, true) {
            let _ = writeln!(out, "  impl {} builtin={} {}", i.id, i.builtin, i.label);
        }
        let _ = writeln!(out, "  impls(noblas) {}", cp::implementations(case.kernel, false).len());
        for (dn, dev) in [("h100", &h100), ("a100", &a100), ("v100", &v100)] {
            for imp in &imps_all {
                let mut launches = cp::launch_space(case.kernel, imp, dev.max_threads_per_block);
                let _ = writeln!(out, "  space {dn} {imp}: {}", launches.len());
                launches.push(cp::default_launch(case));
                launches.extend(extra.iter().copied());
                for l in &launches {
                    let r = match cp::plan(case, imp, l, &bufs, dev) {
                        Ok(p) => format!("{p:?}"),
                        Err(e) => format!("ERR {e}"),
                    };
                    let _ = writeln!(out, "    {dn} {imp} {} => {r}", launch_str(l));
                }
            }
        }
        // Wrong buffers.
        if let Some(first) = bufs.first() {
            let mut short = bufs.clone();
            short[0] = (first.0, first.1.saturating_sub(1));
            let r = match cp::plan(case, cp::OURS, &cp::default_launch(case), &short, &h100) {
                Ok(p) => format!("{p:?}"),
                Err(e) => format!("ERR {e}"),
            };
            let _ = writeln!(out, "  shortbuf => {r}");
        }
    }
}

fn wgpu_launches(case: &Case, lim: &wk::DeviceLimits) -> Vec<Launch> {
    let tunable = wk::find(case.kernel).is_some_and(|k| k.tunable);
    let default = {
        let block = if case.kernel.name() == "gemm" || case.kernel.name() == "hgemm" {
            wk::GEMM_BLOCK
        } else {
            [wk::DEFAULT_WG.min(lim.max_wg), 1, 1]
        };
        Launch { block: Some(block), ..Launch::default() }
    };
    let mut v: Vec<Launch> = if tunable {
        wk::workgroup_sizes(lim)
            .into_iter()
            .map(|wg| Launch { block: Some([wg, 1, 1]), ..Launch::default() })
            .collect()
    } else {
        vec![default]
    };
    v.insert(0, default);
    v
}

fn wgpu_dump(out: &mut String, cases: &[Case]) {
    let base = wk::DeviceLimits {
        max_wg: 1024,
        max_groups_per_dim: 65535,
        workgroup_storage_bytes: 16384,
        shader_f64: false,
        shader_f16: false,
    };
    let lims = [
        ("base", base),
        ("f16f64", wk::DeviceLimits { shader_f64: true, shader_f16: true, ..base }),
        (
            "small",
            wk::DeviceLimits {
                max_wg: 256,
                max_groups_per_dim: 1000,
                workgroup_storage_bytes: 1024,
                ..base
            },
        ),
    ];
    let extra = [
        Launch::default(),
        Launch { block: Some([48, 1, 1]), ..Launch::default() },
        Launch { block: Some([16, 16, 1]), ..Launch::default() },
        Launch { block: Some([2048, 1, 1]), ..Launch::default() },
    ];
    for case in cases {
        let _ = writeln!(out, "WCASE {}", case_line(case));
        let _ = writeln!(
            out,
            "  find {:?}",
            wk::find(case.kernel).map(|k| (k.kernel.to_string(), k.label, k.tunable))
        );
        for (ln, lim) in &lims {
            let mut launches = wgpu_launches(case, lim);
            let _ = writeln!(out, "  launches {ln}: {}", launches.len());
            launches.extend(extra.iter().copied());
            for l in &launches {
                let r = match wk::plan(case, l, lim) {
                    Ok(p) => {
                        let mut s = format!("scratch={:?}", p.scratch_bytes);
                        for st in &p.steps {
                            let _ = write!(
                                s,
                                " | {} {} slots={:?} params={:?} wg={:?} header={:?} src={}",
                                st.shader,
                                st.entry,
                                st.slots,
                                st.params,
                                st.workgroups,
                                st.header,
                                fnv(&st.source)
                            );
                        }
                        s
                    }
                    Err(e) => format!("ERR {e}"),
                };
                let _ = writeln!(out, "    {ln} {} => {r}", launch_str(l));
            }
        }
    }
}

fn fnv(s: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{}:{h:016x}", s.len())
}

#[test]
#[ignore = "dump for the planner refactor; run with PLAN_DUMP=path"]
fn dump_plans() {
    let Ok(path) = std::env::var("PLAN_DUMP") else { return };
    let cases = cases();
    let mut out = String::new();
    let _ = writeln!(out, "cases: {}", cases.len());
    cuda_dump(&mut out, &cases);
    wgpu_dump(&mut out, &cases);
    std::fs::write(path, out).unwrap();
}
