//! The state of one compile: where each offset of the source is, and the
//! errors and warnings found so far. Every table's compile step reports
//! through it, so that all errors come back at once.

use std::time::Duration;

use toml::Spanned;

use crate::diag::{parse_duration, Diagnostic, Locator, Warning};

/// The locator of the source, and the diagnostics collected so far.
pub(crate) struct Ctx<'a> {
    pub(super) loc: Locator<'a>,
    pub(super) errors: Vec<Diagnostic>,
    pub(super) warnings: Vec<Diagnostic>,
}

impl<'a> Ctx<'a> {
    /// A context over `source`, named `file` in every diagnostic.
    pub(super) fn new(file: &'a str, source: &'a str) -> Ctx<'a> {
        Ctx { loc: Locator::new(file, source), errors: Vec::new(), warnings: Vec::new() }
    }
    /// An error at the start of `span`.
    pub(crate) fn err<T>(&mut self, span: &Spanned<T>, msg: impl Into<String>) {
        let d = self.loc.at(span.span().start, msg);
        self.errors.push(d);
    }
    /// An error at byte `offset` of the source.
    pub(crate) fn err_at(&mut self, offset: usize, msg: impl Into<String>) {
        let d = self.loc.at(offset, msg);
        self.errors.push(d);
    }
    /// A warning of `kind` at the start of `span`.
    pub(super) fn warn<T>(&mut self, span: &Spanned<T>, kind: Warning, msg: impl Into<String>) {
        self.warn_at(span.span().start, kind, msg);
    }
    /// A warning of `kind` at byte `offset` of the source.
    pub(super) fn warn_at(&mut self, offset: usize, kind: Warning, msg: impl Into<String>) {
        let mut d = self.loc.at(offset, msg);
        d.warning = Some(kind);
        self.warnings.push(d);
    }
    /// `v` as a duration; `default` when absent, or when invalid (reported).
    pub(crate) fn duration(&mut self, key: &str, v: Option<&Spanned<String>>, default: Duration) -> Duration {
        match v {
            None => default,
            Some(s) => match parse_duration(s.get_ref()) {
                Ok(d) => d,
                Err(e) => {
                    self.err(s, format!("{key}: {e}"));
                    default
                }
            },
        }
    }
    /// A duration that must not be zero: a zero client timeout would close
    /// every connection before its first request.
    pub(crate) fn positive_duration(&mut self, key: &str, v: &Option<Spanned<String>>, default: Duration) -> Duration {
        let d = self.duration(key, v.as_ref(), default);
        match v {
            Some(s) if d.is_zero() => {
                self.err(s, format!("{key} must be greater than zero, found `{}`", s.get_ref()));
                default
            }
            _ => d,
        }
    }
    /// The line `s` starts on.
    pub(crate) fn line<T>(&self, s: &Spanned<T>) -> usize {
        self.loc.line_of(s.span().start)
    }
    /// A context over `source` alone, for the unit tests of one table's
    /// compile step.
    #[cfg(test)]
    pub(crate) fn for_test(file: &'a str, source: &'a str) -> Ctx<'a> {
        Ctx::new(file, source)
    }
    /// The errors so far, one per line.
    #[cfg(test)]
    pub(crate) fn error_text(&self) -> String {
        crate::diag::Diagnostics(self.errors.clone()).to_string()
    }
}
