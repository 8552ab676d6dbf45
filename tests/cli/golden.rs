//! Golden renders of conf/ and tests/data/ policies (being written).
