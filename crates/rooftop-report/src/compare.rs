//! The summary of `rooftop bench --compare A,B`: per case, which kernel ran faster and
//! by how much, with the uncertainty of the ratio (hyperfine's "ran 1.23 ± 0.04 times
//! faster than"; the arithmetic is `rooftop_bench::spec::compare`).

use rooftop_core::schema::compare::{Comparison, Side};
use rooftop_core::units::si;
use std::fmt::Write as _;

fn time(s: &Side) -> String {
    match (s.mean_s, s.stddev_s) {
        (Some(m), Some(sd)) => format!(
            "{} ± {} (mean ± σ of {} samples{})",
            si(m, "s"),
            si(sd, "s"),
            s.samples,
            if s.launch == "default" { String::new() } else { format!(", {}", s.launch) }
        ),
        _ => format!("not timed: {}", s.not_timed.as_deref().unwrap_or("no samples")),
    }
}

/// Plain-text summary, one block per case.
pub fn text(items: &[Comparison]) -> String {
    let mut out = String::from("Comparison\n");
    for c in items {
        let _ = writeln!(out, "  {}", c.case);
        let w = c.a.kernel.chars().count().max(c.b.kernel.chars().count());
        for s in [&c.a, &c.b] {
            let _ = writeln!(out, "    {:<w$}  {}", s.kernel, time(s));
        }
        match &c.verdict {
            Some(v) if v.ratio == 1.0 && v.ratio_stddev == 0.0 => {
                let _ = writeln!(out, "    {} and {} ran equally fast", v.faster, v.slower);
            }
            Some(v) => {
                let _ = writeln!(
                    out,
                    "    {} ran {:.2} ± {:.2} times faster than {}",
                    v.faster, v.ratio, v.ratio_stddev, v.slower
                );
            }
            None => {
                let _ = writeln!(out, "    not compared: both must pass their check and be timed");
            }
        }
    }
    out
}

/// Markdown summary: a table of the cases.
pub fn markdown(items: &[Comparison]) -> String {
    let mut out =
        String::from("## Comparison\n\n| case | faster | ratio | slower |\n|---|---|---|---|\n");
    for c in items {
        match &c.verdict {
            Some(v) => {
                let _ = writeln!(
                    out,
                    "| {} | {} | {:.2} ± {:.2} | {} |",
                    c.case, v.faster, v.ratio, v.ratio_stddev, v.slower
                );
            }
            None => {
                let _ = writeln!(out, "| {} | – | not compared | – |", c.case);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rooftop_core::schema::compare::Verdict;

    fn side(kernel: &str, mean: Option<f64>) -> Side {
        Side {
            kernel: kernel.to_string(),
            launch: "block=16x16x1 grid=8x8x1".to_string(),
            mean_s: mean,
            stddev_s: mean.map(|m| m * 0.01),
            samples: 10,
            check_passed: mean.is_some(),
            not_timed: if mean.is_some() { None } else { Some("check failed: C[0]".to_string()) },
        }
    }

    #[test]
    fn text_and_markdown() {
        let items = vec![
            Comparison {
                case: "M=128 N=128 K=128 fp32".to_string(),
                a: side("sgemm_naive", Some(123e-6)),
                b: side("sgemm_tiled", Some(100e-6)),
                verdict: Some(Verdict {
                    faster: "sgemm_tiled".to_string(),
                    slower: "sgemm_naive".to_string(),
                    ratio: 1.23,
                    ratio_stddev: 0.0174,
                }),
            },
            Comparison {
                case: "M=200 N=72 K=100 fp32".to_string(),
                a: side("sgemm_naive", Some(50e-6)),
                b: side("sgemm_tiled", None),
                verdict: None,
            },
        ];
        insta::assert_snapshot!(text(&items), @r"
        Comparison
          M=128 N=128 K=128 fp32
            sgemm_naive  123 µs ± 1.23 µs (mean ± σ of 10 samples, block=16x16x1 grid=8x8x1)
            sgemm_tiled  100 µs ± 1.00 µs (mean ± σ of 10 samples, block=16x16x1 grid=8x8x1)
            sgemm_tiled ran 1.23 ± 0.02 times faster than sgemm_naive
          M=200 N=72 K=100 fp32
            sgemm_naive  50.0 µs ± 500 ns (mean ± σ of 10 samples, block=16x16x1 grid=8x8x1)
            sgemm_tiled  not timed: check failed: C[0]
            not compared: both must pass their check and be timed
        ");
        insta::assert_snapshot!(markdown(&items), @r"
        ## Comparison

        | case | faster | ratio | slower |
        |---|---|---|---|
        | M=128 N=128 K=128 fp32 | sgemm_tiled | 1.23 ± 0.02 | sgemm_naive |
        | M=200 N=72 K=100 fp32 | – | not compared | – |
        ");
    }
}
