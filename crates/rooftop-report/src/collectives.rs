//! Renderers of the collective part of the cross-rank report (`rooftop trace DIR`):
//! collectives by group, kind and size (transfer time, algorithm and bus bandwidth
//! against the catalog link, skew, wait), stragglers, all-to-all traffic, process
//! groups, findings and warnings — for the terminal (through `crate::table::table`),
//! Markdown, and one CSV per table. JSON is the `cross_rank` object itself.
//!
//! Renderers never compute: every number is a field of [`CrossRank`].

use crate::table::{finding_text, stake_cell, table as new_table, wrap, WIDTH};
use crate::MISSING;
use rooftop_core::diagnose::count;
use rooftop_core::trace::comm::{
    AllToAllGroup, CollectiveKind, CollectiveRow, LinkChoice, Straggler,
};
use rooftop_core::trace::ranks::CrossRank;
use rooftop_core::units::{pct, si, sig3, us};
use std::fmt::Write as _;

/// Groups of at most this many ranks get their all-to-all matrix in the terminal.
const MATRIX_TERMINAL_RANKS: usize = 8;

/// One laid-out table.
struct Part {
    title: String,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    notes: Vec<String>,
}

impl Part {
    fn new(title: String, header: &[&str]) -> Part {
        Part {
            title,
            header: header.iter().map(|h| (*h).to_string()).collect(),
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }
}

fn time_us(v: f64) -> String {
    if v == 0.0 {
        "0".to_string()
    } else {
        us(v)
    }
}

fn time_ms(v: f64) -> String {
    time_us(v * 1e3)
}

fn gbs(v: Option<f64>) -> String {
    v.map_or_else(|| MISSING.to_string(), |g| si(g * 1e9, "B/s"))
}

/// The size cell: `S`, `—` for an all-to-all-v (each rank sends its own split sizes, so
/// there is no one `S`; a note says so), `?` when the trace does not give it.
pub(crate) fn size_cell(r: &CollectiveRow) -> String {
    match (r.message_bytes, r.kind) {
        (Some(b), _) => si(b as f64, "B"),
        (None, CollectiveKind::AllToAllV) => MISSING.to_string(),
        (None, _) => "?".to_string(),
    }
}

/// Why some size cells are `—` or `?`, one sentence each (none when every size is known).
pub(crate) fn size_notes(c: &CrossRank, rows: &[CollectiveRow]) -> Vec<String> {
    let mut notes = Vec::new();
    let mut v_groups: Vec<&str> = Vec::new();
    for r in
        rows.iter().filter(|r| r.message_bytes.is_none() && r.kind == CollectiveKind::AllToAllV)
    {
        if !v_groups.contains(&r.process_group.as_str()) {
            v_groups.push(&r.process_group);
        }
    }
    if !v_groups.is_empty() {
        let traffic: Vec<String> = v_groups
            .iter()
            .filter_map(|pg| {
                let g = c.comm.all_to_all.iter().find(|g| g.process_group == *pg)?;
                Some(format!(
                    "{pg} sent {} in {} all-to-all instance{}",
                    si(g.total_bytes as f64, "B"),
                    g.count,
                    if g.count == 1 { "" } else { "s" }
                ))
            })
            .collect();
        let known = if traffic.is_empty() {
            String::new()
        } else {
            format!(" ({}; All-to-all traffic below)", traffic.join("; "))
        };
        notes.push(format!(
            "— all_to_allv size: each rank sends its own split sizes, so there is no one message \
             size and no NCCL-tests bus bandwidth{known}."
        ));
    }
    if rows.iter().any(|r| r.message_bytes.is_none() && r.kind != CollectiveKind::AllToAllV) {
        notes.push(
            "? size: the traces record no element count or no known dtype for that collective, \
             so its size and bus bandwidth are unknown."
                .to_string(),
        );
    }
    notes
}

/// Shortens `s` to `max` characters with `…`.
fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(max.saturating_sub(1)).collect::<String>())
    }
}

fn dtype_short(d: Option<&str>) -> &str {
    match d {
        Some("BFloat16") => "bf16",
        Some("Half") => "fp16",
        Some("Float") => "fp32",
        Some("Double") => "fp64",
        Some(other) => other,
        None => "?",
    }
}

