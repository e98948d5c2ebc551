//! Column layout of every terminal table: widths chosen so that the table fits its width
//! (100 columns) and no token (a run of non-blank characters) is ever broken across lines.
//!
//! comfy-table's dynamic arrangement splits a word that does not fit its column in the
//! middle (`softmax-onl`/`ine`). Here the layout is ours, and comfy-table only draws:
//! 1. each column's *natural* width is its longest line, its *floor* its longest token
//!    or short line (a number with its unit stays whole) and any lower bound a renderer
//!    set; when the natural widths fit, nothing wraps;
//! 2. else every column gets its floor and the room left goes first to the columns that
//!    need the least to stop wrapping, then to the others in proportion to their need;
//! 3. when even the floors do not fit, the widest floors are capped at one width `T`
//!    (the largest for which the table fits) and tokens longer than their column are
//!    shortened by [`shorten_all`] — a column's long tokens together, keeping what tells
//!    them apart (template arguments, tiles, line suffixes, shapes), never cutting a
//!    number; the full text stays in JSON, CSV and HTML;
//! 4. cells are wrapped at blanks to their column's width, never at a blank inside
//!    brackets (`op_shape=(8832, 2880)` is one token), and comfy-table draws them with
//!    the arrangement disabled (it never re-wraps).
//!
//! Widths are counted in `char`s, as everywhere else in the reports (the cells are ASCII
//! plus a few one-column symbols: `µ`, `σ`, `…`, `±`, `≥`).

mod shorten;

pub use shorten::{shorten, shorten_all};

use comfy_table::{ColumnConstraint, ContentArrangement, Table, Width};
use shorten::{compact_lists as compact, list_pieces, tokens};
use std::collections::HashMap;

/// Lines up to this many characters (`92.0 µs`, `8×4×1 / 128×1×1` is longer) are kept
/// on one line: their floor is their length, not their longest token's.
const SHORT_LINE: usize = 12;

/// A copy of `t` laid out to fit `width` columns without breaking a token.
pub(crate) fn lay_out(t: &Table, width: usize) -> Table {
    let mut style_src = t.clone();
    let n = style_src.column_count();
    let header: Option<Vec<String>> =
        t.header().map(|h| h.cell_iter().map(comfy_table::Cell::content).collect());
    let rows: Vec<Vec<String>> =
        t.row_iter().map(|r| r.cell_iter().map(comfy_table::Cell::content).collect()).collect();
    let padding: Vec<usize> =
        (0..n).map(|c| t.column(c).map_or(2, |col| usize::from(col.padding_width()))).collect();
    // Lower bounds a renderer asked for, as content widths.
    let lower: Vec<usize> = (0..n)
        .map(|c| match t.column(c).and_then(|col| col.constraint()) {
            Some(
                ColumnConstraint::LowerBoundary(Width::Fixed(w))
                | ColumnConstraint::Boundaries { lower: Width::Fixed(w), .. },
            ) => usize::from(*w).saturating_sub(padding[c]),
            _ => 0,
        })
        .collect();
    let preset = style_src.current_style_as_preset();
    let borders = border_columns(&preset, n);
    let budget = width.saturating_sub(borders + padding.iter().sum::<usize>());

    let all_rows = || header.iter().chain(rows.iter());
    let mut natural = lower.clone();
    let mut floor = lower.clone();
    for row in all_rows() {
        for (c, cell) in row.iter().enumerate().take(n) {
            for line in cell.lines() {
                natural[c] = natural[c].max(len(line));
                if len(line) <= SHORT_LINE {
                    floor[c] = floor[c].max(len(line));
                }
                for tok in tokens(line) {
                    floor[c] = floor[c].max(len(tok));
                }
            }
        }
    }
    // comfy-table draws an empty column one character wide: count it so.
    let natural: Vec<usize> = natural.into_iter().map(|w| w.max(1)).collect();
    let floor: Vec<usize> = floor.into_iter().map(|w| w.max(1)).collect();
    let widths = column_widths(&natural, &floor, budget);

    let mut out = Table::new();
    out.load_preset(&preset).set_content_arrangement(ContentArrangement::Disabled);
    // Each column's tokens too long for it, shortened together.
    let short: Vec<HashMap<String, String>> = (0..n)
        .map(|c| {
            let w = widths.get(c).copied().unwrap_or(usize::MAX).max(1);
            let mut long: Vec<&str> = Vec::new();
            for row in all_rows() {
                for line in row.get(c).map_or("", String::as_str).lines() {
                    for tok in tokens(line) {
                        if len(tok) > w && !long.contains(&tok) {
                            long.push(tok);
                        }
                    }
                }
            }
            let shortened = shorten_all(&long, w);
            long.into_iter().map(str::to_string).zip(shortened).collect()
        })
        .collect();
    let fit = |row: &[String]| -> Vec<String> {
        row.iter()
            .enumerate()
            .map(|(c, cell)| {
                fit_cell(cell, widths.get(c).copied().unwrap_or(usize::MAX), &short[c])
            })
            .collect()
    };
    if let Some(h) = &header {
        out.set_header(fit(h));
    }
    for r in &rows {
        out.add_row(fit(r));
    }
    for (c, col) in out.column_iter_mut().enumerate() {
        let p = padding.get(c).copied().unwrap_or(2);
        let lead = t.column(c).map_or(1, |src| usize::from(src.padding_width()) / 2);
        col.set_padding((lead as u16, (p - lead) as u16));
        // The chosen width, even where the wrapped lines came out shorter.
        if let Some(&w) = widths.get(c) {
            col.set_constraint(ColumnConstraint::Absolute(Width::Fixed((w + p) as u16)));
        }
    }
    out
}

