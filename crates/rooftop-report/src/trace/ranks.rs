//! The cross-rank table of a multi-rank run ([`CrossRank`]) for the terminal, Markdown,
//! JSON and CSV, and the whole multi-rank report ([`RankRun`]: per-rank reports, the
//! cross-rank table, the collectives) in each format.

use super::*;
use rooftop_core::trace::run::{stem, RankRun};

/// The cross-rank table for the terminal.
pub fn cross_rank_table(c: &CrossRank) -> String {
    let b = cross_rank_block(c);
    let header: Vec<&str> = b.header.iter().map(String::as_str).collect();
    let mut t = new_table(&header);
    for row in &b.rows {
        t.add_row(row.clone());
    }
    let mut out = format!("{}\n{t}\n", b.title);
    for n in &b.notes {
        out.push_str(&wrap(n, usize::from(WIDTH), "", "  "));
    }
    out
}

fn cross_rank_block(c: &CrossRank) -> Block {
    let mut b = Block::new(
        format!("Ranks ({})", c.ranks.len()),
        &["rank", "window", "busy", "compute", "comm", "comm exp.", "collectives", "coll. time"],
    );
    for r in &c.ranks {
        let mark = if c.slowest.as_deref() == Some(r.name.as_str()) { " *" } else { "" };
        b.rows.push(vec![
            format!("{}{mark}", r.name),
            ms(r.total_ms),
            ms(r.busy_ms),
            ms(r.computation_ms),
            ms(r.communication_ms),
            ms(r.exposed_communication_ms),
            r.collective_kernel_count.to_string(),
            ms(r.collective_kernel_time_ms),
        ]);
    }
    if let Some(s) = &c.slowest {
        b.notes.push(format!(
            "* slowest rank: {s} ({}). Computation spread {}, window spread {}.",
            slowest_why(c),
            ms(c.computation_spread_ms),
            ms(c.total_spread_ms)
        ));
    }
    b
}

/// Why the slowest rank is marked: its computation, and the waiting it caused only where
/// a matched collective or transfer shows it.
pub(crate) fn slowest_why(c: &CrossRank) -> String {
    match c.slowest_wait_caused_ms {
        Some(w) => format!(
            "most computation; the others waited {} for it in matched collectives and transfers",
            ms(w)
        ),
        None => "most computation; no matched collective or transfer shows the others \
                 waiting for it"
            .to_string(),
    }
}

/// The cross-rank table as Markdown.
pub fn cross_rank_markdown(c: &CrossRank) -> String {
    let b = cross_rank_block(c);
    let mut out = format!(
        "### {}\n\n| {} |\n|{}\n",
        b.title,
        b.header.join(" | "),
        "---|".repeat(b.header.len())
    );
    for row in &b.rows {
        let cells: Vec<String> = row.iter().map(|c| md_cell(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    for n in &b.notes {
        let _ = write!(out, "\n{n}\n");
    }
    out
}

/// The cross-rank table as JSON.
pub fn cross_rank_json(c: &CrossRank) -> String {
    pretty(c)
}

/// The cross-rank table as CSV (`ranks.csv`).
pub fn cross_rank_csv(c: &CrossRank) -> Result<String, crate::RenderError> {
    let rows = c
        .ranks
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                num(r.total_ms),
                num(r.busy_ms),
                num(r.idle_ms),
                num(r.computation_ms),
                num(r.communication_ms),
                num(r.exposed_communication_ms),
                r.collective_kernel_count.to_string(),
                num(r.collective_kernel_time_ms),
                (c.slowest.as_deref() == Some(r.name.as_str())).to_string(),
            ]
        })
        .collect();
    crate::csv::text(
        &[
            "name",
            "total_ms",
            "busy_ms",
            "idle_ms",
            "computation_ms",
            "communication_ms",
            "exposed_communication_ms",
            "collective_kernel_count",
            "collective_kernel_time_ms",
            "slowest",
        ],
        rows,
    )
}

/// Per-rank reports are shown in the terminal and Markdown for at most this many ranks
/// (the cross-rank sections always).
pub const PER_RANK_TABLES_MAX: usize = 8;

