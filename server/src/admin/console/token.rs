//! The admin token: the credential the console's actions ask for, sent as
//! `Authorization: Bearer TOKEN`. Off unless the operator configures a token file
//! (`--admin-token-file`); then read once at startup.
//!
//! A file others may read is refused: anyone on the machine could then expire sessions.
//! The comparison takes the same time whatever the bytes, so a client cannot find the token
//! a byte at a time by timing refusals.

use std::fmt;
use std::path::{Path, PathBuf};

/// Tokens shorter than this are refused: a guessable token is no credential.
pub(crate) const MIN_LEN: usize = 16;

/// The configured admin token. Its `Debug` does not show it (configs are logged).
#[derive(Clone)]
pub struct AdminToken(Box<[u8]>);

impl fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AdminToken(..)")
    }
}

/// Why a token file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("admin token file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("admin token file {path} can be read or written by other users (mode {mode:o}): chmod 600 it")]
    OpenToOthers { path: PathBuf, mode: u32 },
    #[error("admin token file {path}: the token must be at least {MIN_LEN} characters on its first line")]
    TooShort { path: PathBuf },
}

/// What an action's credentials came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The admin token was presented.
    Admin,
    /// No credentials, or no token is configured: 401.
    Missing,
    /// Credentials that are not the token: 403.
    Wrong,
}

impl AdminToken {
    /// A token from its text (surrounding white space dropped).
    pub fn new(text: &str) -> Option<AdminToken> {
        let text = text.trim();
        (text.len() >= MIN_LEN).then(|| AdminToken(text.as_bytes().into()))
    }

    /// Reads the token from the first line of `path`, refusing a file other users can read
    /// or write.
    pub fn from_file(path: &Path) -> Result<AdminToken, TokenFileError> {
        let read = |source| TokenFileError::Read { path: path.to_path_buf(), source };
        let meta = std::fs::metadata(path).map_err(read)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o006 != 0 {
                return Err(TokenFileError::OpenToOthers { path: path.to_path_buf(), mode });
            }
        }
        #[cfg(not(unix))]
        let _ = meta;
        let text = std::fs::read_to_string(path).map_err(read)?;
        let first = text.lines().next().unwrap_or_default();
        AdminToken::new(first).ok_or_else(|| TokenFileError::TooShort { path: path.to_path_buf() })
    }

    /// Judges an `Authorization` header against the configured token (`None`: actions are
    /// off, and every request is refused as unauthenticated).
    pub fn judge(configured: Option<&AdminToken>, authorization: Option<&[u8]>) -> Verdict {
        let Some(token) = configured else { return Verdict::Missing };
        let Some(header) = authorization else { return Verdict::Missing };
        let Some(presented) = strip_bearer(header) else { return Verdict::Missing };
        match token.matches(presented) {
            true => Verdict::Admin,
            false => Verdict::Wrong,
        }
    }

    /// Compares in time that depends on the lengths alone.
    fn matches(&self, presented: &[u8]) -> bool {
        if presented.len() != self.0.len() {
            return false;
        }
        presented.iter().zip(self.0.iter()).fold(0u8, |diff, (a, b)| diff | (a ^ b)) == 0
    }
}

/// The credentials of `Bearer CREDENTIALS` (the scheme is case-insensitive, RFC 9110 §11.1).
fn strip_bearer(header: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = header.split_at_checked(7)?;
    scheme.eq_ignore_ascii_case(b"bearer ").then(|| rest.trim_ascii())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_configured_bearer_token_is_admin() {
        let token = AdminToken::new("0123456789abcdef").expect("long enough");
        let judge = |h: Option<&str>| AdminToken::judge(Some(&token), h.map(str::as_bytes));
        assert_eq!(judge(Some("Bearer 0123456789abcdef")), Verdict::Admin);
        assert_eq!(judge(Some("bearer  0123456789abcdef ")), Verdict::Admin);
        assert_eq!(judge(Some("Bearer 0123456789abcdeF")), Verdict::Wrong);
        assert_eq!(judge(Some("Bearer short")), Verdict::Wrong);
        assert_eq!(judge(Some("Basic 0123456789abcdef")), Verdict::Missing);
        assert_eq!(judge(None), Verdict::Missing);
        assert_eq!(AdminToken::judge(None, Some(b"Bearer 0123456789abcdef")), Verdict::Missing);
        assert!(AdminToken::new("too short").is_none());
        assert_eq!(format!("{token:?}"), "AdminToken(..)");
    }

    #[cfg(unix)]
    #[test]
    fn a_file_others_can_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("ward-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("token");
        std::fs::write(&path, "0123456789abcdef0123\n").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let refused = AdminToken::from_file(&path).expect_err("world-readable");
        assert!(matches!(refused, TokenFileError::OpenToOthers { mode: 0o644, .. }), "{refused}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let token = AdminToken::from_file(&path).expect("private file");
        assert_eq!(AdminToken::judge(Some(&token), Some(b"Bearer 0123456789abcdef0123")), Verdict::Admin);
        std::fs::write(&path, "short\n").expect("write");
        assert!(matches!(AdminToken::from_file(&path), Err(TokenFileError::TooShort { .. })));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