fn scope_short(r: &CollectiveRow) -> &'static str {
    match r.scope {
        rooftop_core::trace::comm::Scope::IntraNode => "intra",
        rooftop_core::trace::comm::Scope::InterNode => "inter",
        rooftop_core::trace::comm::Scope::Unknown => "",
    }
}

fn collectives_part(c: &CrossRank, top: usize) -> Part {
    let a = &c.comm.collectives;
    let mut p = Part::new(
        format!(
            "Collectives ({} of {}; top {} of {})",
            count(a.matched, "matched instance", "matched instances"),
            count(a.kernels, "communication kernel", "communication kernels"),
            top.min(a.rows.len()),
            count(a.rows.len() as u64, "row", "rows")
        ),
        &["group", "collective", "size", "ranks", "count", "transfer", "busbw (of link)", "skew"],
    );
    for r in a.rows.iter().take(top) {
        let link = r.busbw_pct_of_peak.map_or_else(String::new, |p| format!(" ({})", pct(p)));
        p.rows.push(vec![
            short(&r.process_group, 12),
            r.kind.as_str().to_string(),
            format!("{} {}", size_cell(r), dtype_short(r.dtype.as_deref())),
            format!("{} {}", r.group_size, scope_short(r)).trim().to_string(),
            r.count.to_string(),
            time_us(r.transfer_mean_us),
            format!("{}{link}", gbs(r.busbw_gbs)),
            time_us(r.start_skew_mean_us),
        ]);
    }
    if a.rows.is_empty() {
        p.notes.push("No collective could be matched across ranks (see the warnings).".to_string());
    } else {
        p.notes.push(
            "transfer: mean over instances of the shortest duration across ranks; busbw: NCCL-tests \
             bus bandwidth (decimal GB/s) of the mean transfer; skew: mean start skew. Waits, end \
             skew and full names: --format json, csv or html."
                .to_string(),
        );
        p.notes.extend(size_notes(c, &a.rows[..top.min(a.rows.len())]));
    }
    p.notes.extend(link_note(&a.links));
    if a.gpus_per_node.is_none() {
        p.notes.push(
            "Pass --gpus-per-node N to split intra- and inter-node collectives and compare them \
             with their link."
                .to_string(),
        );
    }
    p
}

/// The note on the links bus bandwidth is compared with: each link with where it came
/// from, the catalog (with its note on the device's reference system) or a flag (with
/// the link's own source); `None` when there is no link.
fn link_note(links: &LinkChoice) -> Option<String> {
    let note = links.note.as_deref().map_or_else(String::new, |n| format!("; {n}"));
    let by_flag = links.intra_by_flag || links.inter_by_flag;
    let mut l = Vec::new();
    for (scope, link, flag, chosen) in [
        ("intra", &links.intra, "--intra-link", links.intra_by_flag),
        ("inter", &links.inter, "--inter-link", links.inter_by_flag),
    ] {
        let Some(i) = link else { continue };
        let mut text = format!("{scope}-node {} {}", i.name, si(i.per_gpu_gbs * 1e9, "B/s"));
        // Without a flag, one "(catalog; note)" after both links, as the catalog maps them.
        if chosen {
            let _ = write!(text, " (chosen by {flag}; {})", i.source);
        } else if by_flag {
            let _ = write!(text, " (catalog{note})");
        }
        l.push(text);
    }
    (!l.is_empty()).then(|| {
        format!(
            "of link: busbw over the per-GPU, per-direction bandwidth of {}{}.",
            l.join("; "),
            if by_flag { String::new() } else { format!(" (catalog{note})") }
        )
    })
}

fn stragglers_part(c: &CrossRank, top: usize) -> Part {
    let s = &c.comm.stragglers;
    let mut p = Part::new(
        format!("Stragglers (by wait caused; top {} of {})", top.min(s.len()), s.len()),
        &["rank", "colls", "last", "first", "caused", "per step", "suffered", "late after"],
    );
    for x in s.iter().take(top) {
        p.rows.push(vec![
            x.rank.to_string(),
            x.collectives.to_string(),
            format!("{} ({})", x.times_last, pct(x.pct_last)),
            x.times_first.to_string(),
            time_ms(x.wait_caused_ms),
            x.wait_caused_per_step_ms.map_or_else(|| MISSING.to_string(), time_ms),
            time_ms(x.wait_suffered_ms),
            straggler_compute(x),
        ]);
    }
    p
}

