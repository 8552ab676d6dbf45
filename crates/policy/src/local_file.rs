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
}

impl LocalFile {
    /// Every locally served file.
    pub const ALL: [LocalFile; 2] = [LocalFile::RobotsTxt, LocalFile::AgentsTxt];

    /// The path it is served at.
    pub const fn path(self) -> &'static str {
        match self {
            LocalFile::RobotsTxt => "/robots.txt",
            LocalFile::AgentsTxt => "/agents.txt",
        }
    }

    /// Its name in metrics and logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            LocalFile::RobotsTxt => "robots.txt",
            LocalFile::AgentsTxt => "agents.txt",
        }
    }

    /// The file served at a canonical path and query, if any (a query does
    /// not change the file).
    pub fn at(path_and_query: &str) -> Option<LocalFile> {
        // Compares the start only: splitting at `?` would scan the whole
        // path on every request.
        LocalFile::ALL.into_iter().find(|f| {
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
    }
}
