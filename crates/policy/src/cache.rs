//! The caching rule of a response that must not reach a shared cache: a
//! paid page, and a refusal that states a price, belong to the client that
//! asked (RFC 9111 section 5.2.2.7, `private`). A shared cache in front of
//! the proxy (nginx `proxy_cache`, a CDN) would otherwise serve the paid
//! page free to the next client, with a `crawler-charged` that no ledger
//! row backs.

/// The `Cache-Control` value of a response kept from shared caches, given
/// the origin's field lines: `private` first, the origin's other
/// directives kept (`max-age`, `no-cache`, ...: the client's own cache may
/// keep the page), and every directive aimed at shared caches dropped
/// (`public`, `s-maxage`, `proxy-revalidate`, and a `private` with a field
/// list, which only hides those fields).
pub fn private<'a>(origin: impl IntoIterator<Item = &'a [u8]>) -> String {
    let mut out = String::from("private");
    for line in origin {
        let Ok(text) = std::str::from_utf8(line) else { continue };
        for directive in text.split(',') {
            let d = directive.trim();
            let name = d.split('=').next().unwrap_or_default().trim();
            let shared =
                ["public", "s-maxage", "proxy-revalidate", "private"].iter().any(|s| name.eq_ignore_ascii_case(s));
            // Only token characters and `=`, `"`: a directive that is not
            // is dropped rather than copied into the field.
            let clean = d.bytes().all(|b| b.is_ascii_graphic() && b != b',');
            if d.is_empty() || shared || !clean {
                continue;
            }
            out.push_str(", ");
            out.push_str(d);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn keeps_shared_caches_out() {
        let rows: &[(&[&str], &str)] = &[
            (&[], "private"),
            (&["public, max-age=600"], "private, max-age=600"),
            (&["max-age=60, s-maxage=600", "Public"], "private, max-age=60"),
            (&["private=\"set-cookie\", no-cache"], "private, no-cache"),
            (&["no-store"], "private, no-store"),
            (&["proxy-revalidate, must-revalidate"], "private, must-revalidate"),
            (&[" , ,max-age=5 "], "private, max-age=5"),
            (&["max-age=5 garbage"], "private"),
        ];
        for (lines, want) in rows {
            assert_eq!(super::private(lines.iter().map(|l| l.as_bytes())), *want, "{lines:?}");
        }
    }
}
