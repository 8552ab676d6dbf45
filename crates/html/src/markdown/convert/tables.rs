//! Tables as GitHub tables: the rows of one table held to count its
//! columns, at most [`MarkdownConfig::max_table_bytes`] of them, after
//! which rows are written as they close with the columns known so far.
//!
//! [`MarkdownConfig::max_table_bytes`]: crate::markdown::MarkdownConfig::max_table_bytes

use super::{Conv, Sep};

impl Conv {
    pub(super) fn finish_cell(&mut self) {
        let Some(t) = self.table.as_mut() else { return };
        let Some(mut cell) = t.cell.take() else { return };
        cell.truncate(cell.trim_end().len());
        cell.drain(..cell.len() - cell.trim_start().len());
        t.held += cell.len() + 3;
        t.cut = false;
        t.row.get_or_insert_with(Vec::new).push(cell);
    }

    pub(super) fn finish_row(&mut self) {
        self.finish_cell();
        let Some(t) = self.table.as_mut() else { return };
        let Some(row) = t.row.take() else { return };
        if row.is_empty() {
            return;
        }
        if t.streaming {
            self.write_row(row);
            return;
        }
        t.cols = t.cols.max(row.len());
        t.rows.push(row);
        if t.held > self.cfg.max_table_bytes {
            t.streaming = true;
            self.flush_rows();
        }
    }

    pub(super) fn flush_rows(&mut self) {
        let rows = match self.table.as_mut() {
            Some(t) => std::mem::take(&mut t.rows),
            None => return,
        };
        for row in rows {
            self.write_row(row);
        }
    }

    fn write_row(&mut self, row: Vec<String>) {
        let Some(t) = self.table.as_mut() else { return };
        let cols = t.cols.max(row.len());
        let first = t.written == 0;
        let header_cols = t.cols.max(1);
        t.written += 1;
        t.held = 0;
        self.request(Sep::Line);
        self.flush_sep();
        self.w("|");
        for i in 0..cols {
            self.w(" ");
            if let Some(cell) = row.get(i) {
                self.w(cell);
            }
            self.w(" |");
        }
        self.wrote_any = true;
        self.inline_started = true;
        if first {
            self.request(Sep::Line);
            self.flush_sep();
            self.w("|");
            for _ in 0..header_cols {
                self.w(" --- |");
            }
        }
        self.wrote_any = true;
        self.inline_started = true;
    }
}