/// The report of a multi-rank run for the terminal (`markdown: false`) or as Markdown:
/// each kept rank's report, then the cross-rank table and the collectives.
/// `from_traces`: whether the ranks were traces (not tables), which says why per-rank
/// reports are missing when none was kept.
pub fn ranks_text(
    run: &RankRun,
    opts: &RenderOptions,
    markdown: bool,
    from_traces: bool,
) -> String {
    let mut text = String::new();
    let mut shown = 0;
    for r in &run.ranks {
        let Some(rep) = &r.report else { continue };
        shown += 1;
        let name = r.label();
        let _ = if markdown {
            writeln!(text, "# {name}\n\n{}", super::markdown(rep, opts))
        } else {
            writeln!(text, "== {name} ==\n{}", super::table(rep, opts))
        };
    }
    let cross = &run.cross;
    if markdown {
        let _ = write!(text, "# Across ranks\n\n{}", cross_rank_markdown(cross));
        text.push_str(&crate::collectives::markdown(cross, opts.top));
    } else {
        let _ = write!(text, "== Across ranks ==\n{}", cross_rank_table(cross));
        text.push_str(&crate::collectives::table(cross, opts.top));
    }
    if shown == 0 {
        let mut notes = vec![if from_traces {
            format!(
                "Per-rank reports are not shown (more than {PER_RANK_TABLES_MAX} ranks): \
                 --format json or html has every rank's report, or run `rooftop trace` on one \
                 rank's trace."
            )
        } else {
            // `ranks_json` and the HTML report of tables hold the same cross-rank report and
            // no per-rank one: the tables have no per-rank report to give.
            "Per-rank reports are not shown: rank tables hold no per-rank report, only what the \
             cross-rank report above needs (--format json or html give that same cross-rank \
             report). For one rank's report, run `rooftop trace` on its trace."
                .to_string()
        }];
        if opts.section != Section::Summary {
            notes.push(format!(
                "--section {} is not applied: it selects part of a per-rank report, and none \
                 is shown here.",
                opts.section.as_str()
            ));
        }
        text.push('\n');
        if markdown {
            let _ = writeln!(text, "{}", notes.join("\n\n"));
        } else {
            for n in notes {
                text.push_str(&wrap(&n, usize::from(WIDTH), "", "  "));
            }
        }
    }
    text
}

/// The report of a multi-rank run as JSON: `{"ranks": [{name, rank, report?}],
/// "cross_rank": ...}`.
pub fn ranks_json(run: &RankRun) -> String {
    // Values straight from the structs (not printed and read back): the same document,
    // its object keys sorted as `serde_json::Value` keeps them. Serialising our own
    // structs cannot fail; the error form is `pretty`'s.
    let value = |v: Result<serde_json::Value, serde_json::Error>| {
        v.unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }))
    };
    let ranks_json: Vec<serde_json::Value> = run
        .ranks
        .iter()
        .map(|r| {
            let mut v = serde_json::json!({ "name": r.file, "rank": r.rank });
            if let (Some(rep), Some(obj)) = (&r.report, v.as_object_mut()) {
                obj.insert("report".to_string(), value(serde_json::to_value(rep)));
            }
            v
        })
        .collect();
    let v = serde_json::json!({
        "schema_version": rooftop_core::trace::report::SCHEMA_VERSION,
        "ranks": ranks_json,
        "cross_rank": value(serde_json::to_value(&run.cross)),
    });
    pretty(&v)
}

/// CSV files `(file name, contents)` to write into one folder.
pub type CsvFolder = Vec<(String, String)>;

/// The CSV files of a multi-rank run, by folder: one folder per rank with a report
/// (`Some(stem)`, the files `section` selects), then the top folder (`None`:
/// `cross_rank.csv` and the collectives' files).
pub fn ranks_csv(
    run: &RankRun,
    section: Section,
) -> Result<Vec<(Option<String>, CsvFolder)>, crate::RenderError> {
    let mut out = Vec::new();
    for r in &run.ranks {
        if let Some(rep) = &r.report {
            out.push((Some(stem(&r.file).to_string()), section_csv_files(rep, section)?));
        }
    }
    let mut files = vec![("cross_rank.csv".to_string(), cross_rank_csv(&run.cross)?)];
    files.extend(crate::collectives::csv_files(&run.cross)?);
    out.push((None, files));
    Ok(out)
}