fn straggler_compute(x: &Straggler) -> String {
    match (x.compute_before_when_last_us, x.others_compute_before_us) {
        (Some(m), Some(o)) => format!(
            "{} vs {}{}",
            time_us(m),
            time_us(o),
            x.late_after.as_deref().map_or_else(String::new, |l| format!(" ({})", short(l, 24)))
        ),
        _ => MISSING.to_string(),
    }
}

fn all_to_all_parts(c: &CrossRank, top: usize) -> Vec<Part> {
    let mut out = Vec::new();
    let groups = &c.comm.all_to_all;
    if groups.is_empty() {
        return out;
    }
    let mut p = Part::new(
        "All-to-all traffic".to_string(),
        &["group", "ranks", "count", "bytes", "imbalance", "max", "heaviest sender"],
    );
    for g in groups.iter().take(top) {
        p.rows.push(vec![
            short(&g.process_group, 16),
            g.group_size.to_string(),
            g.count.to_string(),
            si(g.total_bytes as f64, "B"),
            format!("{}×", sig3(g.imbalance_mean)),
            format!("{}×", sig3(g.imbalance_max)),
            g.heaviest_sender.map_or_else(|| MISSING.to_string(), |r| format!("rank {r}")),
        ]);
    }
    p.notes.push(
        "imbalance: per instance, the largest rank's send bytes over the mean (1× = even); mean \
         and maximum over instances."
            .to_string(),
    );
    out.push(p);
    for g in groups.iter().take(top) {
        if let Some(m) = matrix_part(g) {
            out.push(m);
        }
    }
    out
}

fn matrix_part(g: &AllToAllGroup) -> Option<Part> {
    let m = g.matrix_bytes.as_ref()?;
    if g.members.len() > MATRIX_TERMINAL_RANKS {
        return None;
    }
    let mut p =
        Part::new(format!("All-to-all bytes in {} (row sends to column)", g.process_group), &[]);
    p.header = std::iter::once("from \\ to".to_string())
        .chain(g.members.iter().map(ToString::to_string))
        .collect();
    for (i, row) in m.iter().enumerate() {
        let mut cells = vec![g.members.get(i).map_or_else(String::new, ToString::to_string)];
        cells.extend(row.iter().map(|b| si(*b as f64, "B")));
        p.rows.push(cells);
    }
    Some(p)
}

fn findings_part(c: &CrossRank, top: usize) -> Part {
    let f = &c.comm.findings;
    let mut p = Part::new(
        format!("Cross-rank findings (top {} of {})", top.min(f.len()), f.len()),
        &["severity", "at stake", "finding"],
    );
    for x in f.iter().take(top) {
        p.rows.push(vec![x.severity.to_string(), stake_cell(x), finding_text(x)]);
    }
    if f.is_empty() {
        p.notes.push("No cross-rank findings.".to_string());
    }
    p
}

fn warnings_part(c: &CrossRank) -> Option<Part> {
    let w = &c.comm.warnings;
    if w.is_empty() {
        return None;
    }
    let mut p =
        Part::new("Cross-rank warnings".to_string(), &["kind", "count", "what was skipped"]);
    for x in w {
        p.rows.push(vec![x.kind.clone(), x.count.to_string(), x.example.clone()]);
    }
    Some(p)
}

fn parts(c: &CrossRank, top: usize) -> Vec<Part> {
    let mut out = vec![collectives_part(c, top)];
    if !c.comm.stragglers.is_empty() {
        out.push(stragglers_part(c, top));
    }
    out.extend(all_to_all_parts(c, top));
    out.push(findings_part(c, top));
    out.extend(warnings_part(c));
    out
}

/// The collective sections for the terminal (after the rank table).
pub fn table(c: &CrossRank, top: usize) -> String {
    let mut out = String::new();
    for p in parts(c, top) {
        let _ = write!(out, "\n{}\n", p.title);
        if !p.rows.is_empty() {
            let header: Vec<&str> = p.header.iter().map(String::as_str).collect();
            let mut t = new_table(&header);
            for r in &p.rows {
                t.add_row(r.clone());
            }
            let _ = writeln!(out, "{t}");
        }
        for n in &p.notes {
            out.push_str(&wrap(n, usize::from(WIDTH), "", "  "));
        }
    }
    out
}

