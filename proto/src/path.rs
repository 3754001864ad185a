//! Znode path syntax, with ZooKeeper's rules (`PathUtils.validatePath`).

/// Why a path is not a valid znode path.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("path is empty")]
    Empty,
    #[error("path must start with '/'")]
    NoLeadingSlash,
    #[error("path must not end with '/'")]
    TrailingSlash,
    #[error("path has an empty component ('//')")]
    EmptyComponent,
    #[error("path has a relative component ('.' or '..')")]
    RelativeComponent,
    #[error("path has a forbidden character {0:?}")]
    BadChar(char),
}

/// Checks a path for every op except sequential creates.
pub fn validate(path: &str) -> Result<(), PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if !path.starts_with('/') {
        return Err(PathError::NoLeadingSlash);
    }
    if path == "/" {
        return Ok(());
    }
    if path.ends_with('/') {
        return Err(PathError::TrailingSlash);
    }
    for component in path[1..].split('/') {
        match component {
            "" => return Err(PathError::EmptyComponent),
            "." | ".." => return Err(PathError::RelativeComponent),
            _ => {}
        }
    }
    match path.chars().find(|&c| is_forbidden(c)) {
        Some(c) => Err(PathError::BadChar(c)),
        None => Ok(()),
    }
}

/// Checks the path given to a sequential create: the server appends a suffix, so the path
/// may end in '/' (ZooKeeper validates `path + "1"`).
pub fn validate_sequential_prefix(path: &str) -> Result<(), PathError> {
    validate(&format!("{path}1"))
}

/// The parent of a valid, non-root path.
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// The last component of a valid, non-root path.
pub fn name(path: &str) -> &str {
    match path.rfind('/') {
        Some(i) => &path[i + 1..],
        None => path,
    }
}

/// `parent` + `/` + `name`, without doubling the root's slash.
pub fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// The name a sequential create gets: the requested path plus the parent's counter,
/// zero-padded to 10 digits like ZooKeeper's (`%010d`).
pub fn with_sequence(path: &str, counter: i32) -> String {
    format!("{path}{counter:010}")
}

// ZooKeeper refuses control characters and some Unicode ranges in paths (surrogates cannot
// occur in a Rust string at all).
fn is_forbidden(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{e000}'..='\u{f8ff}' | '\u{fff0}'..='\u{ffff}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_and_rejects_like_zookeeper() {
        for ok in ["/", "/a", "/a/b", "/a-b/c_d.e", "/..a", "/a.", "/ünï"] {
            assert_eq!(validate(ok), Ok(()), "{ok}");
        }
        let cases = [
            ("", PathError::Empty),
            ("a", PathError::NoLeadingSlash),
            ("/a/", PathError::TrailingSlash),
            ("/a//b", PathError::EmptyComponent),
            ("/a/./b", PathError::RelativeComponent),
            ("/a/..", PathError::RelativeComponent),
            ("/a\0b", PathError::BadChar('\0')),
            ("/a\u{7f}", PathError::BadChar('\u{7f}')),
        ];
        for (bad, err) in cases {
            assert_eq!(validate(bad), Err(err), "{bad:?}");
        }
        assert_eq!(validate_sequential_prefix("/a/"), Ok(()));
        assert_eq!(validate_sequential_prefix("/a//"), Err(PathError::EmptyComponent));
    }

    #[test]
    fn splits_paths() {
        assert_eq!(parent("/a"), "/");
        assert_eq!(parent("/a/b/c"), "/a/b");
        assert_eq!(name("/a/b/c"), "c");
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
        assert_eq!(with_sequence("/q/n-", 42), "/q/n-0000000042");
    }
}
