//! `[rsl]`: the RSL 1.0 document crawlgate serves.

use toml::Spanned;

use super::ctx::Ctx;
use crate::diag::Warning;
use crate::raw::RawRsl;
use crate::validate;

/// `[rsl]`: the path and the document served there; warns when robots.txt
/// does not point to it (`has_license`: `robots_txt.license` is set).
pub(super) fn compile_rsl(
    cx: &mut Ctx<'_>,
    raw: Option<&Spanned<RawRsl>>,
    has_license: bool,
) -> Option<(String, String)> {
    let raw = raw?;
    let RawRsl { path, document } = raw.get_ref();
    let path_ok = match path {
        None => Some(crate::local_file::LocalFile::Rsl.path().to_string()),
        Some(p) => match validate::rsl_path(p.get_ref()) {
            Ok(()) if crate::local_file::LocalFile::at(p.get_ref()).is_some() => {
                cx.err(p, format!("rsl.path: `{}` is already served by crawlgate", p.get_ref()));
                None
            }
            Ok(()) => Some(p.get_ref().clone()),
            Err(e) => {
                cx.err(p, e);
                None
            }
        },
    };
    let doc = match validate::rsl_document(document.get_ref()) {
        Ok(d) => Some(d.to_string()),
        Err(e) => {
            cx.err(document, e);
            None
        }
    };
    let (path, doc) = (path_ok?, doc?);
    if !has_license {
        cx.warn(raw, Warning::RslWithoutLicense, format!("rsl: robots_txt.license is not set, so robots.txt has no License line pointing crawlers to {path} (set it to this document's absolute URL)"));
    }
    Some((path, doc))
}