use crate::markdown::cell as md_cell;

/// The collective sections as Markdown.
pub fn markdown(c: &CrossRank, top: usize) -> String {
    let mut out = String::new();
    for p in parts(c, top) {
        let _ = write!(out, "\n### {}\n\n", md_cell(&p.title));
        if !p.rows.is_empty() {
            let _ =
                writeln!(out, "| {} |\n|{}", p.header.join(" | "), "---|".repeat(p.header.len()));
            for r in &p.rows {
                let cells: Vec<String> = r.iter().map(|x| md_cell(x)).collect();
                let _ = writeln!(out, "| {} |", cells.join(" | "));
            }
        }
        for n in &p.notes {
            let _ = write!(out, "\n{}\n", md_cell(n));
        }
    }
    out
}

fn num(v: f64) -> String {
    format!("{v}")
}

fn onum(v: Option<f64>) -> String {
    v.map_or_else(String::new, num)
}

/// One CSV per table, full precision: `collectives.csv`, `stragglers.csv`,
/// `all_to_all.csv` (long format: one row per sender and receiver), `process_groups.csv`,
/// `cross_rank_findings.csv`, `cross_rank_warnings.csv`.
pub fn csv_files(c: &CrossRank) -> Result<Vec<(String, String)>, crate::RenderError> {
    let mut files = Vec::new();
    collectives_csv(c, &mut files)?;
    stragglers_csv(c, &mut files)?;
    all_to_all_csv(c, &mut files)?;
    process_groups_csv(c, &mut files)?;
    findings_csv(c, &mut files)?;
    warnings_csv(c, &mut files)?;
    Ok(files)
}

/// `collectives.csv`: one row per matched collective.
fn collectives_csv(
    c: &CrossRank,
    files: &mut Vec<(String, String)>,
) -> Result<(), crate::RenderError> {
    let a = &c.comm.collectives;
    let rows = a
        .rows
        .iter()
        .map(|r| {
            vec![
                r.process_group.clone(),
                r.kind.as_str().to_string(),
                r.collective.clone(),
                r.dtype.clone().unwrap_or_default(),
                r.message_bytes.map_or_else(String::new, |b| b.to_string()),
                r.group_size.to_string(),
                r.scope.as_str().to_string(),
                r.count.to_string(),
                num(r.transfer_total_ms),
                num(r.transfer_mean_us),
                num(r.transfer_min_us),
                num(r.transfer_max_us),
                onum(r.algbw_gbs),
                onum(r.busbw_gbs),
                r.peak_link.clone().unwrap_or_default(),
                onum(r.peak_busbw_gbs),
                onum(r.busbw_pct_of_peak),
                num(r.start_skew_mean_us),
                num(r.start_skew_max_us),
                num(r.end_skew_mean_us),
                num(r.end_skew_max_us),
                num(r.wait_total_ms),
                num(r.wait_mean_us),
            ]
        })
        .collect();
    files.push((
        "collectives.csv".to_string(),
        crate::csv::text(
            &[
                "process_group",
                "kind",
                "collective",
                "dtype",
                "message_bytes",
                "group_size",
                "scope",
                "count",
                "transfer_total_ms",
                "transfer_mean_us",
                "transfer_min_us",
                "transfer_max_us",
                "algbw_gbs",
                "busbw_gbs",
                "peak_link",
                "peak_busbw_gbs",
                "busbw_pct_of_peak",
                "start_skew_mean_us",
                "start_skew_max_us",
                "end_skew_mean_us",
                "end_skew_max_us",
                "wait_total_ms",
                "wait_mean_us",
            ],
            rows,
        )?,
    ));
    Ok(())
}

