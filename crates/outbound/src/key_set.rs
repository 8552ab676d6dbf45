//! The members of a JWK Set (RFC 7517 section 5) read under a cap, so
//! that a large document costs a bounded number of key parses. What is
//! done with a set over the cap differs on purpose between its readers
//! ([`Overflow`]); which keys are taken from the members, and what names
//! them, is the reader's ([`crate::jwk`]).

/// What a set with more members than its cap gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overflow {
    /// The first members up to the cap are read and the rest ignored: a
    /// license server's JWKS (RSL) stays usable while it grows during a
    /// key rotation.
    Truncate,
    /// The set is refused whole: a Web Bot Auth key directory
    /// (draft-meunier-http-message-signatures-directory) is the client's
    /// choice, and one over the cap is not read at all.
    Refuse,
}

/// Why a set's members cannot be read. The messages continue a sentence
/// that names the document ("the JWKS has no ...").
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeySetError {
    /// There is no `keys` array.
    #[error("has no \"keys\" array")]
    NoKeys,
    /// More members than the cap, with [`Overflow::Refuse`].
    #[error("lists {count} keys, more than {max}")]
    TooMany {
        /// How many it lists.
        count: usize,
        /// The cap.
        max: usize,
    },
}

/// The members read from a set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Members<'a> {
    /// The members read, in order.
    pub read: &'a [serde_json::Value],
    /// How many were left unread ([`Overflow::Truncate`]).
    pub ignored: usize,
}

/// The members of `keys` (a set's `keys` value), at most `max` of them.
pub fn members(keys: Option<&serde_json::Value>, max: usize, overflow: Overflow) -> Result<Members<'_>, KeySetError> {
    let all = keys.and_then(serde_json::Value::as_array).ok_or(KeySetError::NoKeys)?;
    if all.len() <= max {
        return Ok(Members { read: all, ignored: 0 });
    }
    match overflow {
        Overflow::Truncate => Ok(Members { read: &all[..max], ignored: all.len() - max }),
        Overflow::Refuse => Err(KeySetError::TooMany { count: all.len(), max }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_over_its_cap_is_cut_or_refused() {
        let set = serde_json::json!({"keys": [1, 2, 3]});
        let read = |max, o| members(set.get("keys"), max, o).map(|m| (m.read.len(), m.ignored));
        assert_eq!(read(3, Overflow::Refuse), Ok((3, 0)));
        assert_eq!(read(2, Overflow::Truncate), Ok((2, 1)));
        assert_eq!(read(2, Overflow::Refuse), Err(KeySetError::TooMany { count: 3, max: 2 }));
        assert_eq!(
            members(Some(&serde_json::json!({})), 2, Overflow::Refuse).map(|m| m.read.len()),
            Err(KeySetError::NoKeys)
        );
        assert_eq!(KeySetError::TooMany { count: 3, max: 2 }.to_string(), "lists 3 keys, more than 2");
        assert_eq!(
            members(None, 2, Overflow::Truncate).err().map(|e| e.to_string()).as_deref(),
            Some("has no \"keys\" array")
        );
    }
}
