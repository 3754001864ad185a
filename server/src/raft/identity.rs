//! Which member a data directory belongs to: the `member` file, written when the directory
//! is founded and checked at every start. A directory started under another id or ensemble
//! name would vote and log as someone else, and two members sharing one history breaks
//! Raft's safety; such a start is refused with the reason.
//!
//! The file is a checksummed small file ([`super::fsutil`], magic `WARDMEM1`) whose payload
//! is the text `id=<u64>\nensemble=<name>\n`.
//! A single server's directory from before ensembles has no file: it is a single server's
//! (id 1, [`SINGLE`]) and gets the file on its next start.

use super::error::{FileError, OpenError};
use super::types::NodeId;
use std::path::Path;

/// The name a single server's group goes by.
pub(crate) const SINGLE: &str = "ward";

const FILE: &str = "member";
/// The magic is `WARDMEM` and the format version.
const KIND: &[u8; 7] = b"WARDMEM";
const VERSION: u8 = 1;

/// Checks that `dir` belongs to member `id` of ensemble `name`, recording it if the file is
/// missing.
pub(crate) fn check_or_record(dir: &Path, id: NodeId, name: &str, fresh: bool) -> Result<(), OpenError> {
    let path = dir.join(FILE);
    match super::fsutil::read_versioned(&path, KIND, VERSION)? {
        Some((_, bytes)) => {
            let text = String::from_utf8_lossy(&bytes);
            let (found_id, found_name) = parse(&text).ok_or_else(|| FileError::Damaged {
                path: path.clone(),
                offset: 0,
                reason: format!("expected \"id=N\\nensemble=NAME\\n\", found {text:?}"),
            })?;
            if found_id != id || found_name != name {
                return Err(OpenError::Identity(format!(
                    "{} belongs to member {found_id} of ensemble {found_name:?}, not member {id} of {name:?}",
                    dir.display()
                )));
            }
            Ok(())
        }
        None => {
            // A directory with history and no file is a single server's from before.
            if !fresh && (id, name) != (super::types::NODE_ID, SINGLE) {
                return Err(OpenError::Identity(format!(
                    "{} holds a single server's data; start it without --ensemble (members can be \
                     added to a running server with `ward members add`)",
                    dir.display()
                )));
            }
            let text = format!("id={id}\nensemble={name}\n");
            super::fsutil::write_checked(&path, &super::fsutil::magic(KIND, VERSION), text.as_bytes())?;
            Ok(())
        }
    }
}

/// The member and ensemble `dir` belongs to, if its `member` file says.
pub(crate) fn read(dir: &Path) -> Result<Option<(NodeId, String)>, OpenError> {
    let path = dir.join(FILE);
    let Some((_, bytes)) = super::fsutil::read_versioned(&path, KIND, VERSION)? else { return Ok(None) };
    let text = String::from_utf8_lossy(&bytes);
    match parse(&text) {
        Some((id, name)) => Ok(Some((id, name.to_string()))),
        None => Err(FileError::Damaged { path, offset: 0, reason: format!("unreadable: {text:?}") }.into()),
    }
}

fn parse(text: &str) -> Option<(NodeId, &str)> {
    let mut lines = text.lines();
    let id = lines.next()?.strip_prefix("id=")?.parse().ok()?;
    let name = lines.next()?.strip_prefix("ensemble=")?;
    Some((id, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_keeps_its_member() {
        let dir = std::env::temp_dir().join(format!("ward-identity-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        check_or_record(&dir, 2, "prod", true).expect("first start records");
        check_or_record(&dir, 2, "prod", false).expect("same member again");
        assert!(matches!(check_or_record(&dir, 3, "prod", false), Err(OpenError::Identity(_))));
        assert!(matches!(check_or_record(&dir, 2, "test", false), Err(OpenError::Identity(_))));
        std::fs::remove_file(dir.join(FILE)).expect("rm");
        assert!(matches!(check_or_record(&dir, 2, "prod", false), Err(OpenError::Identity(_))), "old single dir");
        check_or_record(&dir, 1, SINGLE, false).expect("an old single server's directory is its own");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