/// `stragglers.csv`: the ranks the others waited for.
fn stragglers_csv(
    c: &CrossRank,
    files: &mut Vec<(String, String)>,
) -> Result<(), crate::RenderError> {
    let rows = c
        .comm
        .stragglers
        .iter()
        .map(|s| {
            vec![
                s.rank.to_string(),
                s.name.clone(),
                s.collectives.to_string(),
                s.times_last.to_string(),
                s.times_first.to_string(),
                num(s.pct_last),
                num(s.wait_suffered_ms),
                num(s.wait_caused_ms),
                s.steps.to_string(),
                onum(s.wait_caused_per_step_ms),
                onum(s.compute_before_when_last_us),
                onum(s.others_compute_before_us),
                s.late_after.clone().unwrap_or_default(),
            ]
        })
        .collect();
    files.push((
        "stragglers.csv".to_string(),
        crate::csv::text(
            &[
                "rank",
                "name",
                "collectives",
                "times_last",
                "times_first",
                "pct_last",
                "wait_suffered_ms",
                "wait_caused_ms",
                "steps",
                "wait_caused_per_step_ms",
                "compute_before_when_last_us",
                "others_compute_before_us",
                "late_after",
            ],
            rows,
        )?,
    ));
    Ok(())
}

/// `all_to_all.csv`: bytes per sender and receiver (long format).
fn all_to_all_csv(
    c: &CrossRank,
    files: &mut Vec<(String, String)>,
) -> Result<(), crate::RenderError> {
    let mut rows = Vec::new();
    for g in &c.comm.all_to_all {
        for (i, src) in g.members.iter().enumerate() {
            match &g.matrix_bytes {
                Some(m) => {
                    for (j, dst) in g.members.iter().enumerate() {
                        let b = m.get(i).and_then(|r| r.get(j)).copied().unwrap_or(0);
                        rows.push(vec![
                            g.process_group.clone(),
                            src.to_string(),
                            dst.to_string(),
                            b.to_string(),
                        ]);
                    }
                }
                // Too many ranks for the matrix: per-rank totals, destination empty.
                None => rows.push(vec![
                    g.process_group.clone(),
                    src.to_string(),
                    String::new(),
                    g.send_bytes.get(i).copied().unwrap_or(0).to_string(),
                ]),
            }
        }
    }
    files.push((
        "all_to_all.csv".to_string(),
        crate::csv::text(&["process_group", "src_rank", "dst_rank", "bytes"], rows)?,
    ));
    Ok(())
}

/// `process_groups.csv`: the process groups and their ranks.
fn process_groups_csv(
    c: &CrossRank,
    files: &mut Vec<(String, String)>,
) -> Result<(), crate::RenderError> {
    let a = &c.comm.collectives;
    let rows = a
        .groups
        .iter()
        .map(|g| {
            vec![
                g.name.clone(),
                g.description.clone().unwrap_or_default(),
                g.group_size.to_string(),
                g.members.as_ref().map_or_else(String::new, |m| {
                    m.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ")
                }),
                g.matched_by.clone(),
                g.matched.to_string(),
                g.incomplete.to_string(),
                g.inconsistent.to_string(),
            ]
        })
        .collect();
    files.push((
        "process_groups.csv".to_string(),
        crate::csv::text(
            &[
                "name",
                "description",
                "group_size",
                "members",
                "matched_by",
                "matched",
                "incomplete",
                "inconsistent",
            ],
            rows,
        )?,
    ));
    Ok(())
}

/// `cross_rank_findings.csv`.
fn findings_csv(
    c: &CrossRank,
    files: &mut Vec<(String, String)>,
) -> Result<(), crate::RenderError> {
    let rows = c
        .comm
        .findings
        .iter()
        .map(|f| {
            vec![
                f.id.to_string(),
                f.severity.to_string(),
                f.title.clone(),
                f.evidence.clone(),
                f.recommendation.clone(),
                onum(f.time_at_stake_us()),
                onum(f.share_pct()),
            ]
        })
        .collect();
    files.push((
        "cross_rank_findings.csv".to_string(),
        crate::csv::text(
            &[
                "id",
                "severity",
                "title",
                "evidence",
                "recommendation",
                "time_at_stake_us",
                "percent_of_total_time",
            ],
            rows,
        )?,
    ));
    Ok(())
}

/// `cross_rank_warnings.csv`.
fn warnings_csv(
    c: &CrossRank,
    files: &mut Vec<(String, String)>,
) -> Result<(), crate::RenderError> {
    let rows = c
        .comm
        .warnings
        .iter()
        .map(|w| vec![w.kind.clone(), w.count.to_string(), w.example.clone()])
        .collect();
    files.push((
        "cross_rank_warnings.csv".to_string(),
        crate::csv::text(&["kind", "count", "example"], rows)?,
    ));
    Ok(())
}
