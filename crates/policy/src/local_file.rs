//! The files the proxy serves itself, known in this one place.

/// A file the proxy answers itself from the compiled policy, never from the
/// origin, so it is served even when the origin is down. This is the one
/// list of locally served paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LocalFile {
    /// `/robots.txt` (RFC 9309).
    RobotsTxt,
    /// `/agents.txt` (the AGENTS.TXT draft).
    AgentsTxt,
    /// `/.well-known/tdmrep.json` (W3C TDM Reservation Protocol).
    TdmRep,
    /// The RSL 1.0 license document, at the policy's `rsl.path`
    /// (`Policy::local_file_path`).
    Rsl,
}

impl LocalFile {
    /// Every locally served file.
    pub const ALL: [LocalFile; 4] = [LocalFile::RobotsTxt, LocalFile::AgentsTxt, LocalFile::TdmRep, LocalFile::Rsl];

    /// The files at a fixed path.
    const FIXED: [LocalFile; 3] = [LocalFile::RobotsTxt, LocalFile::AgentsTxt, LocalFile::TdmRep];

    /// The path it is served at; for [`LocalFile::Rsl`] the default of
    /// `rsl.path` (`Policy::local_file_path` gives the policy's).
    pub const fn path(self) -> &'static str {
        match self {
            LocalFile::RobotsTxt => "/robots.txt",
            LocalFile::AgentsTxt => "/agents.txt",
            LocalFile::TdmRep => "/.well-known/tdmrep.json",
            LocalFile::Rsl => "/license.xml",
        }
    }

    /// Its name in metrics and logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            LocalFile::RobotsTxt => "robots.txt",
            LocalFile::AgentsTxt => "agents.txt",
            LocalFile::TdmRep => "tdmrep.json",
            LocalFile::Rsl => "rsl",
        }
    }

    /// The file served at a fixed canonical path and query, if any (a
    /// query does not change the file); the RSL document's configured path
    /// is `Policy::local_file`'s to find.
    pub fn at(path_and_query: &str) -> Option<LocalFile> {
        // Compares the start only: splitting at `?` would scan the whole
        // path on every request.
        LocalFile::FIXED.into_iter().find(|f| {
            path_and_query.strip_prefix(f.path()).is_some_and(|rest| rest.is_empty() || rest.starts_with('?'))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_files_are_found_by_path() {
        assert_eq!(LocalFile::at("/robots.txt"), Some(LocalFile::RobotsTxt));
        assert_eq!(LocalFile::at("/robots.txt?a"), Some(LocalFile::RobotsTxt));
        assert_eq!(LocalFile::at("/robots.txtx"), None);
        assert_eq!(LocalFile::at("/agents.txt"), Some(LocalFile::AgentsTxt));
        assert_eq!(LocalFile::at("/x/robots.txt"), None);
        assert_eq!(LocalFile::at("/.well-known/tdmrep.json"), Some(LocalFile::TdmRep));
        assert_eq!(LocalFile::at("/license.xml"), None);
    }
}
