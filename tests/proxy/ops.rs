//! Hot reload, metrics and admin endpoints (being written).
