//! A fresh directory under the system temp dir, removed when dropped.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::HarnessError;

/// A directory of its own for one test object (a server's data, a record file). The name
/// holds the process id and a counter, so tests running at once never share one.
#[derive(Debug)]
pub struct TempDir {
    /// `None` once [`keep`](TempDir::keep) has disarmed the removal.
    path: Option<PathBuf>,
}

impl TempDir {
    /// Makes `<temp>/ward-test-WHAT-PID-N`, empty.
    pub fn new(what: &str) -> TempDir {
        TempDir::try_new(what).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Like [`new`](Self::new), `Err` if the directory cannot be made.
    pub fn try_new(what: &str) -> Result<TempDir, HarnessError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("ward-test-{what}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| HarnessError::io(format!("create {}", dir.display()), e))?;
        Ok(TempDir { path: Some(dir) })
    }

    pub fn path(&self) -> &Path {
        self.path.as_deref().unwrap_or(Path::new(""))
    }

    /// Leaves the directory on disk (for inspection after a failure) and returns its path.
    pub fn keep(mut self) -> PathBuf {
        self.path.take().unwrap_or_default()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if let Some(path) = &self.path {
            let _ = std::fs::remove_dir_all(path);
        }
    }
}
