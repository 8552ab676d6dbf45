//! crawlgate-html: placeholder (being written).
#![allow(unused, missing_docs, clippy::panic)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)] pub enum Mode { Inject, Audit, Enforce }
#[derive(Clone, Debug)] pub struct Config { pub mode: Mode, pub directives: Vec<(String, Vec<String>)>, pub max_memory: usize }
#[derive(Clone, Debug, PartialEq, Eq)] pub struct Finding { pub kind: FindingKind, pub token: String, pub rule: String }
#[derive(Clone, Copy, Debug, PartialEq, Eq)] pub enum FindingKind { Missing, Conflict, Extra, OutsideHead }
impl FindingKind { pub fn as_str(&self) -> &'static str { unimplemented!("html rewriter") } }
pub struct Rewriter;
impl Rewriter {
    pub fn new(config: &Config, charset: Option<&str>) -> Result<Rewriter, Unsupported> { unimplemented!("html rewriter") }
    pub fn write(&mut self, chunk: &[u8]) -> bytes::Bytes { unimplemented!("html rewriter") }
    pub fn finish(&mut self) -> bytes::Bytes { unimplemented!("html rewriter") }
    pub fn take_findings(&mut self) -> Vec<Finding> { unimplemented!("html rewriter") }
    pub fn bail_reason(&self) -> Option<&str> { unimplemented!("html rewriter") }
}
#[derive(Debug, thiserror::Error)] #[error("unsupported")] pub struct Unsupported;
