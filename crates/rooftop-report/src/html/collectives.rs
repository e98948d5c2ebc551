//! The collective sections of the multi-rank HTML report: collectives (sortable, with
//! bus bandwidth against the catalog link), stragglers, all-to-all traffic with a
//! rank × rank heat map (SVG, written by hand like the roofline chart), process
//! groups, cross-rank findings and warnings. Every number is a [`CrossRank`] field.

use super::{esc, finding, note, notes, Cell, Section, Table};
use crate::MISSING;
use rooftop_core::trace::comm::{AllToAllGroup, Scope};
use rooftop_core::trace::ranks::CrossRank;
use rooftop_core::units::{pct, si, sig3, us};
use std::fmt::Write as _;

fn t_us(v: f64) -> String {
    if v == 0.0 {
        "0".to_string()
    } else {
        us(v)
    }
}

fn gbs(v: Option<f64>) -> String {
    v.map_or_else(|| MISSING.to_string(), |g| si(g * 1e9, "B/s"))
}

/// The sections, in page order.
pub(crate) fn sections(c: &CrossRank) -> Vec<Section> {
    let mut out = Vec::new();
    let a = &c.comm.collectives;
    let mut t = Table::new(&[
        "group",
        "collective",
        "dtype",
        "#size",
        "#ranks",
        "scope",
        "#count",
        "#transfer total",
        "#transfer mean",
        "#algbw",
        "#busbw",
        "#of link",
        "#start skew",
        "#end skew",
        "#wait",
    ]);
    for r in &a.rows {
        t.push(vec![
            Cell::text(&r.process_group),
            Cell::name(&r.collective),
            Cell::text(r.dtype.as_deref().unwrap_or("?")),
            Cell::num(&crate::collectives::size_cell(r), r.message_bytes.map(|b| b as f64)),
            Cell::num(&r.group_size.to_string(), Some(f64::from(r.group_size))),
            Cell::text(match r.scope {
                Scope::IntraNode => "intra-node",
                Scope::InterNode => "inter-node",
                Scope::Unknown => MISSING,
            }),
            Cell::num(&r.count.to_string(), Some(r.count as f64)),
            Cell::num(&t_us(r.transfer_total_ms * 1e3), Some(r.transfer_total_ms)),
            Cell::num(&t_us(r.transfer_mean_us), Some(r.transfer_mean_us)),
            Cell::num(&gbs(r.algbw_gbs), r.algbw_gbs),
            Cell::num(&gbs(r.busbw_gbs), r.busbw_gbs),
            Cell::num(
                &r.busbw_pct_of_peak.map_or_else(|| MISSING.to_string(), pct),
                r.busbw_pct_of_peak,
            ),
            Cell::num(&t_us(r.start_skew_mean_us), Some(r.start_skew_mean_us)),
            Cell::num(&t_us(r.end_skew_mean_us), Some(r.end_skew_mean_us)),
            Cell::num(&t_us(r.wait_total_ms * 1e3), Some(r.wait_total_ms)),
        ]);
    }
    let mut body = note(&format!(
        "{} matched instances of {} communication kernels. Transfer: the shortest duration across \
         ranks; bandwidths by the NCCL-tests formulas in decimal GB/s; skew: latest minus \
         earliest start (end); wait: every rank's wait for the last arrival, summed.",
        a.matched, a.kernels
    ));
    body.push_str(&t.render());
    let mut links = crate::collectives::size_notes(c, &a.rows);
    for (what, l) in [("intra-node", &a.links.intra), ("inter-node", &a.links.inter)] {
        if let Some(l) = l {
            links.push(format!(
                "{what}: {} — {} per GPU per direction ({}; {})",
                l.name,
                si(l.per_gpu_gbs * 1e9, "B/s"),
                l.derivation,
                l.source
            ));
        }
    }
    if let Some(n) = &a.links.note {
        links.push(n.clone());
    }
    if a.gpus_per_node.is_none() {
        links.push("Intra/inter-node unknown: pass --gpus-per-node.".to_string());
    }
    body.push_str(&notes(&links));
    out.push(Section::new("collectives", "Collectives", body));

    if !c.comm.stragglers.is_empty() {
        let mut t = Table::new(&[
            "#rank",
            "#collectives",
            "#last",
            "#% last",
            "#first",
            "#wait caused",
            "#per step",
            "#wait suffered",
            "#compute before (last)",
            "#others' compute",
            "late after",
        ]);
        for s in &c.comm.stragglers {
            t.push(vec![
                Cell::num(&s.rank.to_string(), Some(s.rank as f64)),
                Cell::num(&s.collectives.to_string(), Some(s.collectives as f64)),
                Cell::num(&s.times_last.to_string(), Some(s.times_last as f64)),
                Cell::num(&pct(s.pct_last), Some(s.pct_last)),
                Cell::num(&s.times_first.to_string(), Some(s.times_first as f64)),
                Cell::num(&t_us(s.wait_caused_ms * 1e3), Some(s.wait_caused_ms)),
                Cell::num(
                    &s.wait_caused_per_step_ms
                        .map_or_else(|| MISSING.to_string(), |v| t_us(v * 1e3)),
                    s.wait_caused_per_step_ms,
                ),
                Cell::num(&t_us(s.wait_suffered_ms * 1e3), Some(s.wait_suffered_ms)),
                Cell::num(
                    &s.compute_before_when_last_us.map_or_else(|| MISSING.to_string(), t_us),
                    s.compute_before_when_last_us,
                ),
                Cell::num(
                    &s.others_compute_before_us.map_or_else(|| MISSING.to_string(), t_us),
                    s.others_compute_before_us,
                ),
                Cell::name(s.late_after.as_deref().unwrap_or(MISSING)),
            ]);
        }
        out.push(Section::new("stragglers", "Stragglers", t.render()));
    }

    if !c.comm.all_to_all.is_empty() {
        let mut body = String::new();
        for g in &c.comm.all_to_all {
            let _ = write!(
                body,
                "<h3>{}</h3>{}",
                esc(&g.process_group),
                note(&format!(
                    "{}, {} sent; imbalance (largest sender over the mean) {}× on \
                     average, {}× at most; heaviest sender: {}.",
                    rooftop_core::diagnose::count(g.count, "instance", "instances"),
                    si(g.total_bytes as f64, "B"),
                    sig3(g.imbalance_mean),
                    sig3(g.imbalance_max),
                    g.heaviest_sender.map_or_else(|| MISSING.to_string(), |r| format!("rank {r}"))
                ))
            );
            body.push_str(&heatmap(g));
        }
        out.push(Section::new("all-to-all", "All-to-all traffic", body));
    }

    let mut t = Table::new(&[
        "name",
        "description",
        "#size",
        "matched by",
        "#matched",
        "#incomplete",
        "#inconsistent",
    ]);
    for g in &a.groups {
        t.push(vec![
            Cell::name(&g.name),
            Cell::text(g.description.as_deref().unwrap_or(MISSING)),
            Cell::num(&g.group_size.to_string(), Some(f64::from(g.group_size))),
            Cell::text(&g.matched_by),
            Cell::num(&g.matched.to_string(), Some(g.matched as f64)),
            Cell::num(&g.incomplete.to_string(), Some(g.incomplete as f64)),
            Cell::num(&g.inconsistent.to_string(), Some(g.inconsistent as f64)),
        ]);
    }
    out.push(Section::new("process-groups", "Process groups", t.render()));

    let mut body = String::new();
    for f in &c.comm.findings {
        body.push_str(&finding(&f.into(), None));
    }
    if c.comm.findings.is_empty() {
        body.push_str(&note("No cross-rank findings."));
    }
    let w: Vec<String> = c
        .comm
        .warnings
        .iter()
        .map(|w| format!("{} ({}): {}", w.kind, w.count, w.example))
        .collect();
    body.push_str(&notes(&w));
    out.push(Section::new("cross-rank-findings", "Cross-rank findings", body));
    out
}

