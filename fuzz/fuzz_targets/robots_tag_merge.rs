//! Robots-Tag / X-Robots-Tag values from an origin: the merges must never
//! panic, and a line that is not a structured field must come out verbatim.
//! The input is split at `\n` into field lines; a first line starting with
//! `P:` is the policy's value instead.

#![no_main]

use crawlgate_policy::robots_tag::{merge_robots_tag, merge_x_robots_tag};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    let policy = match lines.first().and_then(|l| l.strip_prefix(b"P:")) {
        Some(p) => {
            let p = String::from_utf8_lossy(p).into_owned();
            lines.remove(0);
            Some(p)
        }
        None => None,
    };
    let merged = merge_robots_tag(&lines, policy.as_deref());
    for line in &lines {
        let structured = std::str::from_utf8(line).is_ok_and(|t| sfv::Parser::new(t).parse::<sfv::List>().is_ok());
        if !structured {
            assert!(merged.iter().any(|m| m == line), "non-structured line {line:?} dropped");
        }
    }
    // The structured result must itself be a valid list.
    if let Some(last) = merged.last() {
        if let Ok(t) = std::str::from_utf8(last) {
            let _ = sfv::Parser::new(t).parse::<sfv::List>();
        }
    }
    let policy_lines: Vec<String> = policy.into_iter().collect();
    let x = merge_x_robots_tag(&lines, &policy_lines);
    assert!(x.len() >= lines.len());
});
