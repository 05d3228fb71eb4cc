//! Plain-text tables for people: a title, a header row, columns as wide as
//! their widest cell, numbers right-aligned under their header.

/// A table with a title and named columns.
pub struct Table {
    title: String,
    headers: Vec<&'static str>,
    /// Per column: right-aligned (numbers).
    right: Vec<bool>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table whose columns are `columns`: (header, right-aligned).
    pub fn new(title: &str, columns: &[(&'static str, bool)]) -> Table {
        Table {
            title: title.to_string(),
            headers: columns.iter().map(|(h, _)| *h).collect(),
            right: columns.iter().map(|(_, r)| *r).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (one cell per column).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as text, ending with a newline.
    pub fn render(&self) -> String {
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|i| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(i))
                    .map(|c| c.chars().count())
                    .chain(std::iter::once(self.headers[i].chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: Vec<&str>| {
            let mut out = String::new();
            for (i, c) in cells.iter().enumerate() {
                let w = widths[i];
                if self.right[i] {
                    out.push_str(&format!("{c:>w$}"));
                } else {
                    out.push_str(&format!("{c:<w$}"));
                }
                out.push_str("  ");
            }
            format!("{}\n", out.trim_end())
        };
        let mut out = format!("{}\n", self.title);
        out.push_str(&line(self.headers.clone()));
        for r in &self.rows {
            out.push_str(&line(r.iter().map(String::as_str).collect()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_sit_right_aligned_under_their_header() {
        let mut t = Table::new(
            "BY EFFORT",
            &[("effort", false), ("runs", true), ("mean tokens", true)],
        );
        t.row(vec!["S".into(), "12".into(), "1,500".into()]);
        t.row(vec!["L".into(), "3".into(), "120,000".into()]);
        assert_eq!(
            t.render(),
            "BY EFFORT\neffort  runs  mean tokens\nS         12        1,500\nL          3      120,000\n"
        );
    }
}
