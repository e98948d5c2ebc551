//! Caps on how much work and memory one input may ask for, like SQLite's limits: a
//! hostile or damaged file ends in one clear error instead of hours of work or an
//! allocation failure.
//!
//! Every cap is far above what real traces, profiles and device files reach (the
//! numbers and where they come from are in `docs/limits.md`); a genuine input beyond one
//! raises it with the environment variable [`Limit::var`], e.g.
//! `ROOFTOP_LIMIT_EVENTS=50000000`. The error always names the file, what was exceeded
//! and that variable ([`Limit::exceeded`]).
//!
//! A variable that is set but not a positive integer is reported by the CLI before any
//! work ([`check_env`]); the library then uses the default for it.

use std::fmt;

/// One cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// Elements of a Kineto trace's event array (`traceEvents`).
    Events,
    /// Bytes of one JSON value of a trace (an event, `deviceProperties`): bounds what one
    /// string may inflate to.
    ValueBytes,
    /// Inflated bytes per compressed byte of a gzip input, past the first
    /// [`Limit::InflateFloor`] bytes (a gzip bomb).
    InflateRatio,
    /// Inflated bytes always allowed, whatever the ratio (small files compress well).
    InflateFloor,
    /// Rows read from one table or view of a profiler database (nsys SQLite, rocpd).
    DbRows,
    /// Rows (values per column) of one Parquet table.
    ParquetRows,
    /// Bytes of one Parquet table once decoded (a dictionary string repeated per row).
    ParquetBytes,
    /// `[[device]]` entries in one device file.
    Devices,
    /// Aliases of one device.
    Aliases,
}

impl Limit {
    /// Every limit, in the order `docs/limits.md` lists them.
    pub const ALL: [Limit; 9] = [
        Limit::Events,
        Limit::ValueBytes,
        Limit::InflateRatio,
        Limit::InflateFloor,
        Limit::DbRows,
        Limit::ParquetRows,
        Limit::ParquetBytes,
        Limit::Devices,
        Limit::Aliases,
    ];

    /// The environment variable that raises it.
    pub fn var(self) -> &'static str {
        match self {
            Limit::Events => "ROOFTOP_LIMIT_EVENTS",
            Limit::ValueBytes => "ROOFTOP_LIMIT_VALUE_BYTES",
            Limit::InflateRatio => "ROOFTOP_LIMIT_INFLATE_RATIO",
            Limit::InflateFloor => "ROOFTOP_LIMIT_INFLATE_FLOOR",
            Limit::DbRows => "ROOFTOP_LIMIT_DB_ROWS",
            Limit::ParquetRows => "ROOFTOP_LIMIT_PARQUET_ROWS",
            Limit::ParquetBytes => "ROOFTOP_LIMIT_PARQUET_BYTES",
            Limit::Devices => "ROOFTOP_LIMIT_DEVICES",
            Limit::Aliases => "ROOFTOP_LIMIT_ALIASES",
        }
    }

    /// The default (see `docs/limits.md` for why each is safe for real inputs).
    pub fn default_value(self) -> u64 {
        match self {
            // A 1 GB Kineto trace holds 2-5 M events (200-450 bytes each); 6 M tiny
            // kernel events take 1.6 GB in the model, 10 M take 2.6 GB.
            Limit::Events => 6_000_000,
            // Real event names reach a few KiB (Triton and CUTLASS kernel names).
            Limit::ValueBytes => 64 << 20,
            // JSON traces compress 10-30x; deflate's maximum is ~1032x.
            Limit::InflateRatio => 200,
            Limit::InflateFloor => 256 << 20,
            // A long Nsight Systems capture holds a few million kernels.
            Limit::DbRows => 10_000_000,
            Limit::ParquetRows => 50_000_000,
            Limit::ParquetBytes => 1 << 30,
            // The embedded catalog has ~100 devices.
            Limit::Devices => 10_000,
            Limit::Aliases => 1_000,
        }
    }

    /// What it counts, for messages.
    pub fn what(self) -> &'static str {
        match self {
            Limit::Events => "trace events",
            Limit::ValueBytes => "bytes in one JSON value",
            Limit::InflateRatio => "inflated bytes per compressed byte",
            Limit::InflateFloor => "inflated bytes allowed at any ratio",
            Limit::DbRows => "rows from one database table",
            Limit::ParquetRows => "rows in one Parquet table",
            Limit::ParquetBytes => "decoded bytes in one Parquet table",
            Limit::Devices => "devices in one device file",
            Limit::Aliases => "aliases of one device",
        }
    }

    /// The value in force: the environment variable when it is a positive integer
    /// (`_` allowed as a digit separator), else the default.
    pub fn value(self) -> u64 {
        std::env::var(self.var()).ok().and_then(|v| parse(&v)).unwrap_or(self.default_value())
    }

    /// [`Limit::value`] as a `usize` (saturating on 32-bit targets).
    pub fn usize(self) -> usize {
        usize::try_from(self.value()).unwrap_or(usize::MAX)
    }

    /// The sentence for an input over the limit: `place` names the file (and where in
    /// it), `found` says what was seen (`"more than 10000000 events"`).
    pub fn exceeded(self, place: &str, found: &str) -> String {
        format!("{place}: {}", self.exceeded_here(found))
    }

    /// [`Limit::exceeded`] for messages whose prefix already names the file.
    pub fn exceeded_here(self, found: &str) -> String {
        format!(
            "{found}: over rooftop's limit of {} {}; if the input is genuine, raise it with \
             the environment variable {}=N (docs/limits.md)",
            self.value(),
            self.what(),
            self.var()
        )
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={} ({})", self.var(), self.value(), self.what())
    }
}

fn parse(v: &str) -> Option<u64> {
    let digits: String = v.trim().chars().filter(|&c| c != '_').collect();
    digits.parse::<u64>().ok().filter(|&n| n > 0)
}

/// Every `ROOFTOP_LIMIT_*` variable that is set but is not a positive integer, as one
/// sentence each (the CLI refuses to start with any).
pub fn check_env() -> Vec<String> {
    let mut bad = Vec::new();
    for l in Limit::ALL {
        if let Some(v) = std::env::var_os(l.var()) {
            let ok = v.to_str().and_then(parse).is_some();
            if !ok {
                bad.push(format!(
                    "{}={}: expected a positive integer (default {})",
                    l.var(),
                    v.to_string_lossy(),
                    l.default_value()
                ));
            }
        }
    }
    bad
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_as_positive_integers() {
        assert_eq!(parse("20_000_000"), Some(20_000_000));
        assert_eq!(parse(" 7 "), Some(7));
        assert_eq!(parse("0"), None);
        assert_eq!(parse("-3"), None);
        assert_eq!(parse("1e6"), None);
    }

    #[test]
    fn the_message_names_place_limit_and_variable() {
        let m = Limit::Devices.exceeded("dev.toml", "20000 `[[device]]` entries");
        assert!(
            m.starts_with(
                "dev.toml: 20000 `[[device]]` entries: over rooftop's limit of 10000 devices"
            ),
            "{m}"
        );
        assert!(m.contains("ROOFTOP_LIMIT_DEVICES=N"), "{m}");
    }

    #[test]
    fn every_variable_is_distinct_and_prefixed() {
        let mut vars: Vec<&str> = Limit::ALL.iter().map(|l| l.var()).collect();
        vars.sort_unstable();
        vars.dedup();
        assert_eq!(vars.len(), Limit::ALL.len());
        assert!(vars.iter().all(|v| v.starts_with("ROOFTOP_LIMIT_")));
    }
}
