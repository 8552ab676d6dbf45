//! crawlgate-proxy (being written).
