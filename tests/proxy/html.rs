//! HTML rewriting through the proxy (being written).
