//! Diversifying the top of a ranking across files.
//!
//! Sections of one file tend to fill the top together (they share the
//! file's vocabulary), so a question touching two documents loses the
//! second one. The head is reordered greedily: each pick is the row with
//! the best *adjusted* score, `score × FILE_DECAY^k` where `k` counts the
//! rows of the same file already picked. A second section of a file stays
//! in place when it is much better than the next file's best, and moves
//! down otherwise; nothing is dropped (the rest of a file's sections follow
//! further down and stay reachable through `manual_hits`).

/// Factor applied per earlier pick of the same file.
pub(crate) const FILE_DECAY: f64 = 0.95;
/// How many rows at the top are reordered.
pub(crate) const DIVERSIFY_TOP: usize = 50;

/// Reorders the first `DIVERSIFY_TOP` of `rows` (sorted by score, best
/// first) and sets their scores to the adjusted scores; `file` names a
/// row's file. Returns the new order as indices into `rows`.
pub(crate) fn order<F: PartialEq>(rows: &[(F, f64)]) -> Vec<(usize, f64)> {
    let top = rows.len().min(DIVERSIFY_TOP);
    let mut picked: Vec<(usize, f64)> = Vec::with_capacity(rows.len());
    let mut taken = vec![false; top];
    let mut files: Vec<(&F, i32)> = Vec::new();
    for _ in 0..top {
        let mut best: Option<(usize, f64)> = None;
        for (i, (file, score)) in rows[..top].iter().enumerate() {
            if taken[i] {
                continue;
            }
            let k = files
                .iter()
                .find(|(f, _)| *f == file)
                .map(|(_, k)| *k)
                .unwrap_or(0);
            let adjusted = score * FILE_DECAY.powi(k);
            if best.is_none_or(|(_, b)| adjusted > b) {
                best = Some((i, adjusted));
            }
        }
        let Some((i, adjusted)) = best else {
            break;
        };
        taken[i] = true;
        match files.iter_mut().find(|(f, _)| *f == &rows[i].0) {
            Some((_, k)) => *k += 1,
            None => files.push((&rows[i].0, 1)),
        }
        picked.push((i, adjusted));
    }
    picked.extend((top..rows.len()).map(|i| (i, rows[i].1)));
    picked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_file_moves_up_past_close_sections_of_the_first() {
        let rows = [("a", 10.0), ("a", 9.9), ("b", 9.6), ("a", 9.5)];
        let order: Vec<usize> = order(&rows).into_iter().map(|(i, _)| i).collect();
        assert_eq!(order, [0, 2, 1, 3]);
    }

    #[test]
    fn a_much_better_section_of_the_same_file_keeps_its_place() {
        let rows = [("a", 10.0), ("a", 9.0), ("b", 5.0)];
        let order: Vec<usize> = order(&rows).into_iter().map(|(i, _)| i).collect();
        assert_eq!(order, [0, 1, 2]);
    }

    #[test]
    fn nothing_is_dropped_and_scores_never_rise() {
        let rows: Vec<(u32, f64)> = (0..80).map(|i| (i % 3, 100.0 - f64::from(i))).collect();
        let out = order(&rows);
        assert_eq!(out.len(), rows.len());
        let mut seen: Vec<usize> = out.iter().map(|(i, _)| *i).collect();
        seen.sort_unstable();
        assert!(seen.iter().enumerate().all(|(k, i)| k == *i));
        assert!(out.iter().all(|(i, s)| *s <= rows[*i].1));
        assert!(
            out.windows(2)
                .take(DIVERSIFY_TOP - 1)
                .all(|w| w[0].1 >= w[1].1)
        );
    }
}
