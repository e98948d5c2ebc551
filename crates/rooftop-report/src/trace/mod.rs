//! Renderers of `rooftop trace` reports: terminal tables (a one-screen summary by
//! default, `--section` for more), Markdown, JSON (the stable schema of
//! `docs/json-schema.md`), one CSV per section, and the cross-rank table.
//!
//! Every section is first laid out as a `Block` (title, header, rows, notes), so the
//! terminal and Markdown outputs show the same cells; CSV files carry full-precision
//! numbers instead of the 3-significant-digit display. Renderers never compute: each
//! number comes from the [`TraceReport`]. Multi-rank runs: [`ranks_text`],
//! [`ranks_json`], [`ranks_csv`].
//!
//! # Example: render a report
//!
//! ```
//! use rooftop_core::trace::model::{CpuOp, GpuEvent, GpuKind, TraceModel};
//! use rooftop_core::trace::report::{analyze, TraceOptions};
//! use rooftop_report::trace::{markdown, table, RenderOptions, Section};
//!
//! // One `aten::mm` whose kernel ran 30 µs (a reader builds this from a trace file:
//! // `rooftop_ingest::source::read_one`).
//! let model = TraceModel {
//!     ops: vec![CpuOp { name: "aten::mm".into(), ..CpuOp::default() }],
//!     gpu: vec![GpuEvent {
//!         kind: GpuKind::Kernel,
//!         name: "sgemm_64x16".into(),
//!         ts_ns: 0,
//!         dur_ns: 30_000,
//!         launcher: Some("cudaLaunchKernel".into()),
//!         op: Some(0),
//!         ..GpuEvent::default()
//!     }],
//!     ..TraceModel::default()
//! };
//! let report = analyze(&model, None, &TraceOptions::for_model(&model));
//! let opts = RenderOptions { top: 5, section: Section::Kernels };
//! assert!(table(&report, &opts).contains("sgemm_64x16"));
//! let md = markdown(&report, &opts);
//! assert!(md.starts_with("## rooftop trace"));
//! assert!(md.contains("### Kernels (top 1 of 1)") && md.contains("sgemm_64x16"));
//! ```

use crate::json::pretty;
use crate::table::{finding_text, stake_cell, table as new_table, wrap, WIDTH};
use comfy_table::{ColumnConstraint, Width};
use rooftop_core::trace::ops::{ParamValue, Table};
use rooftop_core::trace::report::{CrossRank, TraceReport};
use rooftop_core::trace::summary::LaunchConfig;
use rooftop_core::trace::tables::OpRow;
use rooftop_core::units::{pct, sig3, us};
use std::fmt::Write as _;
use std::str::FromStr;

mod blocks;
mod json;
mod ranks;
#[cfg(test)]
mod tests;
mod to_csv;

use blocks::{blocks, header_lines};
pub(crate) use ranks::slowest_why;
pub use ranks::{
    cross_rank_csv, cross_rank_json, cross_rank_markdown, cross_rank_table, ranks_csv, ranks_json,
    ranks_text, CsvFolder, PER_RANK_TABLES_MAX,
};
pub use to_csv::{csv_files, csv_in_section, section_csv_files};
pub(crate) use to_csv::{num, onum, ostr};

/// What `--section` selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// The default one-screen view: timeline, top ops, top findings.
    Summary,
    Timeline,
    Ops,
    /// The by-category summary and every roofline table.
    Categories,
    Gemm,
    Sdpa,
    Conv,
    Norm,
    Elementwise,
    Softmax,
    Pool,
    Embedding,
    /// Triton kernels of `torch.compile`.
    Triton,
    Kernels,
    ShortKernels,
    Findings,
    /// JAX/XLA profiles: XLA op summary, modules, steps, tiles, collectives, host threads.
    Xla,
    // The time between the kernels (`crate::trace_gaps`).
    Idle,
    Launch,
    Syncs,
    Graphs,
    CriticalPath,
    Modules,
    Memory,
    Inference,
    All,
}

impl Section {
    /// Every name `--section` accepts.
    pub const NAMES: [&'static str; 26] = [
        "summary",
        "timeline",
        "ops",
        "categories",
        "gemm",
        "sdpa",
        "conv",
        "norm",
        "elementwise",
        "softmax",
        "pool",
        "embedding",
        "triton",
        "kernels",
        "short-kernels",
        "findings",
        "xla",
        "idle",
        "launch",
        "syncs",
        "graphs",
        "critical-path",
        "modules",
        "memory",
        "inference",
        "all",
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Section::Summary => "summary",
            Section::Timeline => "timeline",
            Section::Ops => "ops",
            Section::Categories => "categories",
            Section::Gemm => "gemm",
            Section::Sdpa => "sdpa",
            Section::Conv => "conv",
            Section::Norm => "norm",
            Section::Elementwise => "elementwise",
            Section::Softmax => "softmax",
            Section::Pool => "pool",
            Section::Embedding => "embedding",
            Section::Triton => "triton",
            Section::Kernels => "kernels",
            Section::ShortKernels => "short-kernels",
            Section::Findings => "findings",
            Section::Xla => "xla",
            Section::Idle => "idle",
            Section::Launch => "launch",
            Section::Syncs => "syncs",
            Section::Graphs => "graphs",
            Section::CriticalPath => "critical-path",
            Section::Modules => "modules",
            Section::Memory => "memory",
            Section::Inference => "inference",
            Section::All => "all",
        }
    }

    /// The roofline tables (`categories` keys) a section shows.
    fn tables(self) -> &'static [&'static str] {
        match self {
            Section::Gemm => &["GEMM"],
            Section::Sdpa => &["SDPA_fwd", "SDPA_bwd"],
            Section::Conv => &["CONV_fwd", "CONV_bwd"],
            Section::Norm => &["Normalization"],
            Section::Elementwise => {
                &["BinaryElementwise", "UnaryElementwise", "Elementwise", "DataMovement"]
            }
            Section::Softmax => &["Softmax"],
            Section::Pool => &["Pool"],
            Section::Embedding => &["Embedding"],
            Section::Triton => &["Triton"],
            _ => &[],
        }
    }
}

