//! HTML sections of the time between the kernels: idle causes, launch latency, syncs,
//! graphs, the critical path (with one step's timeline, the path highlighted), modules,
//! memory (with its chart) and inference. The tables are the terminal's blocks
//! ([`crate::trace_gaps`]), so every cell is the same text.

use super::timeline::{memory_chart, step_timeline};
use super::{esc, notes, Cell, Section, Table};
use crate::trace::{Block, Section as Sec};
use rooftop_core::trace::report::TraceReport;
use std::fmt::Write as _;

/// Rows per table in the HTML report.
const TOP: usize = 50;

fn render(blocks: &[Block]) -> String {
    let mut out = String::new();
    for b in blocks {
        let _ = write!(out, "<h3>{}</h3>", esc(&b.title));
        if !b.header.is_empty() {
            let header: Vec<&str> = b.header.iter().map(String::as_str).collect();
            let mut t = Table::new(&header);
            for row in &b.rows {
                t.push(row.iter().map(|c| Cell::text(c)).collect());
            }
            out.push_str(&t.render());
        }
        out.push_str(&notes(&b.notes));
    }
    out
}

/// The sections; `id` and `title` make ids unique and titles labelled per rank.
pub(crate) fn sections(
    r: &TraceReport,
    id: &dyn Fn(&str) -> String,
    title: &dyn Fn(&str) -> String,
) -> Vec<Section> {
    let blocks = |s: Sec| crate::trace_gaps::blocks(r, s, TOP);
    let mut out =
        vec![Section::new(id("idle"), title("Idle time by cause"), render(&blocks(Sec::Idle)))];
    let mut body = String::new();
    if let Some(cp) = &r.critical_path {
        body.push_str(&step_timeline(&cp.timeline));
    }
    body.push_str(&render(&blocks(Sec::CriticalPath)));
    out.push(Section::new(id("critical-path"), title("Critical path"), body));
    out.push(Section::new(
        id("launch"),
        title("Launch latency and queues"),
        render(&blocks(Sec::Launch)),
    ));
    out.push(Section::new(id("syncs"), title("Blocking syncs"), render(&blocks(Sec::Syncs))));
    out.push(Section::new(id("graphs"), title("CUDA/HIP graphs"), render(&blocks(Sec::Graphs))));
    out.push(Section::new(id("modules"), title("Modules"), render(&blocks(Sec::Modules))));
    let mut body = String::new();
    if let Some(d) = r.memory.devices.first() {
        body.push_str(&memory_chart(d));
    }
    body.push_str(&render(&blocks(Sec::Memory)));
    out.push(Section::new(id("memory"), title("Memory"), body));
    out.push(Section::new(id("inference"), title("Inference"), render(&blocks(Sec::Inference))));
    out
}
