//! All-to-all(v) traffic per process group: who sent how many bytes to whom, and how
//! uneven each instance was (TraceLens `build_df_nccl_all2allv`'s `size_imbalance` and
//! `build_df_all2allv_heatmap`).
//!
//! `In split size[j]` on a rank is the number of elements it sends to the group's
//! `j`-th member (the NCCL send-counts convention TraceLens also uses); an empty list
//! (`all_to_all` with equal splits) means `In msg nelems / n` to each. Per instance the
//! imbalance is the largest member's send bytes over the members' mean (1 = even).
//! Lists PyTorch truncated (more than 30 entries, `"[…, ..., …]"`) cannot be read: such
//! instances are counted and left out, never guessed.

use super::metrics::InstanceView;
use super::reduce::{Interner, Sym};
use super::AllToAllGroup;
use std::collections::{BTreeMap, HashMap};

/// Groups up to this many ranks get the full rank × rank matrix (64 × 64 cells).
pub const MATRIX_MAX_RANKS: usize = 64;

struct GroupAcc {
    members: Vec<i64>,
    count: u64,
    total: u64,
    send: Vec<u64>,
    recv: Vec<u64>,
    matrix: Option<Vec<u64>>,
    imbalance_sum: f64,
    imbalance_max: f64,
}

/// Accumulates all-to-all instances.
#[derive(Default)]
pub(crate) struct AllToAllAcc {
    groups: BTreeMap<String, GroupAcc>,
    /// Instances whose per-destination sizes could not be read.
    pub unknown: u64,
    splits: HashMap<Sym, Option<Vec<u64>>>,
}

/// A split list as integers; `None` when it is not a plain list of counts.
fn parse_split(s: &str) -> Option<Vec<u64>> {
    let inner = s.trim().strip_prefix('[')?.strip_suffix(']')?;
    inner
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| t.parse::<u64>().ok())
        .collect()
}

impl AllToAllAcc {
    /// One matched instance; `splits[k]` is member `k`'s `In split size` and
    /// `In msg nelems`.
    pub fn add(
        &mut self,
        view: &InstanceView<'_>,
        splits: &[(Sym, Option<u64>)],
        strings: &Interner,
    ) {
        let n = view.members.len();
        let Some(elem) = strings.get(view.slot.dtype).and_then(super::kind::dtype_bytes) else {
            self.unknown += 1;
            return;
        };
        let mut rows: Vec<Vec<u64>> = Vec::with_capacity(n);
        for &(sym, in_nelems) in splits {
            let parsed = self
                .splits
                .entry(sym)
                .or_insert_with(|| strings.get(sym).and_then(parse_split))
                .clone();
            let equal = || match in_nelems {
                Some(total) if n > 0 && total % n as u64 == 0 => Some(vec![total / n as u64; n]),
                _ => None,
            };
            let row = match parsed {
                Some(v) if v.len() == n => Some(v),
                // `[]` or nothing recorded: equal splits of the input.
                Some(v) if v.is_empty() => equal(),
                None if sym == 0 => equal(),
                _ => None,
            };
            let Some(row) = row else {
                self.unknown += 1;
                return;
            };
            rows.push(row);
        }
        let g = self.groups.entry(view.label.to_string()).or_insert_with(|| GroupAcc {
            members: view.members.to_vec(),
            count: 0,
            total: 0,
            send: vec![0; n],
            recv: vec![0; n],
            matrix: (n <= MATRIX_MAX_RANKS).then(|| vec![0; n * n]),
            imbalance_sum: 0.0,
            imbalance_max: 0.0,
        });
        if g.members.len() != n {
            self.unknown += 1;
            return;
        }
        let mut sends = Vec::with_capacity(n);
        for (i, row) in rows.iter().enumerate() {
            let mut sent = 0u64;
            for (j, &e) in row.iter().enumerate() {
                let b = e.saturating_mul(elem);
                sent = sent.saturating_add(b);
                g.recv[j] = g.recv[j].saturating_add(b);
                if let Some(m) = g.matrix.as_mut() {
                    m[i * n + j] = m[i * n + j].saturating_add(b);
                }
            }
            g.send[i] = g.send[i].saturating_add(sent);
            g.total = g.total.saturating_add(sent);
            sends.push(sent);
        }
        g.count += 1;
        let mean = sends.iter().map(|&s| s as f64).sum::<f64>() / n.max(1) as f64;
        let max = sends.iter().copied().max().unwrap_or(0) as f64;
        let imbalance = if mean > 0.0 { max / mean } else { 1.0 };
        g.imbalance_sum += imbalance;
        g.imbalance_max = g.imbalance_max.max(imbalance);
    }

    /// The groups, by total bytes (largest first).
    pub fn groups(&self, _strings: &Interner) -> Vec<AllToAllGroup> {
        let mut out: Vec<AllToAllGroup> = self
            .groups
            .iter()
            .filter(|(_, g)| g.count > 0)
            .map(|(label, g)| {
                let n = g.members.len();
                let heaviest =
                    (0..n).max_by_key(|&i| (g.send[i], std::cmp::Reverse(i))).map(|i| g.members[i]);
                AllToAllGroup {
                    process_group: label.clone(),
                    group_size: n as u32,
                    members: g.members.clone(),
                    count: g.count,
                    total_bytes: g.total,
                    imbalance_mean: g.imbalance_sum / g.count as f64,
                    imbalance_max: g.imbalance_max,
                    heaviest_sender: heaviest,
                    send_bytes: g.send.clone(),
                    recv_bytes: g.recv.clone(),
                    matrix_bytes: g
                        .matrix
                        .as_ref()
                        .map(|m| m.chunks(n.max(1)).map(<[u64]>::to_vec).collect()),
                }
            })
            .collect();
        out.sort_by(|a, b| {
            b.total_bytes.cmp(&a.total_bytes).then_with(|| a.process_group.cmp(&b.process_group))
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_lists() {
        assert_eq!(parse_split("[1, 2, 3]"), Some(vec![1, 2, 3]));
        assert_eq!(parse_split("[]"), Some(vec![]));
        assert_eq!(parse_split("[1, 2, ..., 9]"), None);
        assert_eq!(parse_split("12"), None);
    }
}
