//! Reading a robots.txt from disk the way a crawler does: RFC 9309
//! section 2.5 lets a parser stop after the first 500 KiB
//! ([`MAX_ROBOTS_TXT`] bytes), so `robots-test` and `import` read no more,
//! whatever the file's size, and never hold more than that in memory.

use std::io::Read as _;
use std::path::Path;

use anyhow::Context;
use crawlgate_policy::MAX_ROBOTS_TXT;

/// The part of a robots.txt file that a crawler parses.
pub struct RobotsFile {
    /// At most [`MAX_ROBOTS_TXT`] bytes: the whole file, or, when it is
    /// longer, its lines up to the last one that ends within the limit (a
    /// line cut by the limit is dropped rather than read as a shorter rule).
    pub bytes: Vec<u8>,
    /// When the file was longer than the limit: what to tell the user.
    pub truncated: Option<String>,
}

/// Reads at most [`MAX_ROBOTS_TXT`] bytes (plus one, to see whether the
/// file goes on) of `path`.
pub fn read(path: &Path) -> anyhow::Result<RobotsFile> {
    let context = || format!("cannot read robots.txt file {}", path.display());
    let file = std::fs::File::open(path).with_context(context)?;
    let size = file.metadata().ok().filter(std::fs::Metadata::is_file).map(|m| m.len());
    let mut bytes = Vec::with_capacity(size.map_or(8192, |s| s.min(MAX_ROBOTS_TXT as u64 + 1) as usize));
    file.take(MAX_ROBOTS_TXT as u64 + 1).read_to_end(&mut bytes).with_context(context)?;
    if bytes.len() <= MAX_ROBOTS_TXT {
        return Ok(RobotsFile { bytes, truncated: None });
    }
    // The byte just past the limit tells whether the last line in it ends
    // there; everything from the last line ending on is dropped.
    let keep = bytes.iter().rposition(|&b| b == b'\n' || b == b'\r').unwrap_or(0);
    bytes.truncate(keep);
    let size = match size {
        Some(s) if s > MAX_ROBOTS_TXT as u64 => format!("is {s} bytes"),
        _ => format!("is over {MAX_ROBOTS_TXT} bytes"),
    };
    let truncated = format!(
        "{} {size}; RFC 9309 parsers stop at {MAX_ROBOTS_TXT} (500 KiB), so only its first {keep} bytes (the lines that end within the limit) are read",
        path.display()
    );
    Ok(RobotsFile { bytes, truncated: Some(truncated) })
}

/// Reads the whole of `path`, as Google's parser does (`robots-test --as
/// google`): no limit; a note when it is over [`MAX_ROBOTS_TXT`], where
/// RFC 9309 parsers may stop.
pub fn read_whole(path: &Path) -> anyhow::Result<RobotsFile> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read robots.txt file {}", path.display()))?;
    let truncated = (bytes.len() > MAX_ROBOTS_TXT).then(|| {
        format!(
            "{} is {} bytes, over the {MAX_ROBOTS_TXT} (500 KiB) RFC 9309 parsers may stop at; Google's parser reads it whole, and so does --as google",
            path.display(),
            bytes.len()
        )
    });
    Ok(RobotsFile { bytes, truncated })
}