/// The width column `col` of `t` gets when every other column keeps its natural width
/// (its longest line) in a table `width` columns wide: what a renderer shortens names to
/// so that each row stays one line.
pub(crate) fn room_for(t: &Table, width: usize, col: usize) -> usize {
    let mut style_src = t.clone();
    let n = style_src.column_count();
    let padding: usize =
        (0..n).map(|c| t.column(c).map_or(2, |x| usize::from(x.padding_width()))).sum();
    let borders = border_columns(&style_src.current_style_as_preset(), n);
    let mut natural = vec![1usize; n];
    let header: Option<Vec<String>> =
        t.header().map(|h| h.cell_iter().map(comfy_table::Cell::content).collect());
    let rows =
        t.row_iter().map(|r| r.cell_iter().map(comfy_table::Cell::content).collect::<Vec<_>>());
    for row in header.into_iter().chain(rows) {
        for (c, cell) in row.iter().enumerate().take(n) {
            for line in cell.lines() {
                natural[c] = natural[c].max(len(line));
            }
        }
    }
    let others: usize = natural.iter().enumerate().filter(|(c, _)| *c != col).map(|(_, w)| w).sum();
    width.saturating_sub(borders + padding + others)
}

/// Columns taken by borders and separators of an `n`-column table drawn with `preset`,
/// measured by drawing one (comfy-table draws a blank separator where a style omits it).
fn border_columns(preset: &str, n: usize) -> usize {
    let mut probe = Table::new();
    probe.load_preset(preset).set_content_arrangement(ContentArrangement::Disabled);
    probe.add_row(vec!["x"; n.max(1)]);
    for c in probe.column_iter_mut() {
        c.set_padding((0, 0));
    }
    let drawn = probe.lines().map(|l| len(&l)).max().unwrap_or(0);
    drawn.saturating_sub(n.max(1))
}

fn len(s: &str) -> usize {
    s.chars().count()
}

/// Content widths per the module doc: natural widths when they fit `budget`, else floors
/// plus a share of the room left, else floors capped at one width.
pub(crate) fn column_widths(natural: &[usize], floor: &[usize], budget: usize) -> Vec<usize> {
    let sum = |v: &[usize]| v.iter().sum::<usize>();
    if sum(natural) <= budget {
        return natural.to_vec();
    }
    if sum(floor) <= budget {
        let mut w = floor.to_vec();
        let mut room = budget - sum(floor);
        // Columns that need the least first: each one satisfied stops wrapping.
        let mut order: Vec<usize> = (0..w.len()).filter(|&c| natural[c] > w[c]).collect();
        order.sort_by_key(|&c| natural[c] - w[c]);
        let mut rest = Vec::new();
        for c in order {
            let need = natural[c] - w[c];
            if need <= room && rest.is_empty() {
                w[c] = natural[c];
                room -= need;
            } else {
                rest.push(c);
            }
        }
        let need_total: usize = rest.iter().map(|&c| natural[c] - w[c]).sum();
        if need_total > 0 {
            let share = room;
            for &c in &rest {
                let give = (share * (natural[c] - w[c])).checked_div(need_total).unwrap_or(0);
                w[c] += give;
                room -= give;
            }
            // What integer division left, one column each, the neediest first.
            let mut rest = rest;
            rest.sort_by_key(|&c| std::cmp::Reverse(natural[c] - w[c]));
            for &c in rest.iter().cycle().take(room) {
                if w[c] < natural[c] {
                    w[c] += 1;
                }
            }
        }
        return w;
    }
    // The floors do not fit: cap the widest at the largest T that fits.
    let top = floor.iter().copied().max().unwrap_or(0);
    let mut cap = top;
    while cap > 1 && floor.iter().map(|&f| f.min(cap)).sum::<usize>() > budget {
        cap -= 1;
    }
    let mut w: Vec<usize> = floor.iter().map(|&f| f.min(cap)).collect();
    let mut room = budget.saturating_sub(sum(&w));
    for c in 0..w.len() {
        if room == 0 {
            break;
        }
        if floor[c] > w[c] {
            w[c] += 1;
            room -= 1;
        }
    }
    w
}

