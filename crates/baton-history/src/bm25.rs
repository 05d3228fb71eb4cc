//! Okapi BM25 over the runs' weighted terms, in memory, built incrementally
//! as records are read (docs/history.md §4).

use std::collections::HashMap;

/// Term-frequency saturation.
pub const K1: f64 = 1.2;
/// Length normalisation.
pub const B: f64 = 0.75;

/// One scored document.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// The document number (the record's position in the index).
    pub doc: usize,
    /// Its BM25 score.
    pub score: f64,
    /// How many query terms it contains.
    pub matched: usize,
}

/// An inverted index: term → (document, weighted count). Each term's
/// postings are kept as varints — the gap to the previous document, then
/// the count — about two bytes a posting instead of eight, so 10,000 past
/// runs cost about a megabyte of postings.
#[derive(Debug, Default, Clone)]
pub struct Bm25 {
    ids: HashMap<String, u32>,
    postings: Vec<Vec<u8>>,
    /// Per term: the last document in its postings (the next gap's base).
    last_doc: Vec<u32>,
    df: Vec<u32>,
    doc_len: Vec<u32>,
    alive: Vec<bool>,
    alive_docs: u32,
    total_len: u64,
}

impl Bm25 {
    /// Adds a document; its number is the count of documents added before.
    pub fn add<'t>(&mut self, terms: impl Iterator<Item = (&'t str, u32)>, len: u32) -> usize {
        let doc = self.doc_len.len();
        let doc_id = u32::try_from(doc).unwrap_or(u32::MAX);
        for (term, tf) in terms {
            let id = match self.ids.get(term) {
                Some(id) => *id as usize,
                None => {
                    let id = self.postings.len();
                    self.ids.insert(term.to_string(), id as u32);
                    self.postings.push(Vec::new());
                    self.last_doc.push(0);
                    self.df.push(0);
                    id
                }
            };
            let gap = doc_id - self.last_doc[id];
            put_varint(&mut self.postings[id], gap);
            put_varint(&mut self.postings[id], tf);
            self.last_doc[id] = doc_id;
            self.df[id] += 1;
        }
        self.doc_len.push(len.max(1));
        self.alive.push(true);
        self.alive_docs += 1;
        self.total_len += u64::from(len.max(1));
        doc
    }

    /// Takes a document out of scoring (a newer record replaced it).
    pub fn remove<'t>(&mut self, doc: usize, terms: impl Iterator<Item = (&'t str, u32)>) {
        if !self.alive.get(doc).copied().unwrap_or(false) {
            return;
        }
        self.alive[doc] = false;
        self.alive_docs -= 1;
        self.total_len -= u64::from(self.doc_len[doc]);
        for (term, _) in terms {
            if let Some(id) = self.ids.get(term) {
                self.df[*id as usize] = self.df[*id as usize].saturating_sub(1);
            }
        }
    }

    /// Inverse document frequency of a term (0 when unknown).
    pub fn idf(&self, term: &str) -> f64 {
        match self.ids.get(term) {
            Some(id) => idf(self.alive_docs, self.df[*id as usize]),
            None => 0.0,
        }
    }

    fn avg_len(&self) -> f64 {
        if self.alive_docs == 0 {
            1.0
        } else {
            self.total_len as f64 / f64::from(self.alive_docs)
        }
    }

    /// The contribution of one term with weighted count `tf` to a document of length `len`.
    pub fn term_score(&self, term: &str, tf: u32, len: u32, query_weight: f64) -> f64 {
        let tf = f64::from(tf);
        let norm = K1 * (1.0 - B + B * f64::from(len.max(1)) / self.avg_len());
        query_weight * self.idf(term) * tf * (K1 + 1.0) / (tf + norm)
    }

    /// The `k` best documents for weighted query terms, best first (ties by
    /// document number, older first). Only the [`crate::terms::MAX_QUERY_TERMS`]
    /// query terms with the largest weight × idf are scored; documents
    /// scoring 0, containing fewer than `min_matched` query terms, or
    /// refused by `keep` are left out.
    pub fn search(
        &self,
        query: &[(String, u32)],
        k: usize,
        min_matched: usize,
        keep: &dyn Fn(usize) -> bool,
    ) -> Vec<Scored> {
        let mut terms: Vec<(u32, f64, f64)> = query
            .iter()
            .filter_map(|(t, qtf)| {
                let id = *self.ids.get(t)?;
                let w = query_weight(*qtf);
                let idf = idf(self.alive_docs, self.df[id as usize]);
                (idf > 0.0).then_some((id, w, idf))
            })
            .collect();
        terms.sort_by(|a, b| (b.1 * b.2).total_cmp(&(a.1 * a.2)).then(a.0.cmp(&b.0)));
        terms.truncate(crate::terms::MAX_QUERY_TERMS);
        let avg = self.avg_len();
        let mut scores = vec![0f64; self.doc_len.len()];
        let mut matched = vec![0u16; self.doc_len.len()];
        let mut touched: Vec<u32> = Vec::new();
        for (id, w, idf) in &terms {
            for (doc, tf) in Postings::new(&self.postings[*id as usize]) {
                let d = doc as usize;
                if !self.alive[d] {
                    continue;
                }
                let tf = f64::from(tf);
                let norm = K1 * (1.0 - B + B * f64::from(self.doc_len[d]) / avg);
                if matched[d] == 0 {
                    touched.push(doc);
                }
                scores[d] += w * idf * tf * (K1 + 1.0) / (tf + norm);
                matched[d] = matched[d].saturating_add(1);
            }
        }
        let mut hits: Vec<Scored> = touched
            .into_iter()
            .map(|d| d as usize)
            .filter(|d| scores[*d] > 0.0 && usize::from(matched[*d]) >= min_matched && keep(*d))
            .map(|d| Scored {
                doc: d,
                score: scores[d],
                matched: usize::from(matched[d]),
            })
            .collect();
        let by_rank = |a: &Scored, b: &Scored| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc));
        if hits.len() > k {
            hits.select_nth_unstable_by(k, by_rank);
            hits.truncate(k);
        }
        hits.sort_by(by_rank);
        hits
    }

    /// Gives back the room the postings grew into (after a whole load).
    pub fn shrink(&mut self) {
        for p in &mut self.postings {
            p.shrink_to_fit();
        }
        self.doc_len.shrink_to_fit();
        self.alive.shrink_to_fit();
    }

    /// Documents still scored.
    pub fn len(&self) -> usize {
        self.alive_docs as usize
    }

    /// Whether no document is scored.
    pub fn is_empty(&self) -> bool {
        self.alive_docs == 0
    }
}