/// A rank × rank heat map of bytes sent (row sends to column), for groups with a
/// matrix.
fn heatmap(g: &AllToAllGroup) -> String {
    let Some(m) = &g.matrix_bytes else {
        return note("Too many ranks for the matrix: see the per-rank totals in JSON or CSV.");
    };
    let n = g.members.len();
    let cell = if n <= 16 { 24 } else { 8 };
    let pad = 40;
    let size = pad + n * cell;
    let max = m.iter().flatten().copied().max().unwrap_or(0).max(1) as f64;
    let mut out = format!(
        "<svg class=\"heatmap\" role=\"img\" aria-label=\"bytes sent per rank pair\" width=\"{size}\" height=\"{size}\" viewBox=\"0 0 {size} {size}\">"
    );
    for (i, row) in m.iter().enumerate() {
        for (j, &b) in row.iter().enumerate() {
            let shade = 1.0 - 0.85 * (b as f64 / max);
            let light = (shade * 100.0).round();
            let _ = write!(
                out,
                "<rect x=\"{}\" y=\"{}\" width=\"{cell}\" height=\"{cell}\" fill=\"hsl(210,70%,{light}%)\"><title>rank {} → rank {}: {}</title></rect>",
                pad + j * cell,
                pad + i * cell,
                g.members.get(i).copied().unwrap_or_default(),
                g.members.get(j).copied().unwrap_or_default(),
                esc(&si(b as f64, "B"))
            );
        }
    }
    let _ = write!(
        out,
        "<text x=\"{pad}\" y=\"14\" font-size=\"11\">to rank →</text><text x=\"2\" y=\"{}\" font-size=\"11\">from</text></svg>",
        pad + 12
    );
    out
}
