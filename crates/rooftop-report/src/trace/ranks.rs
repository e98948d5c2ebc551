//! The cross-rank table of a multi-rank run ([`CrossRank`]) for the terminal, Markdown,
//! JSON and CSV.

use super::*;

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
            "* slowest rank: {s} (most computation; the others wait for it in collectives). \
             Computation spread {}, window spread {}.",
            ms(c.computation_spread_ms),
            ms(c.total_spread_ms)
        ));
    }
    b
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
pub fn cross_rank_csv(c: &CrossRank) -> String {
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
    csv_text(
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
