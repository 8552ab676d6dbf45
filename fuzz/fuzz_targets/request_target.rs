//! Request targets from clients: `classify_request_target` (the proxy's
//! first step for every request) and `normalize_request_target` on any
//! bytes. The first byte chooses whether the method is OPTIONS; the rest
//! is the target.
//!
//! What must hold:
//! - nothing panics;
//! - the canonical target is a fixed point of `normalize_request_target`
//!   and of `canonicalize`;
//! - the canonical target starts with `/`, has no control characters and
//!   no `.` or `..` path segment, no `//`, `\` or `;` in its path, and no
//!   fragment;
//! - `forward` is `None` only for an origin-form target (starts with `/`,
//!   no `#`) or for `*` with OPTIONS;
//! - a forwarded target is origin-form and classifies again to the same
//!   canonical target, which it then forwards unchanged;
//! - an origin-form or absolute-form target that classifies normalises to
//!   the same canonical target;
//! - the windows folding of a canonical target (`fold_windows_target`) is
//!   still canonical and folds to itself;
//! - the bytes as a request header: `host_from_absolute_form` keeps the
//!   request line, and its output needs no second change.

#![no_main]

use crawlgate_policy::canonical::{
    canonicalize, classify_request_target, fold_windows_target, host_from_absolute_form, normalize_request_target,
    request_line_target, starts_absolute_form,
};
use libfuzzer_sys::fuzz_target;

fn check_canonical(c: &str, raw: &[u8]) {
    assert!(c.starts_with('/'), "canonical {c:?} of {raw:?} does not start with '/'");
    assert!(!c.bytes().any(|b| b < 0x20 || b == 0x7f), "canonical {c:?} of {raw:?} has a control character");
    assert!(!c.contains('#'), "canonical {c:?} of {raw:?} has a fragment");
    let path = c.split('?').next().unwrap_or("");
    assert!(!path.split('/').any(|s| s == "." || s == ".."), "canonical {c:?} of {raw:?} has a dot segment");
    assert!(!path.contains("//") && !path.contains(['\\', ';']), "canonical {c:?} of {raw:?} is not collapsed");
    assert_eq!(normalize_request_target(c).as_deref(), Ok(c), "canonical {c:?} of {raw:?} is no fixed point");
    assert_eq!(canonicalize(c), c, "canonical {c:?} of {raw:?} is not in canonical form");
}

fuzz_target!(|data: &[u8]| {
    let &[flags, ref raw @ ..] = data else { return };
    let is_options = flags & 1 != 0;
    let _ = starts_absolute_form(raw);
    if let Some(fixed) = host_from_absolute_form(raw) {
        assert_eq!(request_line_target(&fixed), request_line_target(raw), "request line of {raw:?} changed");
        assert_eq!(host_from_absolute_form(&fixed), None, "{raw:?} fixed as {fixed:?} needs another change");
    }
    if let Ok(text) = std::str::from_utf8(raw) {
        if let Ok(n) = normalize_request_target(text) {
            check_canonical(&n, raw);
        }
    }
    let Ok(target) = classify_request_target(raw, is_options) else { return };
    check_canonical(&target.canonical, raw);
    let folded = fold_windows_target(&target.canonical);
    check_canonical(&folded, raw);
    assert_eq!(fold_windows_target(&folded), folded, "windows folding of {raw:?} is not idempotent");
    match &target.forward {
        None => {
            let origin_form = raw.first() == Some(&b'/') && !raw.contains(&b'#');
            assert!(
                origin_form || (raw == b"*" && is_options),
                "{raw:?} is forwarded unchanged but is not origin-form"
            );
        }
        Some(fwd) => {
            assert!(fwd.starts_with('/') && !fwd.contains('#'), "forward {fwd:?} of {raw:?} is not origin-form");
            let again = classify_request_target(fwd.as_bytes(), is_options);
            let again = again.unwrap_or_else(|e| panic!("forward {fwd:?} of {raw:?} does not classify: {e}"));
            assert_eq!(again.canonical, target.canonical, "forward {fwd:?} of {raw:?} decides on another path");
            assert_eq!(again.forward, None, "forward {fwd:?} of {raw:?} would be rewritten again");
        }
    }
    if raw != b"*" {
        let Ok(text) = std::str::from_utf8(raw) else { unreachable!("classify accepted non-UTF-8") };
        assert_eq!(
            normalize_request_target(text).as_deref(),
            Ok(&*target.canonical),
            "classify and normalize disagree on {raw:?}"
        );
    }
});
