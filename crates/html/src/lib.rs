//! crawlgate-html: streaming robots meta rewriter (being written).