fn put_varint(out: &mut Vec<u8>, mut n: u32) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// The `(document, count)` pairs of one term's varint postings.
struct Postings<'a> {
    bytes: &'a [u8],
    at: usize,
    doc: u32,
}

impl<'a> Postings<'a> {
    fn new(bytes: &'a [u8]) -> Postings<'a> {
        Postings {
            bytes,
            at: 0,
            doc: 0,
        }
    }

    fn varint(&mut self) -> Option<u32> {
        let mut n = 0u32;
        let mut shift = 0;
        loop {
            let b = *self.bytes.get(self.at)?;
            self.at += 1;
            n |= u32::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(n);
            }
            shift += 7;
            if shift > 28 {
                return None;
            }
        }
    }
}

impl Iterator for Postings<'_> {
    type Item = (u32, u32);

    fn next(&mut self) -> Option<(u32, u32)> {
        let gap = self.varint()?;
        let tf = self.varint()?;
        self.doc += gap;
        Some((self.doc, tf))
    }
}

/// The weight of a query term counted `qtf` times: 1 + ln(qtf).
pub fn query_weight(qtf: u32) -> f64 {
    1.0 + f64::from(qtf.max(1)).ln()
}

fn idf(n: u32, df: u32) -> f64 {
    if df == 0 {
        return 0.0;
    }
    let (n, df) = (f64::from(n), f64::from(df));
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(terms: &[(&str, u32)]) -> Vec<(String, u32)> {
        terms.iter().map(|(t, n)| (t.to_string(), *n)).collect()
    }

    fn it(terms: &[(String, u32)]) -> impl Iterator<Item = (&str, u32)> {
        terms.iter().map(|(t, n)| (t.as_str(), *n))
    }

    #[test]
    fn rarer_terms_and_more_matches_rank_higher() {
        let mut idx = Bm25::default();
        let a = doc(&[("login", 2), ("timeout", 2)]);
        let b = doc(&[("login", 2), ("button", 2)]);
        let c = doc(&[("login", 2), ("color", 2)]);
        idx.add(it(&a), 4);
        idx.add(it(&b), 4);
        idx.add(it(&c), 4);
        let q = doc(&[("login", 1), ("timeout", 1)]);
        let hits = idx.search(&q, 10, 1, &|_| true);
        assert_eq!(hits[0].doc, 0, "both terms, one rare");
        assert_eq!(hits[0].matched, 2);
        assert!(hits[0].score > hits[1].score);
        assert_eq!(hits.len(), 3);
        assert!(idx.idf("timeout") > idx.idf("login"));
        // k cuts, filters apply.
        assert_eq!(idx.search(&q, 1, 1, &|_| true).len(), 1);
        assert!(
            idx.search(&q, 10, 1, &|d| d != 0)
                .iter()
                .all(|h| h.doc != 0)
        );
    }

    #[test]
    fn shorter_documents_win_at_equal_counts_and_removed_ones_vanish() {
        let mut idx = Bm25::default();
        let short = doc(&[("cache", 1)]);
        let long = doc(&[("cache", 1), ("other", 9)]);
        idx.add(it(&long), 10);
        idx.add(it(&short), 1);
        idx.add(it(&doc(&[("zzz", 1)])), 1);
        let q = doc(&[("cache", 1)]);
        let hits = idx.search(&q, 10, 1, &|_| true);
        assert_eq!(hits[0].doc, 1);
        idx.remove(1, it(&short));
        let hits = idx.search(&q, 10, 1, &|_| true);
        assert_eq!(hits.iter().map(|h| h.doc).collect::<Vec<_>>(), [0]);
        assert_eq!(idx.len(), 2);
    }

    #[test]
    fn postings_round_trip_through_their_varints() {
        let mut bytes = Vec::new();
        let pairs = [
            (0u32, 1u32),
            (1, 300),
            (200, 2),
            (70_000, 1),
            (u32::MAX - 1, u32::MAX),
        ];
        let mut prev = 0;
        for (doc, tf) in pairs {
            put_varint(&mut bytes, doc - prev);
            put_varint(&mut bytes, tf);
            prev = doc;
        }
        assert_eq!(Postings::new(&bytes).collect::<Vec<_>>(), pairs);
        // Small gaps and counts take a byte each.
        let mut idx = Bm25::default();
        for _ in 0..100 {
            idx.add(it(&doc(&[("a", 3)])), 1);
        }
        assert_eq!(idx.postings[0].len(), 200);
    }

    #[test]
    fn unknown_terms_score_nothing() {
        let mut idx = Bm25::default();
        idx.add(it(&doc(&[("a1", 1)])), 1);
        assert!(idx.search(&doc(&[("zz", 3)]), 5, 1, &|_| true).is_empty());
        assert!(
            Bm25::default()
                .search(&doc(&[("zz", 1)]), 5, 1, &|_| true)
                .is_empty()
        );
    }
}