/// `cell` wrapped at blanks (outside brackets) to `width`; tokens longer than `width`
/// replaced by their shortened form in `short` (or shortened alone).
pub(crate) fn fit_cell(cell: &str, width: usize, short: &HashMap<String, String>) -> String {
    let width = width.max(1);
    let mut lines: Vec<String> = Vec::new();
    for line in cell.lines() {
        if len(line) <= width {
            lines.push(line.to_string());
            continue;
        }
        let mut cur = String::new();
        let mut pieces: Vec<String> = Vec::new();
        for tok in tokens(line) {
            if len(tok) <= width {
                pieces.push(tok.to_string());
                continue;
            }
            // A list too long for the column: compacted; else wrapped between whole
            // items (the outermost list's first, then any list's, then at its blanks)
            // when every piece fits; else shortened with the column's other long tokens.
            let c = compact(tok);
            if len(&c) <= width {
                pieces.push(c);
                continue;
            }
            // Only a value (`op_shape=(…)`, `((1, 2), (3,))`) wraps; a name (`kernel<…>(…)`)
            // is shortened on its line, keeping what tells it apart.
            let value = tok.starts_with(['(', '['])
                || tok.split(['(', '[', '<']).next().is_some_and(|h| h.ends_with('='));
            let fits = |v: &[&str]| value && v.len() > 1 && v.iter().all(|p| len(p) <= width);
            let outer = list_pieces(&c, true);
            let inner = list_pieces(&c, false);
            let blanks: Vec<&str> = tok.split(' ').filter(|t| !t.is_empty()).collect();
            let found: Option<Vec<String>> = [outer, inner, blanks]
                .into_iter()
                .find(|v| fits(v))
                .map(|v| v.into_iter().map(str::to_string).collect());
            match found {
                Some(v) => pieces.extend(v),
                None => pieces.push(short.get(tok).cloned().unwrap_or_else(|| shorten(tok, width))),
            }
        }
        for tok in pieces {
            if cur.is_empty() {
                cur = tok;
            } else if len(&cur) + 1 + len(&tok) <= width {
                cur.push(' ');
                cur.push_str(&tok);
            } else {
                lines.push(std::mem::replace(&mut cur, tok));
            }
        }
        lines.push(cur);
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_widths_when_they_fit() {
        assert_eq!(column_widths(&[10, 20], &[5, 8], 40), vec![10, 20]);
    }

    #[test]
    fn floors_first_then_the_least_needy_columns() {
        // Budget 30: floors 5 + 8 + 4 = 17, room 13. Column 2 needs 2 (fully given),
        // then 11 between columns 0 (needs 15) and 1 (needs 12) in proportion.
        let w = column_widths(&[20, 20, 6], &[5, 8, 4], 30);
        assert_eq!(w.iter().sum::<usize>(), 30);
        assert_eq!(w[2], 6);
        assert!(w[0] >= 5 && w[1] >= 8, "{w:?}");
    }

    #[test]
    fn floors_capped_when_they_do_not_fit() {
        // Floors 40 + 30 + 5 = 75 > 50: cap T with min(40,T) + min(30,T) + 5 <= 50 → T = 22.
        let w = column_widths(&[40, 30, 5], &[40, 30, 5], 50);
        assert_eq!(w, vec![23, 22, 5]);
    }

    #[test]
    fn cells_wrap_at_blanks_and_shorten_long_tokens() {
        let none = HashMap::new();
        // `256x1x1` is a tile: kept whole behind a shorter head.
        assert_eq!(fit_cell("rooftop block=256x1x1", 12, &none), "rooftop\nbloc…256x1x1");
        assert_eq!(fit_cell("rank 0 (rank0_trace.json)", 18, &none), "rank 0\n(rank0_trace.json)");
        assert_eq!(fit_cell("softmax-online", 14, &none), "softmax-online");
        assert_eq!(shorten("vllm::unified_attention_with_output", 10), "vllm::uni…");
        // A shape is one token: it moves to the next line whole, never split at its blank.
        assert_eq!(
            fit_cell("op_shape=(1, 141, 512) dtypes=(BFloat16, None)", 24, &none),
            "op_shape=(1, 141, 512)\ndtypes=(BFloat16, None)"
        );
    }

    #[test]
    fn a_table_of_long_tokens_fits_and_breaks_none() {
        let mut t = Table::new();
        t.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY).set_header(vec!["kernel", "impl"]);
        t.add_row(vec!["softmax-online", "matrixmultiply block=256x1x1"]);
        t.add_row(vec!["vllm::unified_attention_with_output", "rank 0 (rank0_trace.json)"]);
        // Wide enough for every token: all stay whole.
        let s = lay_out(&t, 60).to_string();
        for tok in ["softmax-online", "vllm::unified_attention_with_output", "(rank0_trace.json)"] {
            assert!(s.contains(tok), "{tok} missing in\n{s}");
        }
        // Too narrow: the longest tokens are shortened, none is broken.
        let s = lay_out(&t, 40).to_string();
        for line in s.lines() {
            assert_eq!(line.chars().count(), 40, "{line}");
        }
        assert!(s.contains("softmax-online"), "{s}");
        assert!(s.contains("vllm::unified_at…"), "{s}");
        assert!(s.contains("(rank0_trace.js…"), "{s}");
        assert!(!s.contains("unified_at\n"), "{s}");
    }
}