impl FromStr for Section {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let all = [
            Section::Summary,
            Section::Timeline,
            Section::Ops,
            Section::Categories,
            Section::Gemm,
            Section::Sdpa,
            Section::Conv,
            Section::Norm,
            Section::Elementwise,
            Section::Softmax,
            Section::Pool,
            Section::Embedding,
            Section::Triton,
            Section::Kernels,
            Section::ShortKernels,
            Section::Findings,
            Section::Xla,
            Section::Idle,
            Section::Launch,
            Section::Syncs,
            Section::Graphs,
            Section::CriticalPath,
            Section::Modules,
            Section::Memory,
            Section::Inference,
            Section::All,
        ];
        let key = s.trim().to_ascii_lowercase().replace('_', "-");
        all.into_iter().find(|x| x.as_str() == key).ok_or_else(|| {
            format!("unknown section '{s}'; expected one of: {}", Section::NAMES.join(", "))
        })
    }
}

/// How much to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderOptions {
    /// Rows per table (ops, kernels, table rows, findings).
    pub top: usize,
    pub section: Section,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions { top: 10, section: Section::Summary }
    }
}

/// One laid-out section.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Block {
    pub(crate) title: String,
    pub(crate) header: Vec<String>,
    pub(crate) rows: Vec<Vec<String>>,
    pub(crate) notes: Vec<String>,
    /// Minimum widths of some columns in the terminal, `(column, width)`, for long
    /// names.
    pub(crate) min_widths: Vec<(usize, u16)>,
}

impl Block {
    pub(crate) fn new(title: impl Into<String>, header: &[&str]) -> Block {
        Block {
            title: title.into(),
            header: header.iter().map(|s| (*s).to_string()).collect(),
            rows: Vec::new(),
            notes: Vec::new(),
            min_widths: Vec::new(),
        }
    }
}

/// Shortens long kernel names for the terminal, keeping what tells them apart (full
/// names are in JSON and CSV).
pub(crate) fn short(name: &str, max: usize) -> String {
    crate::table::shorten(name, max)
}

/// A time given in ms, with an SI prefix (`0` rather than `0 s` for nothing).
pub(crate) fn ms(v: f64) -> String {
    if v == 0.0 {
        "0".to_string()
    } else {
        us(v * 1e3)
    }
}

pub fn table(r: &TraceReport, opts: &RenderOptions) -> String {
    let mut out = header_lines(r);
    for b in blocks(r, opts) {
        let _ = write!(out, "\n{}\n", b.title);
        if !b.header.is_empty() {
            let header: Vec<&str> = b.header.iter().map(String::as_str).collect();
            let mut t = new_table(&header);
            for row in &b.rows {
                t.add_row(row.clone());
            }
            for &(i, w) in &b.min_widths {
                if let Some(c) = t.column_mut(i) {
                    c.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(w)));
                }
            }
            let _ = writeln!(out, "{t}");
        }
        for n in &b.notes {
            out.push_str(&wrap(n, usize::from(WIDTH), "", "  "));
        }
    }
    if opts.section == Section::Summary {
        let n_warn = r.warnings.len();
        out.push('\n');
        out.push_str(&wrap(
            &format!(
                "More rows: --top N. Sections: --section {}.{}",
                Section::NAMES[1..]
                    .iter()
                    .filter(|n| r.xla.is_some() || **n != "xla")
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", "),
                if n_warn > 0 {
                    format!(
                        " {}: see --section all.",
                        rooftop_core::diagnose::count(n_warn as u64, "warning", "warnings")
                    )
                } else {
                    String::new()
                }
            ),
            usize::from(WIDTH),
            "",
            "  ",
        ));
    }
    out
}

use crate::markdown::cell as md_cell;

/// Renders the report as Markdown (same sections and cells as [`table`]).
pub fn markdown(r: &TraceReport, opts: &RenderOptions) -> String {
    let mut out = String::from("## rooftop trace\n\n");
    for line in header_lines(r).lines() {
        let _ = writeln!(out, "- {}", md_cell(line));
    }
    for b in blocks(r, opts) {
        let _ = write!(out, "\n### {}\n\n", md_cell(&b.title));
        if !b.header.is_empty() {
            let cells: Vec<String> = b.header.iter().map(|h| md_cell(h)).collect();
            let _ = writeln!(out, "| {} |\n|{}", cells.join(" | "), "---|".repeat(cells.len()));
            for row in &b.rows {
                let cells: Vec<String> = row.iter().map(|c| md_cell(c)).collect();
                let _ = writeln!(out, "| {} |", cells.join(" | "));
            }
        }
        for n in &b.notes {
            let _ = write!(out, "\n{n}\n");
        }
    }
    out
}

/// The report as JSON (`docs/json-schema.md`, "Trace report").
pub fn json(r: &TraceReport) -> String {
    crate::json::written(|out| write_json(r, out))
}

/// [`json`], written to `w` as it is made (a large trace's report is tens of MB of
/// text, most of it the critical path's events).
pub fn write_json<W: std::io::Write>(r: &TraceReport, w: W) -> std::io::Result<()> {
    json::write(r, w)
}
