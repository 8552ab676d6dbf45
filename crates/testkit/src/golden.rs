//! Golden files: compare output with a file in the repository, or rewrite
//! the file when `UPDATE_GOLDEN` is set; and JSON goldens read into serde
//! types instead of walked by hand.

use std::path::Path;

use serde::de::DeserializeOwned;

/// Whether `UPDATE_GOLDEN` asks for goldens to be rewritten (set, not empty
/// and not `0`).
pub fn updating() -> bool {
    std::env::var("UPDATE_GOLDEN").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Where two texts first differ, line by line, for a failure message.
pub fn first_difference(expected: &str, actual: &str) -> String {
    let (mut e, mut a) = (expected.split_inclusive('\n'), actual.split_inclusive('\n'));
    let mut line = 1;
    loop {
        match (e.next(), a.next()) {
            (Some(x), Some(y)) if x == y => line += 1,
            (None, None) => return "identical".into(),
            (x, y) => {
                let show = |l: Option<&str>| l.map_or("<end of file>".to_string(), |l| format!("{l:?}"));
                return format!(
                    "first difference at line {line}:\n    expected: {}\n    actual:   {}",
                    show(x),
                    show(y)
                );
            }
        }
    }
}

/// Compares `actual` with the golden at `path` (shown as `name`), or writes
/// it when [`updating`]. Returns the failure message; `what` names the
/// output's producer.
pub fn check(path: &Path, name: &str, actual: &[u8], what: &str) -> Option<String> {
    if updating() {
        let unchanged = std::fs::read(path).is_ok_and(|old| old == actual);
        if !unchanged {
            std::fs::write(path, actual).unwrap_or_else(|e| panic!("cannot write {name}: {e}"));
            eprintln!("UPDATE_GOLDEN: wrote {name}");
        }
        return None;
    }
    let expected = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            return Some(format!(
                "{name}: cannot read the golden ({e}); {what} printed {} bytes. Create it with UPDATE_GOLDEN=1",
                actual.len()
            ))
        }
    };
    if expected == actual {
        return None;
    }
    let diff = first_difference(&String::from_utf8_lossy(&expected), &String::from_utf8_lossy(actual));
    Some(format!(
        "{name}: {what} differs from the golden ({} bytes expected, {} printed); {diff}\n    (intended? regenerate with UPDATE_GOLDEN=1 and review the diff)",
        expected.len(),
        actual.len()
    ))
}

/// [`check`], panicking with its message.
pub fn assert_golden(path: &Path, name: &str, actual: &[u8], what: &str) {
    if let Some(failure) = check(path, name, actual, what) {
        panic!("{failure}");
    }
}

/// Deletes a golden that should not exist when [`updating`]; otherwise
/// returns the failure message.
pub fn unwanted(path: &Path, name: &str, why: &str) -> Option<String> {
    if updating() {
        std::fs::remove_file(path).unwrap_or_else(|e| panic!("cannot remove {name}: {e}"));
        eprintln!("UPDATE_GOLDEN: removed {name} ({why})");
        return None;
    }
    Some(format!("{name}: {why}; delete it (UPDATE_GOLDEN=1 does)"))
}

/// A JSON file read into `T`; panics naming the file and serde's reason.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> T {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// JSON output of `what` read into `T`; panics with serde's reason and the
/// text.
pub fn parse_json<T: DeserializeOwned>(text: &[u8], what: &str) -> T {
    serde_json::from_slice(text)
        .unwrap_or_else(|e| panic!("{what} is not the expected JSON ({e}):\n{}", String::from_utf8_lossy(text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_difference_names_the_line() {
        assert_eq!(first_difference("a\nb\n", "a\nb\n"), "identical");
        assert_eq!(
            first_difference("a\nb\n", "a\nc\n"),
            "first difference at line 2:\n    expected: \"b\\n\"\n    actual:   \"c\\n\""
        );
        assert_eq!(
            first_difference("a\n", "a\nb\n"),
            "first difference at line 2:\n    expected: <end of file>\n    actual:   \"b\\n\""
        );
    }
}
