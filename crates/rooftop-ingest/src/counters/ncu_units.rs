//! Nsight Compute units → rooftop's base units (bytes, ns, counts, per second,
//! percent). Decimal prefixes as ncu uses them (`Kbyte` = 1000 bytes), binary ones
//! (`Kibyte`); per-time rates become per second. A unit not in the table is `None`:
//! the reader keeps the value as written and says so, never scales by a guess.

/// Time units → ns.
fn time_factor_ns(u: &str) -> Option<f64> {
    Some(match u {
        "ns" | "nsecond" | "nsec" | "nanosecond" => 1.0,
        "us" | "usecond" | "usec" | "µs" | "microsecond" => 1e3,
        "ms" | "msecond" | "msec" | "millisecond" => 1e6,
        "s" | "second" | "sec" => 1e9,
        _ => return None,
    })
}

/// Count-like base units ncu prints (value kept as is).
const COUNT_UNITS: &[&str] = &[
    "byte",
    "cycle",
    "inst",
    "warp",
    "block",
    "thread",
    "sector",
    "request",
    "wavefront",
    "register",
    "transaction",
    "instance",
    "sm",
    "tpc",
    "cta",
    "op",
    "flop",
    "bit",
    "sample",
    "thread-inst",
    "warp-inst",
    "packet",
    "hit",
    "miss",
    "access",
    "cluster",
    "branch",
    // The Source Counters section writes "Avg. Divergent Branches" in `branches`.
    "branches",
    // The raw page of Nsight Compute 2025 writes `memory_l1_wavefronts_shared` and the
    // other `memory_*` metrics in `sectors`.
    "sectors",
    // `profiler__replayer_passes`, `smsp__pcsamp_aggregated_passes`.
    "pass",
    // Written in capitals by the details page ("# SMs" in `SM`, "# TPCs").
    "SM",
    "TPC",
];

/// A numerator unit with an optional decimal (K, M, G, T) or binary (Ki, Mi, Gi) prefix.
fn count_factor(u: &str) -> Option<f64> {
    if COUNT_UNITS.contains(&u) {
        return Some(1.0);
    }
    for (p, f) in [
        ("Ki", 1024.0),
        ("Mi", 1_048_576.0),
        ("Gi", 1_073_741_824.0),
        ("K", 1e3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
    ] {
        if let Some(base) = u.strip_prefix(p) {
            if COUNT_UNITS.contains(&base) {
                return Some(f);
            }
        }
    }
    None
}

/// The factor that converts a value in `unit` to rooftop's base units (bytes, ns,
/// counts, per second, percent), or `None` when the unit is not known.
pub fn unit_factor(unit: &str) -> Option<f64> {
    let u = unit.trim();
    if u.is_empty() || u == "%" || u == "pct" || u == "ratio" || u == "x" {
        return Some(1.0);
    }
    let lower = u.to_ascii_lowercase();
    if let Some(p) = lower.strip_suffix("hz") {
        return Some(match p {
            "" => 1.0,
            "k" => 1e3,
            "m" => 1e6,
            "g" => 1e9,
            _ => return None,
        });
    }
    if let Some(f) = time_factor_ns(u) {
        return Some(f);
    }
    let (num, den) = match u.split_once('/') {
        Some((n, d)) => (n.trim(), Some(d.trim())),
        None => (u, None),
    };
    // `%/register`, `%/Kbyte`: the raw page's occupancy sensitivities.
    let nf =
        if num == "%" { Some(1.0) } else { count_factor(num) }.or_else(|| time_factor_ns(num))?;
    match den {
        None => Some(nf),
        Some(d) => {
            if let Some(t) = time_factor_ns(d) {
                // Per-time rates become per second: per ns = ×1e9.
                Some(nf * 1e9 / t)
            } else {
                // Per prefixed count: per Kbyte = per 1000 bytes.
                count_factor(d).map(|df| nf / df)
            }
        }
    }
}

/// What a value in `unit` amounts to when it cannot be negative: a byte count, a
/// duration or an event count (`Kbyte`, `usecond`, `sector`, and their rates such as
/// `byte/second` or `inst/cycle`). `None` for percentages, frequencies, unitless values
/// and units not in the table.
pub(crate) fn non_negative_kind(unit: &str) -> Option<&'static str> {
    let u = unit.trim();
    let num = u.split_once('/').map_or(u, |(n, _)| n.trim());
    if time_factor_ns(num).is_some() {
        return Some("duration");
    }
    count_factor(num)?;
    Some(if num.ends_with("byte") { "byte count" } else { "count" })
}

/// Whether a unit is a frequency or per-second rate (the value is now per second).
pub(crate) fn is_per_second(unit: &str) -> bool {
    let l = unit.trim().to_ascii_lowercase();
    l.ends_with("hz") || l.split_once('/').is_some_and(|(_, d)| time_factor_ns(d.trim()).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(unit_factor("byte"), Some(1.0));
        assert_eq!(unit_factor("Kbyte"), Some(1e3));
        assert_eq!(unit_factor("Mbyte"), Some(1e6));
        assert_eq!(unit_factor("Gbyte"), Some(1e9));
        assert_eq!(unit_factor("Kibyte"), Some(1024.0));
        assert_eq!(unit_factor("nsecond"), Some(1.0));
        assert_eq!(unit_factor("usecond"), Some(1e3));
        assert_eq!(unit_factor("msecond"), Some(1e6));
        assert_eq!(unit_factor("second"), Some(1e9));
        assert_eq!(unit_factor("us"), Some(1e3));
        assert_eq!(unit_factor("byte/second"), Some(1.0));
        assert_eq!(unit_factor("Gbyte/second"), Some(1e9));
        assert_eq!(unit_factor("Tbyte/s"), Some(1e12));
        assert_eq!(unit_factor("cycle/nsecond"), Some(1e9));
        assert_eq!(unit_factor("cycle/usecond"), Some(1e6));
        assert_eq!(unit_factor("Ghz"), Some(1e9));
        assert_eq!(unit_factor("MHz"), Some(1e6));
        assert_eq!(unit_factor("inst/cycle"), Some(1.0));
        assert_eq!(unit_factor("register/thread"), Some(1.0));
        assert_eq!(unit_factor("%"), Some(1.0));
        assert_eq!(unit_factor(""), Some(1.0));
        // Nsight Compute 2025 raw-page units.
        assert_eq!(unit_factor("sectors"), Some(1.0));
        assert_eq!(unit_factor("pass"), Some(1.0));
        assert_eq!(unit_factor("%/register"), Some(1.0));
        assert_eq!(unit_factor("%/Kbyte"), Some(1e-3));
        assert_eq!(unit_factor("sector/ms"), Some(1e3));
        assert_eq!(unit_factor("Kbyte/block"), Some(1e3));
        assert_eq!(unit_factor("furlong"), None);
        assert_eq!(non_negative_kind("Kbyte"), Some("byte count"));
        assert_eq!(non_negative_kind("Gbyte/second"), Some("byte count"));
        assert_eq!(non_negative_kind("usecond"), Some("duration"));
        assert_eq!(non_negative_kind("sector"), Some("count"));
        assert_eq!(non_negative_kind("%"), None);
        assert_eq!(non_negative_kind("%/register"), None);
        assert_eq!(non_negative_kind(""), None);
        assert_eq!(non_negative_kind("Ghz"), None);
        assert_eq!(non_negative_kind("furlong"), None);
        assert_eq!(unit_factor("Xbyte"), None);
    }
}
